"""Summary statistics of raw samples (ns): the one set every report and comparison uses."""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Sequence

import numpy as np

_NAN = float("nan")


@dataclass(frozen=True)
class Stats:
    """Summary of raw samples (ns): median, IQR, CV, min, mean; p90 and std (sample standard
    deviation), the figures TVM's ``BenchmarkResult`` and ONNX Runtime's perf test print."""

    n: int
    median_ns: float
    iqr_ns: float
    cv: float
    min_ns: float
    mean_ns: float
    p90_ns: float = _NAN
    std_ns: float = _NAN
    max_ns: float = _NAN

    @classmethod
    def of(cls, samples_ns: Sequence[float]) -> "Stats":
        xs = sorted(samples_ns)
        if not xs:
            return cls(0, _NAN, _NAN, _NAN, _NAN, _NAN)
        mean = statistics.fmean(xs)
        if len(xs) > 1:
            q = statistics.quantiles(xs, n=4, method="inclusive")
            p90 = statistics.quantiles(xs, n=10, method="inclusive")[8]
            std = statistics.stdev(xs)
        else:
            q, p90, std = [xs[0]] * 3, xs[0], 0.0
        cv = std / mean if mean > 0 else 0.0
        return cls(len(xs), statistics.median(xs), q[2] - q[0], cv, xs[0], mean, p90, std,
                   xs[-1])

    @property
    def rel_iqr(self) -> float:
        """IQR as a fraction of the median (NaN without a positive median)."""
        return self.iqr_ns / self.median_ns if self.median_ns > 0 else _NAN


def nanmedian_last(x: np.ndarray) -> np.ndarray:
    """np.nanmedian over the last axis, value for value (the mean of the two middle samples
    not NaN; NaN where there is none), by one sort: numpy's own goes through masked arrays for
    short rows, and took most of a ResNet-50 diagnosis's 8 s of stop-rule bootstraps
    (diagnose/attribution.py)."""
    s = np.sort(x, axis=-1)  # NaN sorts last: with none left, both picks below are NaN
    n = np.count_nonzero(~np.isnan(x), axis=-1)[..., None]
    lo = np.take_along_axis(s, (n - 1) // 2, axis=-1)[..., 0]
    hi = np.take_along_axis(s, n // 2, axis=-1)[..., 0]
    return (lo + hi) / 2
