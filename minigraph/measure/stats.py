"""Summary statistics of raw samples (ns): the one set every report and comparison uses."""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Sequence


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
