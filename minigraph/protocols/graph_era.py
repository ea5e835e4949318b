"""One model, one set of kernels, every measuring protocol TVM ever shipped, side by side.

TVM's profilers disagree because each measures something different. This module re-runs each
historical protocol on minigraph's bound ops (and, where there is one, on TVM 0.27's own Relax VM
over ``model.vm.so``) and returns per-op and total numbers, so a report can show *why*.

Protocols (TVM sources read: ``src/runtime/graph_executor/debug/graph_executor_debug.cc``,
``python/tvm/contrib/debugger/debug_executor.py``, ``debug_result.py``,
``python/tvm/contrib/graph_executor.py``, ``src/runtime/profiling.cc``,
``src/runtime/relax_vm/vm.cc`` at v0.16.0; ``python/tvm/runtime/vm.py`` and
``src/runtime/vm/vm.cc`` of 0.27):

- ``debug_executor.profile``: ``GraphExecutorDebug::Profile`` -- its ``profiling::Profiler``
  constructor calls ``threading::ResetThreadPool()``; then 3 full ``Run()`` warm-ups, then ONE
  timed pass op by op.
- ``vm_profiler``: ``VirtualMachineProfiler`` "profile" -- Profiler (pool reset), 1 warm-up
  invocation, one timed invocation op by op.
- ``run_individual``: ``GraphExecutorDebug::RunIndividual`` -- one full ``Run()``, then per op
  ``WrapTimeEvaluator`` (untimed first call, ``repeat`` x ``number`` calls, ``number`` grown by
  the golden ratio until ``min_repeat_ms``; no cache flush); per op the mean of the repeats,
  total the sum of those means (``debug_result.py``). Defaults are ``debug_executor.run()``'s:
  number=10, repeat=1, min_repeat_ms=1.
- ``benchmark_e2e``: ``GraphModule.benchmark(end_to_end=True)`` -- inputs re-copied each run;
  repeat=5, number=5, min_repeat_ms=0; total only.
- ``relax_vm_e2e`` / ``relax_vm_instrument``: TVM 0.27's Relax VM (see ``protocols_vm``).

Multi-sample totals are the mean of the samples (what ``BenchmarkResult.mean`` and the old debug
tables reported); the raw samples are kept so a report can use the median instead.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

from .errors import InputError
from .executor import Executor
from .profile import timed_pass

Clock = Callable[[], int]
KEYS = ("debug_executor.profile", "vm_profiler", "run_individual", "benchmark_e2e",
        "relax_vm_e2e", "relax_vm_instrument")
FORMAT = "minigraph-protocols/1"


@dataclass(frozen=True)
class ProtocolResult:
    """One protocol's view of the model. ``per_op_ns`` is aligned with ``Executor.ops`` (None:
    no per-op view, or that op has no counterpart); ``total_ns`` is what the protocol reports as
    the model's time; ``samples_ns`` the raw samples behind it."""

    key: str
    description: str
    per_op_ns: tuple[float | None, ...] | None
    total_ns: float
    samples_ns: tuple[float, ...]
    notes: tuple[str, ...] = ()

    @property
    def skipped(self) -> bool:
        """True if the protocol could not run (no samples; the notes say why)."""
        return not self.samples_ns

    def to_dict(self) -> dict:
        """JSON-ready: tuples become lists, a NaN total (skipped) becomes null."""
        return {**asdict(self), "per_op_ns": None if self.per_op_ns is None
                else list(self.per_op_ns), "samples_ns": list(self.samples_ns),
                "total_ns": self.total_ns if math.isfinite(self.total_ns) else None,
                "notes": list(self.notes)}

    @classmethod
    def from_dict(cls, d: Mapping) -> "ProtocolResult":
        """Inverse of ``to_dict``; InputError on a malformed entry."""
        try:
            per_op, total = d["per_op_ns"], d["total_ns"]
            return cls(str(d["key"]), str(d["description"]),
                       None if per_op is None else tuple(_opt_float(v) for v in per_op),
                       math.nan if total is None else float(total),
                       tuple(float(v) for v in d["samples_ns"]),
                       tuple(str(n) for n in d.get("notes", ())))
        except (KeyError, TypeError, ValueError) as err:
            raise InputError(f"bad protocol result {dict(d).get('key', '?')!r}: {err}") from err


def _opt_float(v) -> float | None:
    return None if v is None else float(v)


@dataclass(frozen=True)
class ProtocolSettings:
    """Knobs, defaulting to the values TVM's own entry points used."""

    profile_warmups: int = 3        # GraphExecutorDebug::Profile
    vm_profiler_warmups: int = 1    # VirtualMachineProfiler "profile"
    ri_number: int = 10             # debug_executor.run() -> run_individual
    ri_repeat: int = 1
    ri_min_repeat_ms: int = 1
    bench_number: int = 5           # GraphModule.benchmark
    bench_repeat: int = 5
    vm_number: int = 5              # vm.time_evaluator on main (same budget as benchmark)
    vm_repeat: int = 5
    vm_warmups: int = 1             # relax_vm_instrument
    vm_passes: int = 3


def to_dict(results: Iterable[ProtocolResult]) -> dict:
    return {"format": FORMAT, "results": [r.to_dict() for r in results]}


def from_dict(d: Mapping) -> tuple[ProtocolResult, ...]:
    if not isinstance(d, Mapping) or d.get("format") != FORMAT:
        raise InputError(f"not a {FORMAT} document")
    return tuple(ProtocolResult.from_dict(r) for r in d.get("results", ()))


def pool_reset(threads: int) -> Callable[[], None]:
    """Default reset: ``runtime.config_threadpool(kBig, threads)``. TVM 0.27 exposes no
    ``ResetThreadPool``; this re-pins the workers and the caller but does not re-create them."""
    def reset() -> None:
        import tvm
        f = tvm.get_global_func("runtime.config_threadpool", allow_missing=True)
        if f is not None:
            f(1, threads)
    return reset


def _one_pass(ex: Executor, key: str, warmups: int, clock: Clock,
              reset: Callable[[], None], what: str) -> ProtocolResult:
    """Pool reset, ``warmups`` untimed full runs, then one op-by-op timed pass."""
    reset()
    for _ in range(warmups):
        ex.run()
    per_op = timed_pass(ex, clock)
    desc = (f"{what}: pool reset, {warmups} warm-up run(s), ONE timed pass op by op "
            "(perf_counter_ns), no flush")
    return ProtocolResult(key, desc, tuple(per_op), sum(per_op), (sum(per_op),))


def debug_profile(ex: Executor, s: ProtocolSettings, clock: Clock,
                  reset: Callable[[], None]) -> ProtocolResult:
    """``debug_executor.profile()`` (GraphExecutorDebug::Profile, TVM <= 0.19)."""
    return _one_pass(ex, KEYS[0], s.profile_warmups, clock, reset, "GraphExecutorDebug::Profile")


def vm_profiler(ex: Executor, s: ProtocolSettings, clock: Clock,
                reset: Callable[[], None]) -> ProtocolResult:
    """The old ``relax.VirtualMachine(..., profile=True).profile()`` protocol, on our ops."""
    return _one_pass(ex, KEYS[1], s.vm_profiler_warmups, clock, reset,
                     "VirtualMachineProfiler::profile")


def _op_repeats(ex: Executor, i: int, s: ProtocolSettings, clock: Clock) -> list[float]:
    """WrapTimeEvaluator on one op: TVM's own time_evaluator for kernels, Python for __ ops."""
    op = ex.ops[i]
    if ex.module is not None and not op.func_name.startswith("__"):
        te = ex.module.time_evaluator(op.func_name, ex.device, number=s.ri_number,
                                      repeat=s.ri_repeat, min_repeat_ms=int(s.ri_min_repeat_ms))
        return [r * 1e9 for r in te(*op.args).results]
    from .timing import time_repeats
    op()
    return [r * 1e9 for r in time_repeats(op, s.ri_number, s.ri_repeat, s.ri_min_repeat_ms,
                                          clock)]


def run_individual(ex: Executor, s: ProtocolSettings, clock: Clock) -> ProtocolResult:
    """``debug_executor.run_individual`` (GraphExecutorDebug::RunIndividual, v0.16)."""
    ex.run()  # RunIndividual's single warm-up Run()
    reps = [_op_repeats(ex, i, s, clock) for i in range(len(ex.ops))]
    per_op = tuple(math.fsum(r) / len(r) for r in reps)
    samples = tuple(math.fsum(r[k] for r in reps) for k in range(s.ri_repeat))
    desc = (f"GraphExecutorDebug::RunIndividual: 1 warm-up run, then per op time_evaluator "
            f"(untimed 1st call, number={s.ri_number} x repeat={s.ri_repeat}, "
            f"min_repeat_ms={s.ri_min_repeat_ms}), no flush; per op mean, total = sum")
    notes = ("per-kernel timing uses TVM's C++ timer (time_evaluator), not the injected clock",)
    return ProtocolResult(KEYS[2], desc, per_op, math.fsum(per_op), samples, notes)


def benchmark_e2e(ex: Executor, s: ProtocolSettings, clock: Clock) -> ProtocolResult:
    """``GraphModule.benchmark(end_to_end=True)`` via ``Executor.benchmark``."""
    secs = ex.benchmark(number=s.bench_number, repeat=s.bench_repeat, min_repeat_ms=0,
                        end_to_end=True, clock=clock)
    samples = tuple(x * 1e9 for x in secs)
    desc = (f"GraphModule.benchmark(end_to_end=True): untimed 1st run, number="
            f"{s.bench_number} x repeat={s.bench_repeat}, inputs re-copied each run; mean")
    notes = ("TVM's run_from_inputs also copied outputs back to host; Executor.benchmark does not",)
    return ProtocolResult(KEYS[3], desc, None, math.fsum(samples) / len(samples), samples, notes)


def measure_protocols(ex: Executor, *, vm_lib: Path | str | None, threads: int,
                      keys: Sequence[str] = KEYS, clock: Clock = time.perf_counter_ns,
                      reset: Callable[[], None] | None = None,
                      settings: ProtocolSettings = ProtocolSettings(),
                      vm_names: Mapping[str, str] | None = None) -> tuple[ProtocolResult, ...]:
    """Runs the requested protocols in ``KEYS`` order on ``ex`` (inputs already set).

    ``reset`` defaults to ``pool_reset(threads)``; ``vm_names`` maps VM kernel names to graph
    func_names (default: ``vm_names`` of build.json beside ``vm_lib``). Relax VM protocols are
    skipped, with a note, when ``vm_lib`` is None or missing."""
    unknown = [k for k in keys if k not in KEYS]
    if unknown:
        raise InputError(f"unknown protocol(s) {unknown}; expected some of {list(KEYS)}")
    reset = reset if reset is not None else pool_reset(threads)
    local = {KEYS[0]: lambda: debug_profile(ex, settings, clock, reset),
             KEYS[1]: lambda: vm_profiler(ex, settings, clock, reset),
             KEYS[2]: lambda: run_individual(ex, settings, clock),
             KEYS[3]: lambda: benchmark_e2e(ex, settings, clock)}
    out = [local[k]() for k in KEYS if k in keys and k in local]
    vm_keys = [k for k in KEYS[4:] if k in keys]
    if vm_keys:
        from .protocols_vm import measure_vm
        out += measure_vm(ex, vm_lib, vm_keys, settings, clock, vm_names)
    return tuple(out)


def _spread(values: Sequence[float | None]) -> float:
    xs = [v for v in values if v is not None and math.isfinite(v)]
    return max(xs) - min(xs) if len(xs) > 1 else 0.0


def _ms(v: float | None) -> str:
    return "-" if v is None or not math.isfinite(v) else f"{v / 1e6:.3f}"


def format_protocols(results: Sequence[ProtocolResult], op_names: Sequence[str],
                     top: int = 10) -> str:
    """Side-by-side table (ms): the ``top`` ops with the largest max-min spread across the
    per-op protocols, then every protocol's total, then each protocol's description and notes."""
    per = [r for r in results if r.per_op_ns is not None]
    rows = sorted(range(len(op_names)), key=lambda i: -_spread([r.per_op_ns[i] for r in per]))
    width = max([len(r.key) for r in results] + [12])
    name_w = min(max([len(n) for n in op_names] + [4]), 48)
    lines = [f"per op (ms), top {min(top, len(rows))} of {len(op_names)} by spread:",
             f"{'#':>4} {'op':<{name_w}} " + " ".join(f"{r.key:>{width}}" for r in per)]
    for i in rows[:top]:
        lines.append(f"{i:>4} {op_names[i][:name_w]:<{name_w}} "
                     + " ".join(f"{_ms(r.per_op_ns[i]):>{width}}" for r in per))
    lines += ["", f"{'protocol':<{width}} {'total ms':>10} {'samples':>7}"]
    lines += [f"{r.key:<{width}} {_ms(r.total_ns):>10} {len(r.samples_ns):>7}" for r in results]
    lines.append("")
    for r in results:
        lines.append(f"{r.key}: {r.description}")
        lines += [f"    note: {n}" for n in r.notes]
    return "\n".join(lines)
