"""BoundOps -> raw samples: one sampler per measurement mode (the debug executor's job, redone).

Each sampler takes a ``Run`` (the executor, the settings, the clock, the pool reset and the
progress callback) and fills the Profile's rows for its mode; ``SAMPLERS`` maps every mode of
modes.py to its sampler. The executor's own cost is measured with the e2e mode: the same run
loop over the same arguments with every kernel replaced by TVM's ``testing.nop``. Raw samples
are kept; the clock is injectable so tests are exact.
Counterpart: ``GraphExecutorDebug`` (src/runtime/graph_executor/debug/, TVM <= 0.19).
"""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..measure.clock import (
    Clock,
    Progress,
    no_progress,
    single_shots,
    sliced,
    stamped_passes,
    time_repeats,
)
from ..measure.counters import current_cpu, delta, task_ids, thread_rusage
from ..measure.inflight import FLIGHT
from ..measure.significance import median_precision
from ..measure.stats import Stats
from ..protocols.graph_era import timed_pass
from ..results.modes import ModeName
from ..results.profile import Profile, Settings
from ..results.timeline import RealPass
from ..runtime.debug import DebugExecutor
from .recorder import PassRecorder
from .steady import nop_call, nop_calls, steady_rounds

# lazy: TVM (~1.2 s to import) is imported where it is called; TVM-free commands load this module


@dataclass(frozen=True)
class Run:
    """What every sampler needs: one profiling run's executor, settings and injections."""

    ex: DebugExecutor
    settings: Settings
    clock: Clock
    reset: Callable[[], None]
    progress: Progress
    profile: Profile


def first_run(ex: DebugExecutor, clock: Clock) -> tuple[list[float], list[dict], RealPass]:
    """Iteration 0: each op timed alone, with fault and context-switch deltas, threads created
    and the CPU around it; and the pass as it happened (op start/end, every thread's CPU time,
    threads followed as TVM's pool appears)."""
    times, counters = [], []
    rec = PassRecorder(ModeName.FIRST_RUN, clock, follow=True)
    for i in range(len(ex.ops)):
        n0 = len(rec.before())
        FLIGHT.op(i)  # recorded before the clock starts (measure/inflight.py)
        u0, t0 = thread_rusage(), clock()
        ex.call_op(i)
        t1, u1 = clock(), thread_rusage()
        n1 = len(rec.after(t0, t1))
        times.append(float(t1 - t0))
        counters.append({**delta((*u0, n0), (*u1, n1)), "cpu": current_cpu()})
    return times, counters, rec.finish()


def one_pass(ex: DebugExecutor, settings: Settings, clock: Clock, reset: Callable[[], None]
             ) -> tuple[list[float], list[float], RealPass]:
    """Pool reset, ``warmups`` full runs (timed, kept apart), then one op-by-op pass, recorded
    with the reset and the warm-ups as they happened."""
    rec = PassRecorder(ModeName.ONE_PASS, clock, follow=False)
    if settings.reset_pool:
        r0 = clock()
        reset()
        rec.span("pool reset", r0, clock())
    warm = []
    for k in range(settings.warmups):
        t0 = clock()
        ex.run()
        t1 = clock()
        rec.span(f"warm-up run {k + 1}", t0, t1)
        warm.append(float(t1 - t0))
    rec.tids = task_ids() | {rec.main_tid}  # the pool's workers exist by now
    return timed_pass(ex, clock, rec), warm, rec.finish()


MIN_WARM_ROUNDS = 3  # every op's samples span the whole warm phase (see stable_rounds)


def warm_batch(ex: DebugExecutor, index: int, settings: Settings, clock: Clock
               ) -> Callable[[], list[float]]:
    """One batch of warm samples of op ``index``: time_evaluator on its kernel (untimed first
    call, ``warm_repeat`` repeats of number x calls until min_repeat_ms), ns per call. A batch
    is taken in slices of about SLICE_S (measure/clock.py ``sliced``): time_evaluator's loop
    runs in C++, where Ctrl-C and SIGTERM are not seen until it returns."""
    op = ex.ops[index]
    if ex.module is None or op.func_name.startswith("__"):
        return lambda: _python_repeat(ex, index, settings.warm_repeat, clock)
    evaluators: dict[int, Callable] = {}  # repeats per call -> its time_evaluator
    per_call = [1]  # learned from the batch before: as many repeats as fit in a slice

    def take(k: int) -> list[float]:
        if k not in evaluators:
            evaluators[k] = ex.module.time_evaluator(
                op.func_name, ex.device, number=1, repeat=k,
                min_repeat_ms=int(settings.warm_min_repeat_ms))
        return [r * 1e9 for r in evaluators[k](*op.args).results]

    def batch() -> list[float]:
        FLIGHT.op(index)  # time_evaluator's loop runs in C++: the op is recorded before it
        samples, per_call[0] = sliced(take, settings.warm_repeat, per_call[0])
        return samples
    return batch


def warm_rounds(ex: DebugExecutor, settings: Settings, clock: Clock,
                progress: Progress = no_progress, out: list[list[float]] | None = None
                ) -> list[list[float]]:
    """Warm samples of every op, taken in rounds (one batch per op per round); ``out`` (the
    profile's row list) is filled as they come, so an interrupt keeps what was measured."""
    batches = [warm_batch(ex, i, settings, clock) for i in range(len(ex.ops))]
    return stable_rounds(batches, settings.warm_precision, settings.warm_budget_ms * 1e6,
                         batch=settings.warm_repeat, progress=progress, out=out)


def stable_rounds(batches: list[Callable[[], list[float]]], precision: float,
                  budget_ns_per_op: float, batch: int = 0, min_rounds: int = MIN_WARM_ROUNDS,
                  wall: Clock = time.monotonic_ns, progress: Progress = no_progress,
                  out: list[list[float]] | None = None) -> list[list[float]]:
    """Rounds over the ops, one batch of every op per round, until every op's median is known
    to ``precision`` (the half-width of its 90% interval as a share of it, counting each
    round's ``batch`` samples as one batch: measure/significance.py) after ``min_rounds``, or
    the budget (per op, summed over the ops, wall time even under an injected clock) is spent.
    Rows are appended to ``out`` as ops get their first batch (an interrupted first round
    leaves the ops measured so far, in order).

    Why rounds, and every op in every round: a slow stretch of the machine (a neighbour, a
    clock or vCPU change) timed op after op lands on a run of consecutive ops, and one that
    comes while a few ops go on alone lands on those ops only; either way a later comparison
    sees those ops changed. With every op in every round it lands on every op alike, as spread
    within each op's samples, which compare sets apart as a shift of the whole run."""
    samples = out if out is not None else []
    start, budget, rounds = wall(), budget_ns_per_op * len(batches), 0
    while True:
        for i, take in enumerate(batches):
            progress(ModeName.WARM, i, len(batches))
            try:
                got = take()
            except KeyboardInterrupt as stop:  # a batch cut short keeps what it took
                if getattr(stop, "samples", None):
                    _keep(samples, i, stop.samples)  # type: ignore[attr-defined]
                raise
            _keep(samples, i, got)
        rounds += 1
        if wall() - start >= budget or rounds >= min_rounds and all(
                median_precision(row, batch) <= precision for row in samples):
            return samples


def _keep(samples: list[list[float]], i: int, got: list[float]) -> None:
    if i == len(samples):
        samples.append([])
    samples[i] += got


def _python_repeat(ex: DebugExecutor, index: int, repeat: int, clock: Clock,
                   before: Callable[[], None] = lambda: None) -> list[float]:
    """Where time_evaluator cannot time an op (``__copy``/``__nop``, old-ABI kernels): its
    bound call timed alone, one clock pair per call (``loop_cost`` measures what that adds)."""
    ex.run_op(index)  # untimed first call, as time_evaluator does (a failure names the op)
    fn, args = ex.ops[index].call
    return single_shots(functools.partial(fn, *args), repeat, clock, before=before)


def loop_cost(ex: DebugExecutor, clock: Clock, repeat: int = 1000) -> dict:
    """How per-op warm and cold times were taken. Without a TVM module (old-ABI kernels),
    time_evaluator cannot call the kernels and ``_python_repeat`` times them; what its loop
    adds to every sample is measured here: the same loop around a no-op kernel (ns/call)."""
    if ex.module is not None:
        return {"method": "time_evaluator"}
    import tvm
    kernel_ops = [op for op in ex.ops if not op.func_name.startswith("__")] or list(ex.ops)
    fn, args = nop_call(kernel_ops[0], tvm.get_global_func("testing.nop"))
    samples = single_shots(functools.partial(fn, *args), repeat, clock)
    return {"method": "python loop", "loop_ns": Stats.of(samples).median_ns,
            "loop_min_ns": min(samples), "reason": "time_evaluator cannot call old-ABI kernels"}


class Flusher:
    """Evicts the caches by writing a buffer larger than the last-level cache."""

    def __init__(self, nbytes: int) -> None:
        self.buf = np.zeros(max(nbytes, 1 << 20) // 8, dtype=np.float64)

    def __call__(self) -> None:
        self.buf += 1.0


def cold_samples(ex: DebugExecutor, index: int, settings: Settings, clock: Clock,
                 flusher: Callable[[], None]) -> list[float]:
    op = ex.ops[index]
    FLIGHT.op(index)
    if settings.flush == "tvm" and ex.module is not None and not op.func_name.startswith("__"):
        te = ex.module.time_evaluator(op.func_name, ex.device, number=1,
                                      repeat=settings.cold_repeat,
                                      f_preproc="cache_flush_cpu_non_first_arg")
        return [r * 1e9 for r in te(*op.args).results]
    return _python_repeat(ex, index, settings.cold_repeat, clock, before=flusher)


def e2e_samples(ex: DebugExecutor, repeat: int, clock: Clock) -> list[float]:
    ex.run_checked()  # untimed first call, op by op: a failing or crashing kernel is named
    return single_shots(ex.run, repeat, clock)


def in_run_passes(ex: DebugExecutor, passes: int, clock: Clock, *,
                  warm: bool = True) -> list[list[float]]:
    """Per op, ``passes`` samples taken inside full steady-state runs: one clock stamp between
    consecutive ops, so each op sees the caches the previous op really left behind.
    ``warm=False`` skips the untimed run for a caller that has just run the model itself."""
    if warm:
        ex.run_checked()  # untimed: whatever ran before left other data in the caches
    # the executor's own call list: the same (fn, args) its run loop uses
    return stamped_passes(ex.calls, passes, clock)


def dispatch_samples(ex: DebugExecutor, clock: Clock, number: int = 50, repeat: int = 7
                     ) -> list[float]:
    """ns per run of the executor's own loop: ``Executor.run``'s loop over the same bound
    arguments, every kernel replaced by TVM's no-op packed function ``testing.nop`` (old-ABI
    kernels: by a native no-op called through the same prebuilt ctypes call)."""
    calls = nop_calls(ex)

    def run() -> None:
        for fn, args in calls:
            fn(*args)
    run()
    return [s * 1e9 for s in time_repeats(run, number, repeat, 0, clock)]


def _per_op(r: Run, mode: str, sample: Callable[[int], list[float]]) -> None:
    rows = r.profile.samples.setdefault(mode, [])
    for i in range(len(r.ex.ops)):
        r.progress(mode, i, len(r.ex.ops))
        rows.append(sample(i))


def sample_first_run(r: Run) -> None:
    r.progress(ModeName.FIRST_RUN, 0, len(r.ex.ops))
    times, r.profile.counters, r.profile.timeline[ModeName.FIRST_RUN] = first_run(r.ex, r.clock)
    r.profile.samples[ModeName.FIRST_RUN] = [[t] for t in times]


def sample_one_pass(r: Run) -> None:
    r.progress(ModeName.ONE_PASS, 0, len(r.ex.ops))
    times, warmups, timeline = one_pass(r.ex, r.settings, r.clock, r.reset)
    r.profile.warmup_ns[ModeName.ONE_PASS], r.profile.timeline[ModeName.ONE_PASS] = \
        warmups, timeline
    r.profile.samples[ModeName.ONE_PASS] = [[t] for t in times]


def sample_warm(r: Run) -> None:
    r.profile.timer = loop_cost(r.ex, r.clock)
    warm_rounds(r.ex, r.settings, r.clock, r.progress,
                out=r.profile.samples.setdefault(ModeName.WARM, []))


def sample_steady(r: Run) -> None:
    """in-run and e2e (with the executor's overhead), interleaved round by round."""
    steady_rounds(r.ex, r.settings, r.profile, r.clock, r.progress)


def sample_cold(r: Run) -> None:
    r.profile.timer = r.profile.timer or loop_cost(r.ex, r.clock)
    flusher = Flusher(r.settings.flush_nbytes or 64 << 20)
    _per_op(r, ModeName.COLD, lambda i: cold_samples(r.ex, i, r.settings, r.clock, flusher))


SAMPLERS: dict[ModeName, Callable[[Run], None]] = {
    ModeName.FIRST_RUN: sample_first_run, ModeName.ONE_PASS: sample_one_pass,
    ModeName.WARM: sample_warm, ModeName.IN_RUN: sample_steady, ModeName.E2E: sample_steady,
    ModeName.COLD: sample_cold}  # steady: run once
