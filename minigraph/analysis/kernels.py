"""A comparison's kernel view: two profiles (TVM reports or minigraph profiles) kernel by
kernel, with the kind of their disagreement in one sentence.

The classic complaint is two TVM tables for one model that disagree by 4x. Totals hide that
most kernels usually agree while a few are tens of times off, and names mislead (TVM numbers
fused functions per build). So: match kernels by identity (analysis/matching.py), look at the
distribution of per-kernel ratios, find the few kernels that carry the gap, set the executor's
own time (Total - Sum) apart, and say in one sentence what kind of disagreement it is (the
cause, why they differ, is the verdict's: analysis/verdict.py). Rendered by
report/kernel_report.py.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from ..measure.significance import Pair
from ..measure.stats import Stats
from ..results.modes import ModeName
from ..results.profile import Profile
from .matching import EXECUTOR_KINDS, Matching, match_kernels, pick_mode, sides
from .thresholds import AGREE, CARRY, DATA_RATIO, FLOOR, OUTLIER, TOP_MAX, UNIFORM
from .verdict import Finding


@dataclass(frozen=True)
class Side:
    """One input: what it is, which samples were used, its totals (us)."""

    label: str
    file: str
    what: str
    mode: str | None
    kernel_us: float            # sum of the per-op times used
    calls: int
    executor_calls: int         # VM:: instructions and vm.builtin calls among them
    rows: int | None            # TVM table rows (aggregated calls), None otherwise
    sum_us: float | None        # the report's Sum row, or the rows' sum
    total_us: float | None      # the report's Total (whole pass), or minigraph's e2e median

    @property
    def outside_us(self) -> float | None:
        """Total - Sum: time in the pass outside the timed calls."""
        if self.sum_us is None or self.total_us is None:
            return None
        return self.total_us - self.sum_us


def _side(label: str, p: Profile, file: str, mode: str | None) -> Side:
    src = p.source
    kernel_us = sum((p.median(mode, op["index"]) or 0.0) for op in p.ops) / 1e3 if mode else 0.0
    executor = sum(1 for op in p.ops if op["kind"] in EXECUTOR_KINDS)
    if src.get("kind") == "tvm-report":
        proto = src.get("protocol", {})
        what = f"TVM report ({src.get('format')}), {proto.get('key', 'unknown')}"
        sum_row = src.get("sum") or {}
        totals = [t.get("duration_us") for t in src.get("totals", {}).values()]
        total = max((t for t in totals if isinstance(t, (int, float))), default=None)
        median_ms = (src.get("benchmark") or {}).get("median_ms")
        if total is None and isinstance(median_ms, (int, float)):
            total = 1e3 * median_ms   # a BenchmarkResult: whole runs only
        rows = len(src.get("rows", [])) if src.get("format") == "table" else None
        return Side(label, file, what, mode, kernel_us, len(p.ops), executor, rows,
                    sum_row.get("duration_us", kernel_us) if mode else None, total)
    e2e = Stats.of(p.e2e_ns).median_ns / 1e3 if p.e2e_ns else None
    return Side(label, file, "minigraph profile", mode, kernel_us, len(p.ops), executor, None,
                kernel_us if mode else None, e2e)


@dataclass(frozen=True)
class Verdict:
    kind: str          # agree | concentrated | uniform | spread | unmatched | totals
    text: str


@dataclass(frozen=True)
class KernelsView:
    """A comparison kernel by kernel: both sides, the matching, the gap (B - A over all
    per-op time), the few kernels carrying it, the per-kernel ratios' distribution, the kind
    of disagreement and the verdict's findings of why (analysis/comparison.py fills them)."""

    a: Side
    b: Side
    matching: Matching
    gap_us: float               # B - A over all per-op time
    top: tuple[Pair, ...]       # the few kernels carrying the gap, largest first
    top_share: float            # their share of the gap
    ratio_stats: dict[str, float] | None   # the per-call ratios' quantiles (None: none)
    verdict: Verdict
    findings: tuple[Finding, ...] = ()


def quantile(xs: list[float], q: float) -> float:
    """Inclusive quantile of a non-empty list (the median for q = 0.5)."""
    if len(xs) == 1:
        return xs[0]
    return statistics.quantiles(sorted(xs), n=100, method="inclusive")[round(q * 100) - 1] \
        if 0 < q < 1 else (min(xs) if q <= 0 else max(xs))


def _ratio_stats(m: Matching) -> dict[str, float] | None:
    rs = m.ratios()
    if not rs:
        return None
    return {"median": quantile(rs, 0.5), "p25": quantile(rs, 0.25),
            "p75": quantile(rs, 0.75), "p10": quantile(rs, 0.10), "p90": quantile(rs, 0.90),
            "within_10pct": sum(1 for r in rs if abs(r - 1) <= AGREE), "n": len(rs)}


def _carriers(pairs: tuple[Pair, ...], gap_ns: float, median: float
              ) -> tuple[tuple[Pair, ...], float]:
    """The few kernels that carry the gap: those off the median ratio by more than OUTLIER
    and pushing in the gap's direction, largest first (at most TOP_MAX, or a tenth of the
    kernels); without such outliers, the fewest largest contributors reaching CARRY."""
    if not gap_ns:
        return (), 0.0
    pushing = sorted((p for p in pairs if p.gap_ns * gap_ns > 0), key=lambda p: -abs(p.gap_ns))
    few = max(TOP_MAX, len(pairs) // 10)
    off = [p for p in pushing if median and abs(math.log(p.ratio / median)) > math.log(OUTLIER)
           if p.ratio not in (0.0, math.inf)]
    if off and len(off) <= few:
        top = off
    else:
        top, carried = [], 0.0
        for p in pushing[:TOP_MAX]:
            top.append(p)
            carried += abs(p.gap_ns)
            if carried >= CARRY * abs(gap_ns):
                break
    return tuple(top), sum(abs(p.gap_ns) for p in top) / abs(gap_ns)


def times(x: float) -> str:
    """A ratio as people say it: 1.04x, 18x, 70x."""
    return f"{x:.2f}x" if x < 10 else f"{x:.0f}x"


def _direction(ratio: float) -> tuple[float, str]:
    return (ratio, "slower") if ratio >= 1 else (1 / ratio if ratio else math.inf, "faster")


def _span(pairs: list[Pair] | tuple[Pair, ...]) -> str:
    """Their ratios as a range: "18-70x" (or one factor)."""
    factors = sorted(_direction(p.ratio)[0] for p in pairs)
    lo, hi = times(factors[0]), times(factors[-1])
    return lo if lo == hi else f"{lo.rstrip('x')}-{hi}"


def _totals(a: Side, b: Side) -> Verdict:
    factor, word = _direction((b.total_us or 0.0) / (a.total_us or 1.0))
    return Verdict("totals", f"only whole-run times compare: B's {(b.total_us or 0) / 1e3:,.2f} "
                   f"ms is {times(factor)} {word} than A's {(a.total_us or 0) / 1e3:,.2f} ms (a "
                   "profiled pass is one run after warm-ups with a timer around every call; a "
                   "benchmark is the mean or median of many plain runs)")


def _concentrated(top: tuple[Pair, ...], share: float, within: str, med: float,
                  what: str) -> Verdict:
    word = _direction(top[0].ratio)[1]
    n = f"{len(top)} kernel{'s are' if len(top) > 1 else ' is'}"
    part = f"explain {share:.0%} of the gap" if share <= 1.005 else \
        f"explain all of the gap ({share:.0%}: the rest goes the other way)"
    data = " or run on different data (weights never set, subnormal values)" \
        if max(p.ratio if p.ratio >= 1 else 1 / p.ratio for p in top) >= DATA_RATIO else ""
    return Verdict("concentrated", f"most kernels agree within {AGREE:.0%} ({within}; median "
                   f"ratio {med:.2f}); {n} {_span(top)} {word} in B and {part}: {what} measured "
                   f"differently (or compiled differently{data} - see below), not a uniformly "
                   f"{word} run")


def _uniform(top: tuple[Pair, ...], med: float, lo: float, hi: float) -> Verdict:
    factor, word = _direction(med)
    off = [p for p in top if p.ratio not in (0.0, math.inf) and
           abs(math.log(p.ratio / med)) > math.log(OUTLIER)]
    extra = (f"; on top of that, {len(off)} kernel{'s' if len(off) > 1 else ''} "
             f"{_span(off)} {_direction(off[0].ratio)[1]} in B" if off else "")
    return Verdict("uniform", f"B is uniformly {times(factor)} {word} (median ratio {med:.2f}, "
                   f"half of the kernels within {lo:.2f}-{hi:.2f}): the whole run differs, not "
                   f"a few kernels{extra} (which setting or state of the machine: the cause "
                   "that ends the comparison)")


def _verdict(c_gap_us: float, a: Side, b: Side, m: Matching, top: tuple[Pair, ...],
            share: float, stats: dict | None) -> Verdict:
    """One sentence for the kind of disagreement (docs/tvm-reports.md's table of verdicts)."""
    if (a.mode is None or b.mode is None) and a.total_us and b.total_us:
        return _totals(a, b)
    if stats is None:
        return Verdict("unmatched", "no kernel could be matched between A and B: only the totals "
                                    "can be compared")
    med, lo, hi = stats["median"], stats["p25"], stats["p75"]
    within = f"{stats['within_10pct']} of {stats['n']}"
    scale = max(a.kernel_us, b.kernel_us, 1e-9)
    mostly = 2 * stats["within_10pct"] >= stats["n"]
    if abs(c_gap_us) < FLOOR * scale and abs(med - 1) <= AGREE and mostly:
        return Verdict("agree", f"A and B agree: per-op time differs by "
                                f"{100 * c_gap_us / scale:+.1f}%, {within} kernels within "
                                f"{AGREE:.0%} (median ratio {med:.2f})")
    if abs(med - 1) <= AGREE and share >= CARRY and mostly:
        what = "the same functions" if m.level == "hash+shapes" else "the same-named kernels"
        return _concentrated(top, share, within, med, what)
    if abs(med - 1) > AGREE and hi / lo <= UNIFORM:
        return _uniform(top, med, lo, hi)
    return Verdict("spread", f"the difference is spread over many kernels (median ratio "
                   f"{med:.2f}, half within {lo:.2f}-{hi:.2f}, {within} within {AGREE:.0%}); the "
                   f"{len(top)} largest explain {share:.0%} of the gap")


def kernel_view(a: Profile, b: Profile, paths: tuple[str, str] = ("A", "B"),
                mode: str | tuple[str, str] = ModeName.WARM) -> KernelsView:
    """A against B, kernel by kernel; ``mode``: the samples to use where a side has them
    (a TVM report has only its one-pass samples), one for both or (A's, B's)."""
    wanted = sides(mode)
    mode_a, mode_b = pick_mode(a, wanted[0]), pick_mode(b, wanted[1])
    m = match_kernels(a, b, mode_a, mode_b)
    side_a, side_b = _side("A", a, paths[0], mode_a), _side("B", b, paths[1], mode_b)
    gap_us = side_b.kernel_us - side_a.kernel_us
    stats = _ratio_stats(m)
    top, share = _carriers(m.pairs, gap_us * 1e3, stats["median"] if stats else 0.0)
    v = _verdict(gap_us, side_a, side_b, m, top, share, stats)
    return KernelsView(side_a, side_b, m, gap_us, top, share, stats, v)
