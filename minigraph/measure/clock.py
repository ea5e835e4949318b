"""The clock and the repeat loop every timed measurement shares (pure; the clock is injected).

``Clock`` is what profilers, protocols and the executor's ``benchmark`` take so that tests can
pass an exact one (tests/clocks.py); ``Progress`` is how long jobs report where they are.
Counterpart: ``WrapTimeEvaluator`` in src/runtime/rpc/rpc_module.cc (``time_evaluator``).
"""
from __future__ import annotations

from typing import Callable

Clock = Callable[[], int]                   # monotonic nanoseconds (time.perf_counter_ns)
Progress = Callable[[str, int, int], None]  # (what, step index, steps)


def no_progress(what: str, i: int, n: int) -> None:
    """The default Progress: report nothing."""


def time_repeats(step: Callable[[], object], number: int, repeat: int, min_repeat_ms: float,
                 clock: Clock) -> list[float]:
    """time_evaluator's protocol in Python: per repeat, ``number`` calls timed together
    (``number`` doubles until a repeat lasts min_repeat_ms); returns seconds per call."""
    results = []
    for _ in range(repeat):
        n = max(1, number)
        while True:
            t0 = clock()
            for _ in range(n):
                step()
            elapsed_ns = clock() - t0
            if elapsed_ns >= min_repeat_ms * 1e6 or min_repeat_ms <= 0:
                break
            n *= 2
        results.append(elapsed_ns / n / 1e9)
    return results


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
