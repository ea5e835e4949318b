"""BoundOps -> raw samples per measurement mode -> Profile (the debug executor's job, redone).

Modes (definitions in DESIGN.md): first-run (iteration 0 of this process, op by op, with page
faults / context switches / CPU id around each op), one-pass (pool reset + warm-up runs + one
timed pass: the old ``debug_executor.profile()`` protocol), warm (``time_evaluator`` per op),
in-run (each op timed inside repeated steady-state full runs, so its caches hold what a real
run leaves there), cold (caches flushed before every timed call) and e2e (whole ``run()``).
The executor's own cost is measured apart: the same run loop over the same arguments with
every kernel replaced by TVM's ``testing.nop``. Raw samples are kept; the clock is injectable
so tests are exact.
"""
from __future__ import annotations

import functools
import math
import os
import resource
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from . import contention
from .executor import Executor
from .opinfo import describe_ops
from .threads import current_cpu
from .timing import Stats

MODES = ("first-run", "one-pass", "warm", "in-run", "cold", "e2e")
Clock = Callable[[], int]


@dataclass(frozen=True)
class Settings:
    modes: tuple[str, ...] = MODES
    warmups: int = 3            # one-pass warm-up runs (the old VM profiler used 1)
    warm_repeat: int = 7        # time_evaluator repeats per batch
    warm_min_repeat_ms: int = 2  # time_evaluator raises `number` until a repeat lasts this long
    warm_target_cv: float = 0.02  # more batches of repeats until an op's CV is at most this ...
    warm_budget_ms: int = 200   # ... or this much wall time went into the op
    inrun_passes: int = 10     # steady-state op-by-op passes of the in-run mode
    cold_repeat: int = 5
    flush: str = "llc"          # "llc": overwrite 2x LLC bytes; "tvm": cache_flush_cpu_non_first_arg
    flush_nbytes: int = 64 << 20
    e2e_repeat: int = 20
    reset_pool: bool = True


@dataclass
class Profile:
    """Everything measured: per mode, per op, raw samples in ns (warm-ups kept apart)."""

    ops: list[dict]
    settings: dict
    samples: dict[str, list[list[float]]] = field(default_factory=dict)   # mode -> op -> ns
    counters: list[dict] = field(default_factory=list)                    # first-run, per op
    e2e_ns: list[float] = field(default_factory=list)
    dispatch_ns: list[float] = field(default_factory=list)   # run loop with testing.nop kernels
    warmup_ns: dict[str, list[float]] = field(default_factory=dict)
    env: dict = field(default_factory=dict)
    threads: dict = field(default_factory=dict)
    contention: dict = field(default_factory=dict)  # Contention over measure(), if readable
    partial: bool = False

    def stats(self, mode: str) -> list[Stats]:
        return [Stats.of(s) for s in self.samples.get(mode, [])]

    def to_dict(self) -> dict:
        return {"format": "minigraph-profile/1", "partial": self.partial, "ops": self.ops,
                "settings": self.settings, "env": self.env, "threads": self.threads,
                "samples_ns": self.samples, "first_run_counters": self.counters,
                "e2e_ns": self.e2e_ns, "dispatch_ns": self.dispatch_ns,
                "warmup_ns": self.warmup_ns, "contention": self.contention}


def _usage() -> tuple[int, int, int, int, int]:
    """This thread's faults and context switches, and the process's thread count (a change
    across an op means it created TVM's pool)."""
    r = resource.getrusage(getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF))
    return r.ru_minflt, r.ru_majflt, r.ru_nvcsw, r.ru_nivcsw, _thread_count()


def _thread_count() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return -1


def first_run(ex: Executor, clock: Clock) -> tuple[list[float], list[dict]]:
    """Iteration 0: each op timed alone, with fault and context-switch deltas and the CPU."""
    times, counters = [], []
    for i in range(len(ex.ops)):
        u0, t0 = _usage(), clock()
        ex.run_op(i)
        t1, u1 = clock(), _usage()
        times.append(float(t1 - t0))
        d = [b - a for a, b in zip(u0, u1)]
        counters.append({"minflt": d[0], "majflt": d[1], "nvcsw": d[2], "nivcsw": d[3],
                         "threads_created": d[4],
                         "cpu": current_cpu()})
    return times, counters


def timed_pass(ex: Executor, clock: Clock) -> list[float]:
    out = []
    for i in range(len(ex.ops)):
        t0 = clock()
        ex.run_op(i)
        out.append(float(clock() - t0))
    return out


def one_pass(ex: Executor, settings: Settings, clock: Clock, reset: Callable[[], None]
             ) -> tuple[list[float], list[float]]:
    """Pool reset, ``warmups`` full runs (timed, kept apart), then one op-by-op pass."""
    if settings.reset_pool:
        reset()
    warm = []
    for _ in range(settings.warmups):
        t0 = clock()
        ex.run()
        warm.append(float(clock() - t0))
    return timed_pass(ex, clock), warm


def warm_samples(ex: Executor, index: int, settings: Settings, clock: Clock) -> list[float]:
    """time_evaluator on the kernel (untimed first call, number x repeat, min_repeat_ms), in
    batches of ``warm_repeat`` until the samples' CV is within target or the budget is spent."""
    op = ex.ops[index]
    if ex.module is None or op.func_name.startswith("__"):
        batch = lambda: _python_repeat(ex, index, settings.warm_repeat, clock)  # noqa: E731
    else:
        te = ex.module.time_evaluator(op.func_name, ex.device, number=1,
                                      repeat=settings.warm_repeat,
                                      min_repeat_ms=int(settings.warm_min_repeat_ms))
        batch = lambda: [r * 1e9 for r in te(*op.args).results]  # noqa: E731
    return until_stable(batch, settings.warm_target_cv, settings.warm_budget_ms * 1e6)


def until_stable(batch: Callable[[], list[float]], target_cv: float, budget_ns: float,
                 wall: Clock = time.monotonic_ns) -> list[float]:
    """Repeats ``batch`` until the pooled samples' CV <= target_cv or budget_ns of wall time
    has elapsed (the budget is wall time even when the samples come from an injected clock)."""
    start = wall()
    samples = batch()
    while Stats.of(samples).cv > target_cv and wall() - start < budget_ns:
        samples += batch()
    return samples


def _single_shots(call: Callable[[], object], repeat: int, clock: Clock,
                  before: Callable[[], None] = lambda: None) -> list[float]:
    """``repeat`` calls each timed alone (ns); ``before`` runs untimed ahead of each one."""
    out = []
    for _ in range(repeat):
        before()
        t0 = clock()
        call()
        out.append(float(clock() - t0))
    return out


def _python_repeat(ex: Executor, index: int, repeat: int, clock: Clock) -> list[float]:
    ex.run_op(index)  # untimed first call, as time_evaluator does
    return _single_shots(functools.partial(ex.run_op, index), repeat, clock)


class Flusher:
    """Evicts the caches by writing a buffer larger than the last-level cache."""

    def __init__(self, nbytes: int) -> None:
        self.buf = np.zeros(max(nbytes, 1 << 20) // 8, dtype=np.float64)

    def __call__(self) -> None:
        self.buf += 1.0


def cold_samples(ex: Executor, index: int, settings: Settings, clock: Clock,
                 flusher: Callable[[], None]) -> list[float]:
    op = ex.ops[index]
    if settings.flush == "tvm" and ex.module is not None and not op.func_name.startswith("__"):
        te = ex.module.time_evaluator(op.func_name, ex.device, number=1,
                                      repeat=settings.cold_repeat,
                                      f_preproc="cache_flush_cpu_non_first_arg")
        return [r * 1e9 for r in te(*op.args).results]
    return _single_shots(functools.partial(ex.run_op, index), settings.cold_repeat, clock,
                         before=flusher)


def e2e_samples(ex: Executor, repeat: int, clock: Clock) -> list[float]:
    ex.run()  # untimed first call
    return _single_shots(ex.run, repeat, clock)


def in_run_passes(ex: Executor, passes: int, clock: Clock, *,
                  warm: bool = True) -> list[list[float]]:
    """Per op, ``passes`` samples taken inside full steady-state runs: one clock stamp between
    consecutive ops, so each op sees the caches the previous op really left behind.
    ``warm=False`` skips the untimed run for a caller that has just run the model itself."""
    if warm:
        ex.run()  # untimed: whatever ran before left other data in the caches
    calls = ex._calls  # the executor's own call list: the same (fn, args) its run loop uses
    per_op: list[list[float]] = [[] for _ in calls]
    for _ in range(passes):
        stamps = [clock()]
        for fn, args in calls:
            fn(*args)
            stamps.append(clock())
        for i, samples in enumerate(per_op):
            samples.append(float(stamps[i + 1] - stamps[i]))
    return per_op


def dispatch_samples(ex: Executor, clock: Clock, number: int = 50, repeat: int = 7
                     ) -> list[float]:
    """ns per run of the executor's own loop: ``Executor.run``'s loop over the same bound
    arguments, every kernel replaced by TVM's no-op packed function ``testing.nop``."""
    import tvm
    from .timing import time_repeats
    nop = tvm.get_global_func("testing.nop")
    calls = tuple((nop, op.args) for op in ex.ops)

    def run() -> None:
        for fn, args in calls:
            fn(*args)
    run()
    return [s * 1e9 for s in time_repeats(run, number, repeat, 0, clock)]


def executor_overhead_ns(profile: Profile) -> float | None:
    """The run loop's own cost, measured with no-op kernels (median ns per run)."""
    return Stats.of(profile.dispatch_ns).median_ns if profile.dispatch_ns else None


def sum_gap_ns(profile: Profile, mode: str) -> float | None:
    """e2e - (sum of ``mode``'s per-op medians + executor overhead): what the per-op view of
    ``mode`` misses in a real run (for warm: the cache state of ops timed alone)."""
    over = executor_overhead_ns(profile)
    if not profile.e2e_ns or not profile.samples.get(mode) or over is None:
        return None
    per_op = sum(s.median_ns for s in profile.stats(mode))
    return Stats.of(profile.e2e_ns).median_ns - per_op - over


Progress = Callable[[str, int, int], None]  # (mode, op index, op count)


def _per_op(profile: Profile, mode: str, ex: Executor, sample: Callable[[int], list[float]],
            progress: Progress) -> None:
    rows = profile.samples.setdefault(mode, [])
    for i in range(len(ex.ops)):
        progress(mode, i, len(ex.ops))
        rows.append(sample(i))


def measure(ex: Executor, settings: Settings, *, clock: Clock = time.perf_counter_ns,
            reset: Callable[[], None] = lambda: None,
            progress: Progress = lambda mode, i, n: None) -> Profile:
    """Runs every requested mode in the order that keeps first-run honest (it must be first).

    Ctrl-C stops between samples; what was measured so far is returned, marked partial.
    """
    prof = Profile(describe_ops(ex), {**settings.__dict__, "modes": list(settings.modes)})
    with contention.recorded(prof.contention):
        try:
            if "first-run" in settings.modes:
                progress("first-run", 0, len(ex.ops))
                times, prof.counters = first_run(ex, clock)
                prof.samples["first-run"] = [[t] for t in times]
            if "one-pass" in settings.modes:
                progress("one-pass", 0, len(ex.ops))
                times, prof.warmup_ns["one-pass"] = one_pass(ex, settings, clock, reset)
                prof.samples["one-pass"] = [[t] for t in times]
            if "warm" in settings.modes:
                _per_op(prof, "warm", ex, lambda i: warm_samples(ex, i, settings, clock), progress)
            if "in-run" in settings.modes:
                progress("in-run", 0, len(ex.ops))
                prof.samples["in-run"] = in_run_passes(ex, settings.inrun_passes, clock)
            if "cold" in settings.modes:
                flusher = Flusher(settings.flush_nbytes)
                _per_op(prof, "cold", ex, lambda i: cold_samples(ex, i, settings, clock, flusher),
                        progress)
            if "e2e" in settings.modes:
                progress("e2e", 0, 1)
                prof.e2e_ns = e2e_samples(ex, settings.e2e_repeat, clock)
                prof.dispatch_ns = dispatch_samples(ex, clock)
        except KeyboardInterrupt:
            prof.partial = True
    return prof
