"""TVM's graph-era measuring protocols, re-run on minigraph's bound ops.

TVM sources read: ``src/runtime/graph_executor/debug/graph_executor_debug.cc``,
``python/tvm/contrib/debugger/debug_executor.py``, ``debug_result.py``,
``python/tvm/contrib/graph_executor.py``, ``src/runtime/profiling.cc`` at v0.16.0.

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
- ``benchmark_e2e``: ``GraphModule.benchmark(end_to_end=True)`` -- ``run_from_inputs``: the
  inputs copied in and the outputs copied out each run; repeat=5, number=5, min_repeat_ms=0;
  total only.
"""
from __future__ import annotations

import gc
import math
from dataclasses import replace
from typing import Callable, Protocol, Sequence

from ..measure.clock import Clock, time_repeats
from ..measure.inflight import FLIGHT
from ..results.protocols import KEYS, NO_PARAMS, ProtocolResult
from ..runtime.benchmark import benchmark
from ..runtime.debug import DebugExecutor
from ..threadpool.config import pool_reset
from ..values.check import count_values
from .settings import ProtocolSettings

__all__ = ["pool_reset", "debug_profile", "vm_profiler", "run_individual", "benchmark_e2e"]


class OpObserver(Protocol):
    """What watches a timed pass: called right before an op's first clock reading, and with
    the two readings that timed it (profile/recorder.py ``PassRecorder``)."""

    def before(self) -> object: ...

    def after(self, t0: int, t1: int) -> object: ...


def timed_pass(ex: DebugExecutor, clock: Clock, rec: OpObserver | None = None) -> list[float]:
    """One pass op by op, each op timed alone: the loop of ``GraphExecutorDebug::RunOpHost``
    over every op, as ``debug_executor.profile()`` timed it; ``rec`` sees each op's readings
    (the profiler's one-pass mode records a RealPass with it)."""
    out = []
    for i in range(len(ex.ops)):
        if rec is not None:
            rec.before()
        FLIGHT.op(i)  # recorded before the clock starts (measure/inflight.py)
        t0 = clock()
        ex.call_op(i)
        t1 = clock()
        if rec is not None:
            rec.after(t0, t1)
        out.append(float(t1 - t0))
    return out


def _one_pass(ex: DebugExecutor, key: str, warmups: int, clock: Clock,
              reset: Callable[[], None], what: str) -> ProtocolResult:
    """Pool reset, ``warmups`` untimed full runs, then one op-by-op timed pass."""
    reset()
    for _ in range(warmups):
        ex.run()
    per_op = timed_pass(ex, clock)
    desc = (f"{what}: pool reset, {warmups} warm-up run(s), ONE timed pass op by op "
            "(perf_counter_ns), no flush")
    return ProtocolResult(key, desc, tuple(per_op), sum(per_op), (sum(per_op),))


def debug_profile(ex: DebugExecutor, s: ProtocolSettings, clock: Clock,
                  reset: Callable[[], None]) -> ProtocolResult:
    """``debug_executor.profile()`` (GraphExecutorDebug::Profile, TVM <= 0.19)."""
    return _one_pass(ex, KEYS[0], s.profile_warmups, clock, reset, "GraphExecutorDebug::Profile")


def vm_profiler(ex: DebugExecutor, s: ProtocolSettings, clock: Clock,
                reset: Callable[[], None]) -> ProtocolResult:
    """The old ``relax.VirtualMachine(..., profile=True).profile()`` protocol, on our ops."""
    return _one_pass(ex, KEYS[1], s.vm_profiler_warmups, clock, reset,
                     "VirtualMachineProfiler::profile")


def _op_repeats(ex: DebugExecutor, i: int, s: ProtocolSettings, clock: Clock) -> list[float]:
    """WrapTimeEvaluator on one op: TVM's own time_evaluator for kernels, Python for __ ops."""
    op = ex.ops[i]
    if ex.module is not None and not op.func_name.startswith("__"):
        te = ex.module.time_evaluator(op.func_name, ex.device, number=s.ri_number,
                                      repeat=s.ri_repeat, min_repeat_ms=int(s.ri_min_repeat_ms))
        return [r * 1e9 for r in te(*op.args).results]
    op()
    return [r * 1e9 for r in time_repeats(op, s.ri_number, s.ri_repeat, s.ri_min_repeat_ms,
                                          clock)]


def run_individual(ex: DebugExecutor, s: ProtocolSettings, clock: Clock) -> ProtocolResult:
    """``debug_executor.run_individual`` (GraphExecutorDebug::RunIndividual, v0.16)."""
    ex.run()  # RunIndividual's single warm-up Run()
    reps = [_op_repeats(ex, i, s, clock) for i in range(len(ex.ops))]
    per_op = tuple(math.fsum(r) / len(r) for r in reps)
    samples = tuple(math.fsum(r[k] for r in reps) for k in range(s.ri_repeat))
    desc = (f"GraphExecutorDebug::RunIndividual: 1 warm-up run, then per op time_evaluator "
            f"(untimed 1st call, number={s.ri_number} x repeat={s.ri_repeat}, "
            f"min_repeat_ms={s.ri_min_repeat_ms}), no flush; per op mean, total = sum")
    notes = ("per-kernel timing uses TVM's C++ timer (time_evaluator), not the injected clock",
             ) if ex.module is not None else (
        "no TVM module (old-ABI kernels): time_evaluator's protocol run in Python, with the "
        "injected clock",)
    return ProtocolResult(KEYS[2], desc, per_op, math.fsum(per_op), samples, notes)


def benchmark_e2e(ex: DebugExecutor, s: ProtocolSettings, clock: Clock) -> ProtocolResult:
    """``GraphModule.benchmark(dev, end_to_end=True, **inputs)``: the model's inputs (not its
    params, which a user never passes) copied in and the outputs copied out on every run."""
    inputs = {name: ex.get_input(name).numpy() for name in ex.input_names()
              if name not in ex.bound_params}
    res = benchmark(ex, repeat=s.bench_repeat, number=s.bench_number, min_repeat_ms=0,
                    end_to_end=True, inputs=inputs, clock=clock)
    samples = tuple(x * 1e9 for x in res.results)
    desc = (f"GraphModule.benchmark(end_to_end=True): untimed 1st run, number="
            f"{s.bench_number} x repeat={s.bench_repeat}, inputs ({len(inputs)}) copied in and "
            "outputs copied out each run (run_from_inputs); mean")
    return ProtocolResult(KEYS[3], desc, None, math.fsum(samples) / len(samples), samples)


def debug_profile_no_params(ex: DebugExecutor, s: ProtocolSettings, clock: Clock,
                            reset: Callable[[], None], weights: Sequence[str]) -> ProtocolResult:
    """The seed thread's own protocol: ``debug_executor.create(graph_json, lib, dev)``, the
    input set, ``profile()``, and ``load_params`` never called (``-link-params=0``: the weights
    were not in the library either), so the weights are whatever the allocator left. As the
    thread's process did, the params are read and dropped first (``relay.build`` returned
    them); then the same pool reset, 3 warm-ups and one pass as ``debug_executor.profile``."""
    dropped = [ex.get_input(n).numpy() for n in weights]  # read, then let go of, as relay.build
    del dropped
    gc.collect()
    unset = DebugExecutor(ex.graph, {op.func_name: op.fn for op in ex.ops}, ex.device, ex.module,
                     force=True, plan=ex.plan)
    unset.set_input(**{n: ex.get_input(n).numpy() for n in ex.input_names() if n not in weights})
    counts = [count_values(unset.get_input(n).numpy()) for n in weights]
    n = sum(c.n for c in counts) or 1
    res = _one_pass(unset, NO_PARAMS, s.profile_warmups, clock, reset,
                    "debug_executor.create without load_params (the weights never set)")
    note = (f"its {len(weights)} weights as the allocator left them: "
            f"{100 * sum(c.subnormal for c in counts) / n:.3g}% of the values subnormal, "
            f"{100 * sum(c.zero for c in counts) / n:.3g}% zero, "
            f"{sum(c.nan + c.inf for c in counts)} NaN or Inf")
    return replace(res, notes=res.notes + (note,))
