"""A TvmReport becomes a Profile: one op per call, one one-pass sample per op.

TVM's profilers (``GraphExecutorDebug::Profile``, the Relay ``VirtualMachineDebug`` "profile",
the Relax VM profiler) all time ONE pass after warm-up runs, so the samples go under the
``one-pass`` mode. A row that aggregated ``Count`` calls (``AsTable``'s default) becomes Count
ops with Duration / Count each: the sum is kept exact, the split between the calls is not in
the report (each op says ``calls_in_row``). The Total rows, the Sum row, the configuration and
the protocol go to ``Profile.source`` (kind "tvm-report").
"""
from __future__ import annotations

import re

from ...results.modes import ModeName
from ...results.profile import Profile
from ...runtime.opinfo import op_kind
from .rows import ReportRow, TvmReport, consistency_notes

# key -> (what TVM did, warm-up runs before the timed pass)
PROTOCOLS = {
    "debug_executor.profile": ("GraphExecutorDebug::Profile (debug_executor.profile()): thread "
                               "pool reset, 3 warm-up runs, one timed pass op by op", 3),
    "vm_profiler": ("Relay VirtualMachineProfiler.profile(): thread pool reset, 3 warm-up "
                    "runs, one timed pass (allocations and copies timed as VM:: rows)", 3),
    "relax_vm.profile": ("Relax VM profile(): thread pool reset, 1 warm-up run, one timed "
                         "pass (builtins timed as vm.builtin.* rows)", 1),
    "benchmark_e2e": ("GraphModule/VirtualMachine.benchmark(): whole runs, time_evaluator "
                      "(number x repeat)", None),
}
_SHAPE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\[([0-9, ]*)\]")
_MAX_DIM = 2**62


def parse_shapes(text: str) -> list[list] | None:
    """TVM's ``ShapeString``: "float32[1, 3, 224, 224], float32[64, 3, 7, 7]" -> [[dtype,
    dims], ...]; None when the text is not in that form."""
    if not text:
        return []
    out, at = [], 0
    for m in _SHAPE.finditer(text):
        if text[at:m.start()].strip(", ") or m.start() < at:
            return None
        parts = [d.strip() for d in m.group(2).split(",")] if m.group(2).strip() else []
        if not all(re.fullmatch(r"[0-9]+", d) for d in parts):
            return None   # "1, 2 3" or "1,,2": not what ShapeString prints
        dims = [int(d) for d in parts]
        if any(d > _MAX_DIM for d in dims):
            return None
        out.append([m.group(1), dims])
        at = m.end()
    return out if out and not text[at:].strip() else None


def _hashed(names: list[str]) -> tuple[str, str] | None:
    """A Hash column without a Configuration block (TVM 0.8.x), told apart by the kernels'
    names, as each profiler's lowering named them (TVM v0.8-v0.12 sources): relay.build's
    graph executor prefixes its module name (``tvmgen_default_``, since #8014, in v0.8.0);
    the Relay VM lowered with no prefix in v0.8 (``fused_*``) and with ``vm_mod_`` from v0.9
    (#9483). None: the names decide nothing (e.g. renamed or stripped)."""
    kernels = [n for n in names if not n.startswith(("VM::", "vm.builtin."))]
    if kernels and all(n.startswith("tvmgen_") for n in kernels):
        return "debug_executor.profile", "a Hash column and tvmgen_* kernel names (relay.build)"
    if kernels and all(n.startswith("vm_mod_") for n in kernels):
        return "vm_profiler", "a Hash column and vm_mod_* kernel names (Relay VM, TVM 0.9+)"
    if kernels and all(n.startswith("fused_") for n in kernels):
        return "vm_profiler", ("a Hash column and fused_* kernel names without the "
                               "tvmgen_default_ prefix relay.build gives (Relay VM, TVM 0.8)")
    return None


def protocol(report: TvmReport) -> dict:
    """Which profiler printed the report: the Configuration block's "Executor" (0.9+), else
    what only one executor prints (VM:: rows, vm.builtin.* rows), else unknown."""
    names = [r.name for r in report.calls]
    executor = str(report.configuration.get("Executor", ""))
    relay_vm = any(n.startswith("VM::") for n in names)
    relax_vm = any(n.startswith("vm.builtin.") for n in names)
    if report.format == "benchmark":
        key, why = "benchmark_e2e", "a BenchmarkResult"
    elif executor == "Graph":
        key, why = "debug_executor.profile", "Configuration: 'Executor: Graph'"
    elif relay_vm or (executor == "VM" and any(r.hash for r in report.calls)):
        key, why = "vm_profiler", ("VM:: rows" if relay_vm else "'Executor: VM' and a Hash "
                                                                "column (Relay)")
    elif relax_vm:
        key, why = "relax_vm.profile", "vm.builtin.* rows"
    elif executor == "VM":
        key, why = "vm_profiler", "'Executor: VM' (Relay or Relax: not told apart)"
    elif any(r.hash for r in report.calls) and _hashed(names) is not None:
        key, why = _hashed(names)  # type: ignore[misc]
    else:
        return {"key": "unknown", "executor": executor, "evidence": "nothing in the report "
                "names its profiler", "description": "unknown profiler", "warmups": None}
    what, warmups = PROTOCOLS[key]
    return {"key": key, "executor": executor, "evidence": why, "description": what,
            "warmups": warmups}


def _kind(name: str) -> str:
    if name.startswith("VM::"):
        return "vm-instruction"
    if name.startswith("vm.builtin."):
        return "vm-builtin"
    return op_kind(name)


def _ops(calls: tuple[ReportRow, ...]) -> tuple[list[dict], list[list[float]]]:
    ops: list[dict] = []
    samples: list[list[float]] = []
    for row_index, row in enumerate(calls):
        n = row.count or 1
        shapes = parse_shapes(row.shapes)
        for _ in range(n):
            op = {"index": len(ops), "name": row.name, "func_name": row.name,
                  "kind": _kind(row.name), "hash": row.hash, "shapes": shapes or [],
                  "layouts": dict(row.layouts), "device": row.device, "row": row_index,
                  "calls_in_row": n}
            if shapes is None:
                op["shapes_text"] = row.shapes
            ops.append(op)
            samples.append([1e3 * (row.duration_us or 0.0) / n])
    return ops, samples


def _order(report: TvmReport) -> str:
    if report.format != "table":
        return "calls"   # CSV and JSON keep the calls in the order they ran
    d = [r.duration_us or 0.0 for r in report.calls]
    if any(r.count and r.count > 1 for r in report.calls) or \
            (len(d) > 2 and all(a >= b for a, b in zip(d, d[1:]))):
        return "duration"
    return "unknown"


def to_profile(report: TvmReport, file: str) -> Profile:
    """The report as a Profile whose ``source`` says what it was and what it could not say."""
    ops, samples = _ops(report.calls)
    proto = protocol(report)
    bench = report.benchmark or {}
    source = {
        "kind": "tvm-report", "format": report.format, "file": file, "protocol": proto,
        "columns": list(report.columns), "rows": [r.to_dict() for r in report.calls],
        "sum": report.sum.to_dict() if report.sum else None,
        "totals": {t.device or f"device{i}": t.to_dict() for i, t in enumerate(report.totals)},
        "total_derived": report.total_derived, "configuration": dict(report.configuration),
        "numbers": dict(report.numbers), "order": _order(report),
        "aggregated": any((r.count or 1) > 1 for r in report.calls),
        "benchmark": {k: v for k, v in bench.items() if k != "results_s"} or None,
        "notes": list(report.notes) + consistency_notes(report)}
    settings = {"modes": [ModeName.ONE_PASS] if ops else [ModeName.E2E],
                "warmups": proto["warmups"], "warm_repeat": None, "warm_budget_ms": None}
    return Profile(ops=ops, settings=settings,
                   samples={ModeName.ONE_PASS: samples} if ops else {},
                   e2e_ns=[1e9 * s for s in bench.get("results_s", [])], source=source)
