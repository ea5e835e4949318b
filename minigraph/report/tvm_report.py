"""``minigraph show REPORT``: an imported TVM profiler report, as minigraph reads it.

The per-op table is minigraph's own (report/table.py) over the imported one-pass samples; around
it: what the report is (form, profiler, the evidence for it, the locale's numbers), how its
calls were counted (aggregated rows: Count > 1), the Sum against the Total (the time outside
the timed calls), TVM's Configuration block and whatever did not add up.
"""
from __future__ import annotations

from ..results.profile import Profile
from .table import breakdown, table
from .units import us

FORMS = {"table": "text table (print(report) / Report.table())", "csv": "Report.csv()",
         "json": "Report.json()", "benchmark": "BenchmarkResult"}


def _numbers(numbers: dict) -> str:
    group, decimal = numbers.get("group"), numbers.get("decimal")
    grouping = numbers.get("grouping") or []
    if not group:
        return f"numbers: decimal point '{decimal or '.'}', no digit grouping seen"
    sizes = f"groups of {grouping[0]}" + (f" then {grouping[1]}" if len(grouping) > 1 and
                                          grouping[1] and grouping[1] != grouping[0] else "")
    return f"numbers: digits grouped by {group!r} ({sizes}), decimal point {decimal!r}"


def _calls(profile: Profile) -> str:
    src = profile.source
    rows = src.get("rows", [])
    aggregated = sum(1 for r in rows if (r.get("count") or 1) > 1)
    executor = sum(1 for op in profile.ops if op["kind"] in ("vm-instruction", "vm-builtin"))
    line = f"calls: {len(profile.ops)} in {len(rows)} rows"
    if aggregated:
        line += (f" ({aggregated} rows aggregate calls: Count > 1, one op per call here with "
                 "the row's mean)")
    if executor:
        line += f"; {executor} are executor instructions (VM::*, vm.builtin.*), not kernels"
    order = {"calls": "rows in call order", "duration": "rows sorted by duration (TVM's "
             "default): the execution order is not in the report"}.get(src.get("order"), "")
    return line + (f"; {order}" if order else "")


def _sum_total(src: dict) -> list[str]:
    sum_row = src.get("sum") or {}
    rows_us = sum(r.get("duration_us") or 0.0 for r in src.get("rows", []))
    total = [(d, t.get("duration_us")) for d, t in src.get("totals", {}).items()]
    lines = ["Sum vs Total:"]
    s = sum_row.get("duration_us")
    s = rows_us if s is None else s
    lines.append(f"  Sum of the calls: {us(s * 1e3)} us" +
                 (f" ({sum_row['percent']:.2f}% of the Total)" if sum_row.get("percent")
                  is not None else "") + ("" if sum_row else " (no Sum row: added up here)"))
    for device, t in total:
        if isinstance(t, (int, float)) and t > 0:
            how = " (recomputed from Percent)" if src.get("total_derived") else ""
            lines.append(f"  Total ({device}){how}: {us(t * 1e3)} us: {us((t - s) * 1e3)} us "
                         f"({100 * (t - s) / t:.1f}%) outside the timed calls (the executor's "
                         "own work between calls and the profiler's)")
    if not total:
        lines.append("  no Total row: the time outside the calls is unknown")
    return lines


def _benchmark(profile: Profile) -> str:
    b = profile.source.get("benchmark") or {}
    stats = ", ".join(f"{k.removesuffix('_ms')} {v:,.4f} ms" for k, v in b.items()
                      if isinstance(v, (int, float)))
    raw = f"; {len(profile.e2e_ns)} raw repeats kept" if profile.e2e_ns else ""
    return f"whole-model time: {stats}{raw}"


def _beside(profile: Profile) -> str:
    """The profiled pass against a BenchmarkResult printed in the same file."""
    src = profile.source
    line = "Benchmark in the same file: " + _benchmark(profile)
    median = (src.get("benchmark") or {}).get("median_ms")
    totals = [t.get("duration_us") for t in src.get("totals", {}).values()]
    total = max((t for t in totals if isinstance(t, (int, float))), default=None)
    if total and isinstance(median, (int, float)) and median > 0:
        line += (f"\n  the profiled pass's Total ({total / 1e3:,.2f} ms) is "
                 f"{total / 1e3 / median:.2f}x the benchmark's median ({median:,.2f} ms): "
                 "one run after warm-ups with a timer around every call, against many plain runs")
    return line


def render_report(profile: Profile, order: str = "exec", aggregate: bool = False,
                  width: int | None = None, wide: bool = False) -> str:
    """``minigraph show REPORT``: what the report is, then the per-op table of its rows."""
    src = profile.source
    proto = src.get("protocol", {})
    head = [f"TVM profiler report: {src.get('file', '?')} ({FORMS.get(src.get('format'), '?')})",
            f"profiler: {proto.get('key', 'unknown')}: {proto.get('description', '')} "
            f"[from {proto.get('evidence', '?')}]"]
    if src.get("format") == "table":
        head.append(_numbers(src.get("numbers", {})))
    parts = []
    if src.get("format") == "benchmark":
        head.append(_benchmark(profile))
    else:
        head.append(_calls(profile))
        parts += [table(profile, order, aggregate or bool(src.get("aggregated")), width, wide),
                  breakdown(profile), "\n".join(_sum_total(src))]
    if src.get("format") != "benchmark" and src.get("benchmark"):
        parts.append(_beside(profile))
    config = src.get("configuration", {})
    if config:
        parts.append("Configuration (TVM's):\n" + "\n".join(f"  {k}: {v}"
                                                         for k, v in config.items()))
    notes = src.get("notes", [])
    if notes:
        parts.append("Notes:\n" + "\n".join(f"  {n}" for n in notes))
    return "\n\n".join(["\n".join(head), *parts])
