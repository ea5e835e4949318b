"""Formatting helpers every text report shares: durations, intervals, tables fitted to a width.

Durations are auto-scaled (``dur``: 410 ns, 5.47 us, 2.25 ms, 1.20 s) so that a sub-microsecond
op never reads ``0.0 us``; ``us`` and ``ms`` remain for places that want one fixed unit.
Every table cell is one line (fileio/printable.py ``one_line``: a newline in a name from a file
is shown, not obeyed). Tables are fitted to a width (the terminal's, chosen by the CLI; None:
as wide as they come): shrinkable columns are truncated in the middle, then optional columns are dropped. Text
lines longer than the width are wrapped with a hanging indent (``wrap``).
"""
from __future__ import annotations

import math
import os
import textwrap
from typing import Collection, Mapping, Sequence

from ..fileio.printable import one_line

ELLIPSIS = ".."  # ASCII: any terminal encoding, one column per character
_LAST_RESORT = 8  # a name cut below this says nothing
_SCALES = ((1e9, "s"), (1e6, "ms"), (1e3, "us"), (1.0, "ns"))


def _missing(ns: float | None) -> bool:
    return ns is None or not math.isfinite(ns)


def us(ns: float | None, digits: int = 1) -> str:
    """ns as microseconds with digit grouping, e.g. '1,234.5'; '-' when absent or NaN."""
    return "-" if _missing(ns) else f"{ns / 1e3:,.{digits}f}"


def ms(ns: float | None, digits: int = 2) -> str:
    """ns as milliseconds with digit grouping, e.g. '27.41'; '-' when absent or NaN."""
    return "-" if _missing(ns) else f"{ns / 1e6:,.{digits}f}"


def dur(ns: float | None) -> str:
    """ns in the unit that keeps three significant digits: '410 ns', '5.47 us', '27.1 us',
    '271 us', '2.25 ms', '1.20 s'; negative values keep their sign; '-' when absent."""
    if _missing(ns):
        return "-"
    assert ns is not None
    if ns == 0:
        return "0"
    sign, x = ("-" if ns < 0 else ""), abs(ns)
    scale, unit = next(((s, u) for s, u in _SCALES if x >= s * 0.9995), (1.0, "ns"))
    v = x / scale
    digits = 2 if v < 9.995 else 1 if v < 99.95 else 0
    if unit == "ns":  # whole nanoseconds are the clock's resolution
        digits = 1 if v < 9.95 else 0
    return f"{sign}{v:,.{digits}f} {unit}"


def pct(fraction: float | None, digits: int = 1) -> str:
    """A fraction as a percentage, '2.1%'; '-' when absent or NaN."""
    return "-" if _missing(fraction) else f"{100 * fraction:.{digits}f}%"  # type: ignore[operator]


def interval(median_ns: float, lo_ns: float, hi_ns: float, unit=us) -> str:
    """'median [lo, hi]' in one unit."""
    return f"{unit(median_ns)} [{unit(lo_ns)}, {unit(hi_ns)}]"


def middle(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters in the middle: the start and the (more telling)
    end of a kernel name survive, e.g. 'tvmgen_de..add2_relu1'."""
    if len(text) <= width:
        return text
    if width <= len(ELLIPSIS) + 1:
        return text[:width]
    keep = width - len(ELLIPSIS)
    head = keep * 2 // 5
    return text[:head] + ELLIPSIS + text[len(text) - (keep - head):]


def shared_prefix(names: Sequence[str]) -> str:
    """The prefix every name shares, cut back to an underscore ('tvmgen_default_fused_'), ""
    when there is none worth dropping (or dropping it would leave a name empty)."""
    common = os.path.commonprefix(list(names)) if len(names) > 1 else ""
    cut = common.rfind("_") + 1
    return common[:cut] if cut >= 8 and all(len(n) > cut for n in names) else ""


def format_table(head: Sequence[str], body: Sequence[Sequence[str]],
                 right: Collection[int] | None = None, *, width: int | None = None,
                 shrink: Sequence[int] | Mapping[int, int] = (), min_shrink: int = 12,
                 optional: Sequence[int] = ()) -> str:
    """Columns padded to their widest cell, two spaces apart; ``right``: the columns aligned
    right (default: the numeric ones, known by a heading in a unit, or Percent / Count).

    With ``width``, the table is fitted to it: the ``shrink`` columns (e.g. names) are cut in
    the middle down to ``min_shrink`` characters (or, ``shrink`` being a mapping, to each
    column's own minimum), then the ``optional`` columns are dropped, first listed first,
    until every line fits (or nothing more can go)."""
    if right is None:
        right = {c for c in range(1, len(head)) if head[c].endswith(("(us)", "(ms)")) or
                 head[c] in ("Percent", "Count")}
    keep = list(range(len(head)))
    head, body = [one_line(h) for h in head], [[one_line(v) for v in b] for b in body]
    widths = [max(len(x[c]) for x in [head, *body]) for c in range(len(head))]
    if width is not None:
        floors = dict(shrink) if isinstance(shrink, Mapping) else {c: min_shrink for c in shrink}
        widths = _fit(widths, keep, width, floors, optional)

    def cell(c: int, v: str) -> str:
        text = middle(v, widths[c])
        return text.rjust(widths[c]) if c in right else text.ljust(widths[c])

    def line(cells: Sequence[str]) -> str:
        return "  ".join(cell(c, cells[c]) for c in keep).rstrip()
    return "\n".join([line(head)] + [line(b) for b in body])


def _fit(widths: list[int], keep: list[int], width: int, floors: dict[int, int],
         optional: Sequence[int]) -> list[int]:
    """Column widths (and ``keep``, in place) so that the table's lines fit ``width``:
    shrink to each floor, then drop optional columns, then shrink to a last resort."""
    widths = list(widths)

    def total() -> int:
        return sum(widths[c] for c in keep) + 2 * (len(keep) - 1)

    def squeeze(last_resort: bool) -> None:
        for c, floor in floors.items():  # in the order given
            floor = min(floor, _LAST_RESORT) if last_resort else floor
            if total() > width:
                widths[c] = max(min(widths[c], floor), widths[c] - (total() - width))
    full = list(widths)
    squeeze(False)
    for c in optional:
        if total() <= width:
            break
        if c in keep:
            keep.remove(c)
    for c in floors:  # give back what a dropped column freed
        widths[c] = min(full[c], widths[c] + max(0, width - total()))
    squeeze(True)
    return widths


def wrap(text: str, width: int | None, indent: int = 4) -> str:
    """Every line longer than ``width`` wrapped at spaces, continuation lines indented
    ``indent`` beyond the line's own indentation (None: unchanged)."""
    if width is None:
        return text
    out = []
    for line in text.splitlines():
        if len(line) <= width:
            out.append(line)
            continue
        lead = " " * (len(line) - len(line.lstrip(" ")))
        out += textwrap.wrap(line.strip(), width=width, initial_indent=lead,
                             subsequent_indent=lead + " " * indent, break_on_hyphens=False,
                             break_long_words=True) or [line[:width]]
    return "\n".join(out)


def precision_text(x: float) -> str:
    """+-2.0% (how well a median is known), or - where its samples cannot say (one sample)."""
    return "-" if x != x or x == float("inf") else f"+-{x:.1%}"
