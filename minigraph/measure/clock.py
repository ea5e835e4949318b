"""Measurement primitives shared by the executor and the profiler (pure; the clock is injected)."""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Callable, Sequence


def time_repeats(step: Callable[[], object], number: int, repeat: int, min_repeat_ms: float,
                 clock: Callable[[], int]) -> list[float]:
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


@dataclass(frozen=True)
class Stats:
    """Summary of raw samples (ns): median, IQR, CV, min."""

    n: int
    median_ns: float
    iqr_ns: float
    cv: float
    min_ns: float
    mean_ns: float

    @classmethod
    def of(cls, samples_ns: Sequence[float]) -> "Stats":
        xs = sorted(samples_ns)
        if not xs:
            return cls(0, float("nan"), float("nan"), float("nan"), float("nan"), float("nan"))
        mean = statistics.fmean(xs)
        q = statistics.quantiles(xs, n=4, method="inclusive") if len(xs) > 1 else [xs[0]] * 3
        cv = statistics.stdev(xs) / mean if len(xs) > 1 and mean > 0 else 0.0
        return cls(len(xs), statistics.median(xs), q[2] - q[0], cv, xs[0], mean)
