"""Formatting helpers every text report shares: durations, intervals and padded tables."""
from __future__ import annotations

import math
from typing import Collection, Sequence


def _missing(ns: float | None) -> bool:
    return ns is None or not math.isfinite(ns)


def us(ns: float | None, digits: int = 1) -> str:
    """ns as microseconds with digit grouping, e.g. '1,234.5'; '-' when absent or NaN."""
    return "-" if _missing(ns) else f"{ns / 1e3:,.{digits}f}"


def ms(ns: float | None, digits: int = 2) -> str:
    """ns as milliseconds with digit grouping, e.g. '27.41'; '-' when absent or NaN."""
    return "-" if _missing(ns) else f"{ns / 1e6:,.{digits}f}"


def interval(median_ns: float, lo_ns: float, hi_ns: float, unit=us) -> str:
    """'median [lo, hi]' in one unit."""
    return f"{unit(median_ns)} [{unit(lo_ns)}, {unit(hi_ns)}]"


def format_table(head: Sequence[str], body: Sequence[Sequence[str]],
                 right: Collection[int] | None = None) -> str:
    """Columns padded to their widest cell, two spaces apart; ``right``: the columns aligned
    right (default: the numeric ones, known by a heading in a unit, or Percent / Count)."""
    widths = [max(len(str(x[c])) for x in [head, *body]) for c in range(len(head))]
    if right is None:
        right = {c for c in range(1, len(head)) if head[c].endswith(("(us)", "(ms)")) or
                 head[c] in ("Percent", "Count")}

    def line(cells: Sequence[str]) -> str:
        return "  ".join(str(v).rjust(w) if c in right else str(v).ljust(w)
                         for c, (v, w) in enumerate(zip(cells, widths))).rstrip()
    return "\n".join([line(head)] + [line(b) for b in body])
