"""Is B different from A? Per-item verdicts against run-to-run noise measured from the data.

The core of ``minigraph compare``, free of any file format: callers pair up what was measured
twice (``Pair``: a name and the raw samples of each side) and get a ``Significance`` back (what
the noise test says of each pair; the comparison of two documents is analysis/comparison.py's,
the cut-offs below analysis/thresholds.py's, passed in as ``Cutoffs``). Why not
a plain test on the raw samples: samples taken inside one process agree with each other far
better than two processes agree (memory placement, clocks, neighbours), so a Mann-Whitney test
alone calls a few-percent run-to-run shift "significant" on most ops. Here a change is real when

- the whole-run shift is set apart first: between two processes of one machine every op
  often moves together (clock speed, memory placement, the host), by tens of percent on a
  VM; where most items moved together, the median of ln(B/A) is that shift, reported on its
  own (``Significance.shift``), and each item is judged by how far it moved beyond it;
- its size |ln(B/A) - shift| exceeds ``z`` run-to-run standard deviations, where the run-to-run
  deviation is estimated from the data: the spread of ln(B/A) across all pairs (half the width
  of the shortest interval holding half of them, / 0.6745: robust to up to half of the items
  having really changed), combined with each item's own uncertainty (the standard error of
  its median from its IQR, or from the spread between its repeated batches where there are
  several);
- and it exceeds ``floor`` (a relative change too small to matter);
- and, where both sides have several samples, a two-sided Mann-Whitney U test gives p < alpha.

Counterpart: pyperf's ``compare_to`` (geometric mean of ratios, "not significant" verdicts).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

from .stats import Stats

_IQR_SIGMA = 1.349   # IQR of a normal distribution in standard deviations
_MEDIAN_SE = 1.2533  # standard error of a median in sigma / sqrt(n), normal data


@dataclass(frozen=True)
class Cutoffs:
    """What a change must exceed to be called one: its values, and why, are
    analysis/thresholds.py's (this room sits below it and is given them)."""

    alpha: float          # Mann-Whitney p a change must stay under
    floor: float          # the smallest relative change called a change
    z: float              # run-to-run standard deviations a change must exceed
    shared: float         # share of items that must move together to call it a shift
    process_shift: float  # the largest shared shift set apart (as B/A - 1)


@dataclass(frozen=True)
class Pair:
    """One thing measured in both A and B, the one pair every comparison is made of: an op of
    two profiles (its raw samples, ns; ``*_batch``: samples per batch where they came in
    repeated batches, 0: one batch), or a kernel of two reports or profiles (one time per call,
    analysis/matching.py). ``a``/``b``: what each side measured where the samples do not say
    it (a kernel's identity: hash, shapes, names, kind); None for an op."""

    name: str
    a_ns: Sequence[float]
    b_ns: Sequence[float]
    a_batch: int = 0
    b_batch: int = 0
    a: Any = None
    b: Any = None

    @property
    def ratio(self) -> float:
        """B's mean sample over A's: a kernel's time per call, B / A (inf where A's is 0,
        NaN without samples); an op's verdict reads medians instead (``Delta.ratio``)."""
        if not self.a_ns or not self.b_ns:
            return math.nan
        per_a, per_b = sum(self.a_ns) / len(self.a_ns), sum(self.b_ns) / len(self.b_ns)
        return per_b / per_a if per_a else math.inf

    @property
    def gap_ns(self) -> float:
        """B's samples summed less A's: a kernel's whole time over its calls, B - A."""
        return sum(self.b_ns) - sum(self.a_ns)


@dataclass(frozen=True)
class Delta:
    name: str
    a: Stats
    b: Stats
    ratio: float          # B median / A median (NaN where A's median is 0 or absent)
    # the verdict compares ratio / Significance.shift (the item's own change) with ``noise``
    p: float | None       # Mann-Whitney p; None where a side has fewer than 2 samples
    noise: float          # the relative change this item had to exceed, e.g. 0.06 = 6%
    verdict: str          # "slower" | "faster" | "same" | "n/a" (nothing to compare)

    def to_dict(self) -> dict:
        return {"name": self.name, "a": _stats(self.a), "b": _stats(self.b),
                "ratio": _finite(self.ratio), "p": self.p, "noise": _finite(self.noise),
                "verdict": self.verdict}

    @property
    def interval(self) -> tuple[float, float] | None:
        """90% interval of B/A from the two medians' standard errors (each from its IQR, as
        for normal data); None where a side has one sample or there is no ratio."""
        sa, sb = _relative_se(self.a), _relative_se(self.b)
        if sa is None or sb is None or not self.ratio > 0:
            return None
        half = _Z90 * math.hypot(sa, sb)
        return self.ratio * math.exp(-half), self.ratio * math.exp(half)


def _relative_se(s: Stats) -> float | None:
    """Standard error of a median as a share of it, from its IQR (normal data)."""
    if s.n < 2 or not s.median_ns or s.median_ns != s.median_ns:
        return None
    return _MEDIAN_SE * (s.iqr_ns / _IQR_SIGMA) / math.sqrt(s.n) / s.median_ns


@dataclass(frozen=True)
class Significance:
    """What the noise test says of a set of pairs: each one's ``Delta`` and the run-to-run
    noise and whole-run shift they were judged against."""

    deltas: tuple[Delta, ...]
    run_to_run: float     # relative run-to-run deviation estimated across the pairs
    geomean: float        # geometric mean of the B/A ratios (NaN: no ratio)
    cutoffs: Cutoffs
    e2e: Delta | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    shift: float = 1.0    # the whole-run shift every item shares (median B/A; 1: too few)

    @property
    def alpha(self) -> float:
        return self.cutoffs.alpha

    @property
    def floor(self) -> float:
        return self.cutoffs.floor

    @property
    def z(self) -> float:
        return self.cutoffs.z

    @property
    def differ(self) -> tuple[Delta, ...]:
        return tuple(d for d in self.deltas if d.verdict in ("slower", "faster"))

    def count(self, verdict: str) -> int:
        return sum(1 for d in self.deltas if d.verdict == verdict)

    def to_dict(self) -> dict:
        return {"run_to_run": self.run_to_run, "geomean": _finite(self.geomean),
                "shift": _finite(self.shift),
                "alpha": self.alpha, "floor": self.floor, "z": self.z,
                "differ": len(self.differ), "slower": self.count("slower"),
                "faster": self.count("faster"), "compared": len(self.deltas),
                "items": [d.to_dict() for d in self.deltas],
                "e2e": self.e2e.to_dict() if self.e2e else None}


def _exp(x: float) -> float:
    """exp that says inf instead of raising: ratios of hostile or extreme samples overflow."""
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def _finite(x: float) -> float | None:
    """JSON has no NaN: absent figures are null."""
    return x if math.isfinite(x) else None


def _stats(s: Stats) -> dict:
    return {k: (_finite(v) if isinstance(v, float) else v) for k, v in asdict(s).items()}


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p-value of the Mann-Whitney U test (normal approximation, tie-corrected);
    1.0 when either side is too small."""
    n1, n2 = len(a), len(b)
    if n1 < 2 or n2 < 2:
        return 1.0
    ranked = sorted([(x, 0) for x in a] + [(x, 1) for x in b])
    ranks, ties, i = [0.0] * len(ranked), 0.0, 0
    while i < len(ranked):
        j = i
        while j + 1 < len(ranked) and ranked[j + 1][0] == ranked[i][0]:
            j += 1
        for k in range(i, j + 1):
            ranks[k] = (i + j) / 2 + 1
        ties += (j - i + 1) ** 3 - (j - i + 1)
        i = j + 1
    r1 = sum(r for r, (_, side) in zip(ranks, ranked) if side == 0)
    u = r1 - n1 * (n1 + 1) / 2
    n = n1 + n2
    var = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)))
    if var <= 0:
        return 1.0
    z = (abs(u - n1 * n2 / 2) - 0.5) / math.sqrt(var)
    return math.erfc(max(z, 0.0) / math.sqrt(2))


def median_uncertainty(samples: Sequence[float], batch: int = 0) -> float:
    """Standard error of ln(median of ``samples``) (0 for one sample): from the IQR of the
    log samples, or from the spread between batch medians where there are at least two whole
    batches (batches taken apart in time see drift the samples inside one batch do not)."""
    logs = [math.log(x) for x in samples if x > 0]
    if len(logs) < 2:
        return 0.0
    q = statistics.quantiles(logs, n=4, method="inclusive")
    se = _MEDIAN_SE * (q[2] - q[0]) / _IQR_SIGMA / math.sqrt(len(logs))
    if batch >= 2 and len(samples) >= 2 * batch:
        meds = [statistics.median(samples[k:k + batch])
                for k in range(0, len(samples) - batch + 1, batch)]
        blogs = [math.log(m) for m in meds if m > 0]
        if len(blogs) >= 2:
            se = max(se, statistics.stdev(blogs) / math.sqrt(len(blogs)))
    return se


PRECISION_LEVEL = 0.90
_Z90 = 1.6449  # two-sided 90% normal quantile


def median_precision(samples: Sequence[float], batch: int = 0) -> float:
    """How well the median of ``samples`` is known: the half-width of its 90% interval as a
    share of it (0.02: the median is known to +-2%), from ``median_uncertainty`` (so repeated
    batches count as batches, not as independent samples); inf with fewer than two."""
    if sum(1 for x in samples if x > 0) < 2:
        return math.inf
    return _exp(_Z90 * median_uncertainty(samples, batch)) - 1


def spread_of(log_ratios: Sequence[float]) -> float:
    """Robust standard deviation of log ratios: the shortest interval holding half of them
    (the 'shorth'), whose half-width is 0.6745 sigma for normal data. 0 for fewer than 4."""
    xs = sorted(x for x in log_ratios if math.isfinite(x))
    if len(xs) < 4:
        return 0.0
    h = (len(xs) + 1) // 2  # at least half of them: a tight half decides, changed or not
    width = min(xs[i + h - 1] - xs[i] for i in range(len(xs) - h + 1))
    return width / 2 / 0.6745


def shared_shift(logs: Sequence[float], run_to_run: float, cut: Cutoffs) -> float:
    """ln of the shift the items share: their median, when at least ``cut.shared`` of them lie
    within the noise of it (every op moved together) and it is within what separate processes
    show (``cut.process_shift``); else 0: no shared shift is set apart (e.g. half of the ops changed and
    half did not, where the median falls between the two; or everything is 2x slower, a
    change). 0 with fewer than 4 items."""
    if len(logs) < 4:
        return 0.0
    mid = statistics.median(logs)
    if abs(mid) >= math.log1p(cut.process_shift) - 1e-9:
        return 0.0
    near = max(math.log1p(cut.floor), cut.z * run_to_run)
    return mid if sum(abs(x - mid) <= near for x in logs) >= cut.shared * len(logs) else 0.0


def _delta(pair: Pair, run_to_run: float, cut: Cutoffs, shift: float = 0.0) -> Delta:
    a, b = Stats.of(pair.a_ns), Stats.of(pair.b_ns)
    if not (a.n and b.n and a.median_ns > 0 and b.median_ns > 0):
        return Delta(pair.name, a, b, float("nan"), None, float("nan"), "n/a")
    ratio = b.median_ns / a.median_ns
    ua, ub = median_uncertainty(pair.a_ns, pair.a_batch), median_uncertainty(pair.b_ns,
                                                                             pair.b_batch)
    threshold = max(math.log1p(cut.floor),
                    cut.z * math.sqrt(run_to_run ** 2 + ua ** 2 + ub ** 2))
    unshifted = [x * math.exp(-shift) for x in pair.b_ns]  # B as if the whole run had not moved
    p = mann_whitney_p(pair.a_ns, unshifted) if min(a.n, b.n) >= 2 else None
    own = math.log(ratio) - shift  # the item's move beyond the whole run's
    real = abs(own) > threshold and (p is None or p < cut.alpha)
    verdict = ("slower" if own > 0 else "faster") if real else "same"
    return Delta(pair.name, a, b, ratio, p, _exp(threshold) - 1, verdict)


def compare_pairs(pairs: Sequence[Pair], cut: Cutoffs, *, e2e: Pair | None = None
                  ) -> Significance:
    """Verdicts for every pair (and the whole run, if given) against the run-to-run noise
    estimated from all the pairs together; ``cut``: what a change must exceed."""
    logs = []
    for p in pairs:
        ma, mb = Stats.of(p.a_ns).median_ns, Stats.of(p.b_ns).median_ns
        if ma > 0 and mb > 0:
            logs.append(math.log(mb / ma))
    run_to_run = spread_of(logs)
    shift = shared_shift(logs, run_to_run, cut)
    deltas = tuple(_delta(p, run_to_run, cut, shift) for p in pairs)
    geomean = _exp(statistics.fmean(logs)) if logs else float("nan")
    notes = () if len(logs) >= 4 else (
        f"only {len(logs)} items: run-to-run noise cannot be estimated across them; "
        "verdicts rest on each item's own spread and the floor",)
    return Significance(deltas, run_to_run, geomean, cut,
                        _delta(e2e, run_to_run, cut, shift) if e2e else None, notes,
                        math.exp(shift))
