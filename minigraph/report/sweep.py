"""A sweep as text: per op, its time at each size and how it grows (report of results/sweep.py).

The question it answers: which op takes over as the dimension grows. Rows are the ops in
execution order with their median at each size, the fitted exponent (~1 linear, ~2
quadratic), and their share of the sum at the largest size; the summary names the ops that
grow fastest and the ones that dominate at the largest size.
"""
from __future__ import annotations

from ..fileio.printable import one_line
from ..measure.stats import Stats
from ..results.sweep import Sweep
from .units import dur, format_table, wrap


def _share(sweep: Sweep, k: int) -> list[float]:
    """Each op's share of the per-op sum at size ``k``."""
    col = [g.medians_ns[k] or 0.0 for g in sweep.growth]
    total = sum(col) or 1.0
    return [c / total for c in col]


def _e2e(sweep: Sweep) -> list[str]:
    medians = [dur(Stats.of(p.e2e_ns).median_ns) if p.e2e_ns else "-" for p in sweep.profiles]
    return ["(e2e run)"] + medians + ["-"] * (len(sweep.values) - len(medians)) + ["", ""]


def render_sweep(sweep: Sweep, width: int | None = None) -> str:
    n = len(sweep.profiles)
    head = ["op"] + [f"{sweep.symbol}={v}" for v in sweep.values] + ["growth", "share"]
    last = _share(sweep, n - 1) if sweep.growth else []
    body = [[g.name] + [dur(m) if m is not None else "-" for m in g.medians_ns]
            + ["-"] * (len(sweep.values) - len(g.medians_ns))
            + [f"{sweep.symbol}^{g.exponent:.2f}" if g.exponent is not None else "-",
               f"{100 * s:.1f}%"] for g, s in zip(sweep.growth, last)]
    body.append(_e2e(sweep))
    fixed = "".join(f", {k}={v}" for k, v in sweep.fixed.items())
    lines = [f"Sweep of {sweep.symbol} over {', '.join(map(str, sweep.values))}{fixed}: "
             f"per-op {sweep.mode} medians, growth = fitted exponent of time in {sweep.symbol}"
             + (" (PARTIAL: stopped early)" if sweep.partial else ""),
             format_table(head, body, set(range(1, len(head))), width=width, shrink=(0,),
                          min_shrink=20)]
    return "\n".join(lines + [wrap(s, width) for s in _summary(sweep, last)])


def _summary(sweep: Sweep, last: list[float]) -> list[str]:
    grown = [g for g in sweep.growth if g.exponent is not None]
    if not grown:
        return ["(fewer than two sizes measured: no growth to fit)"]
    fast = sorted(grown, key=lambda g: -g.exponent)[:2]
    big = sorted(zip(sweep.growth, last), key=lambda gs: -gs[1])[:2]
    return ["fastest growing: " + ", ".join(f"{one_line(g.name)} ({sweep.symbol}^{g.exponent:.2f})"
                                             for g in fast),
            f"largest at {sweep.symbol}={sweep.values[len(sweep.profiles) - 1]}: "
            + ", ".join(f"{one_line(g.name)} ({100 * s:.0f}% of the per-op time)" for g, s in big)]
