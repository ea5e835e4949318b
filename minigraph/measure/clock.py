"""The clock and the repeat loop every timed measurement shares (pure; the clock is injected).

``Clock`` is what profilers, protocols and the executor's ``benchmark`` take so that tests can
pass an exact one (tests/helpers/clocks.py); ``Progress`` is how long jobs report where they are.
Counterpart: ``WrapTimeEvaluator`` in src/runtime/rpc/rpc_module.cc (``time_evaluator``).
"""
from __future__ import annotations

import time
from typing import Callable, Sequence

Clock = Callable[[], int]                   # monotonic nanoseconds (time.perf_counter_ns)
Progress = Callable[[str, int, int], None]  # (what, step index, steps)
_GOLDEN_RATIO = 1.618  # time_evaluator's growth factor for `number`


def no_progress(what: str, i: int, n: int) -> None:
    """The default Progress: report nothing."""


def time_repeats(step: Callable[[], object], number: int, repeat: int, min_repeat_ms: float,
                 clock: Clock, *, limit_zero_time_iterations: int = 100,
                 cooldown_interval_ms: float = 0, repeats_to_cooldown: int = 1,
                 sleep: Callable[[float], None] = time.sleep) -> list[float]:
    """time_evaluator's protocol in Python (WrapTimeEvaluator's loop, TVM 0.16 and 0.27): per
    repeat, ``number`` calls timed together; while a repeat lasts less than min_repeat_ms,
    ``number`` grows to max(what min_repeat_ms needs + 1, number x 1.618) and the repeat is
    timed again (the grown ``number`` carries over to later repeats, as in TVM). A repeat that
    reads 0 ns is retried at most ``limit_zero_time_iterations`` times. After repeat i, with
    i % repeats_to_cooldown == 0, it sleeps cooldown_interval_ms. Returns seconds per call.
    The untimed first call is the caller's."""
    results = []
    number = max(1, int(number))
    for i in range(repeat):
        elapsed_ns, zero_times = 0, 0
        while True:
            if elapsed_ns > 0:
                number = int(max(min_repeat_ms / (elapsed_ns / 1e6 / number) + 1,
                                 number * _GOLDEN_RATIO))
            t0 = clock()
            for _ in range(number):
                step()
            elapsed_ns = clock() - t0
            zero_times += elapsed_ns == 0
            if elapsed_ns / 1e6 >= min_repeat_ms or zero_times >= limit_zero_time_iterations:
                break
        results.append(elapsed_ns / number / 1e9)
        if cooldown_interval_ms > 0 and i % max(1, repeats_to_cooldown) == 0:
            sleep(cooldown_interval_ms / 1e3)
    return results


SLICE_S = 0.1  # no native timing loop runs longer than about this: a signal is taken between


def sliced(take: Callable[[int], list[float]], repeat: int, first: int = 1,
           slice_s: float = SLICE_S, wall: Callable[[], float] = time.monotonic
           ) -> tuple[list[float], int]:
    """``repeat`` samples from ``take(k)`` (k samples from one native loop that Python cannot
    interrupt: TVM's ``time_evaluator``), ``first`` in the first call, then as many per call
    as fit in ``slice_s`` at the rate seen so far, so a Ctrl-C or SIGTERM is taken within about
    ``slice_s``. Returns the samples and the count per call to start the next batch with; an
    interrupt carries the samples taken before it (``KeyboardInterrupt.samples``)."""
    out: list[float] = []
    k, spent = max(1, min(first, repeat)), 0.0
    while len(out) < repeat:
        t0 = wall()
        try:
            got = take(min(k, repeat - len(out)))
        except KeyboardInterrupt as stop:
            stop.samples = out  # type: ignore[attr-defined]  # the caller keeps them
            raise
        spent += wall() - t0
        if not got:
            break
        out += got
        k = max(1, int(slice_s * len(out) / spent + 1e-6)) if spent > 0 else 2 * k
    return out, k


def single_shots(call: Callable[[], object], repeat: int, clock: Clock,
                 before: Callable[[], None] = lambda: None) -> list[float]:
    """``repeat`` calls each timed alone (ns); ``before`` runs untimed ahead of each one."""
    out = []
    for _ in range(repeat):
        before()
        t0 = clock()
        call()
        out.append(float(clock() - t0))
    return out


def stamped_passes(calls: Sequence[tuple[Callable, tuple]], passes: int, clock: Clock
                   ) -> list[list[float]]:
    """Per call, ``passes`` samples (ns) taken inside full passes over ``calls``: one clock
    stamp between consecutive calls, so each call sees what the call before it really left
    in the caches (the in-run mode; diagnose's per-process steady reference)."""
    per_call: list[list[float]] = [[] for _ in calls]
    for _ in range(passes):
        stamps = stamped_pass(calls, clock)
        for i, samples in enumerate(per_call):
            samples.append(float(stamps[i + 1] - stamps[i]))
    return per_call


def stamped_pass(calls: Sequence[tuple[Callable, tuple]], clock: Clock) -> list[int]:
    """One pass over ``calls`` with a clock stamp before the first and after each: nothing
    else in it, so what it costs beyond the bare loop is the stamps' alone (profile/steady.py
    times it so)."""
    stamps = [clock()]
    for fn, args in calls:
        fn(*args)
        stamps.append(clock())
    return stamps
