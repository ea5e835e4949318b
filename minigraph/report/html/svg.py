"""The drawing kit of the HTML reports: escaping, scales with readable ticks, axes and labels.

Hand-written SVG (docs/html-reports.md says why): every bar is one ``<rect class="bar">`` carrying data
attributes (``data-mode``, ``data-op``...) that the page's script (tooltips, ordering) and the
tests read; tooltips start as SVG ``<title>`` elements, so they work without the script too.
Durations arrive in ns everywhere and are drawn in the unit that suits the chart's range.
"""
from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Callable, Iterable

from ...fileio.printable import visible

FONT_PX = 12
UNITS = (("s", 1e9), ("ms", 1e6), ("µs", 1e3), ("ns", 1.0))


def esc(value: object) -> str:
    """``value`` as HTML text or attribute: markup escaped, and control characters (an ESC or
    BEL from a name in a file) shown as ``\\xNN`` rather than copied into the page."""
    return html.escape(visible(value), quote=True)


def tag(name: str, body: str = "", **attrs: object) -> str:
    """``<name a="v">body</name>``; attribute names: trailing ``_`` dropped, ``_`` -> ``-``;
    None values left out; numbers rounded to 0.1 px."""
    parts = []
    for key, value in attrs.items():
        if value is None:
            continue
        if isinstance(value, float):
            value = f"{value:.1f}".rstrip("0").rstrip(".")
        parts.append(f'{key.rstrip("_").replace("_", "-")}="{esc(value)}"')
    head = " ".join([name, *parts])
    return f"<{head}>{body}</{name}>" if body or name not in ("rect", "line", "path",
                                                                "circle") else f"<{head}/>"


def title(text: str) -> str:
    """A tooltip: the browser shows it natively; the page's script shows it nicer."""
    return tag("title", esc(text))


def unit_for(max_ns: float) -> tuple[str, float]:
    """(unit, ns per unit) in which ``max_ns`` reads as 1..999."""
    return next(((u, f) for u, f in UNITS if max_ns >= f), UNITS[-1])


def number(value: float) -> str:
    """A tick or label number: 3 significant digits, thousands grouped, no trailing zeros."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else "-"
    digits = max(0, 2 - int(math.floor(math.log10(abs(value)))))
    text = f"{value:,.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def duration(ns: float | None) -> str:
    """ns in the unit that suits it, e.g. '412 ns', '15.4 µs', '2.31 ms'; '-' when absent."""
    if ns is None or not math.isfinite(ns):
        return "-"
    unit, f = unit_for(abs(ns) or 1.0)
    return f"{number(ns / f)} {unit}"


def nice_step(span: float, count: int) -> float:
    raw = span / max(count, 1)
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    return next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)


@dataclass(frozen=True)
class Scale:
    """Data value -> pixel, linear or log10 (log: values at or below ``lo`` sit at ``px0``)."""

    lo: float
    hi: float
    px0: float
    px1: float
    log: bool = False

    @classmethod
    def fit(cls, lo: float, hi: float, px0: float, px1: float, log: bool = False) -> "Scale":
        """A scale whose ends are round numbers around [lo, hi]."""
        if log:  # from just below the smallest value to just past the largest
            return cls(max(lo * 0.7, hi * 1e-7, 1e-12), hi * 1.15, px0, px1, True)
        if hi <= lo:
            hi = lo + 1.0
        step = nice_step(hi - lo, 5)
        return cls(math.floor(lo / step) * step, math.ceil(hi / step) * step, px0, px1)

    def __call__(self, value: float) -> float:
        if self.log:
            v = math.log10(max(value, self.lo))
            t = (v - math.log10(self.lo)) / (math.log10(self.hi) - math.log10(self.lo))
        else:
            t = (value - self.lo) / (self.hi - self.lo)
        return self.px0 + t * (self.px1 - self.px0)

    def ticks(self) -> list[float]:
        if self.log:
            first = math.floor(math.log10(self.lo))
            decades = [10.0 ** k for k in range(first, math.floor(math.log10(self.hi)) + 1)]
            steps = (1, 2, 5) if len(decades) <= 3 else (1,)  # few decades: 1-2-5 reads better
            return [d * m for d in decades for m in steps if self.lo <= d * m <= self.hi]
        step = nice_step(self.hi - self.lo, 5)
        count = int(round((self.hi - self.lo) / step))
        return [self.lo + k * step for k in range(count + 1)]


def x_axis(scale: Scale, y: float, y_top: float, per_unit: float, label: str,
           fmt: Callable[[float], str] | None = None) -> str:
    """Ticks, grid lines up to ``y_top`` and the axis label (with its unit) under ``y``;
    ``fmt``: a tick's text from its value (default: the value in the axis's unit)."""
    out = [tag("line", x1=scale.px0, x2=scale.px1, y1=y, y2=y, class_="axis")]
    for t in scale.ticks():
        x = scale(t)
        out.append(tag("line", x1=x, x2=x, y1=y_top, y2=y, class_="grid"))
        text = fmt(t) if fmt else number(t / per_unit)
        out.append(tag("text", esc(text), x=x, y=y + 15, class_="tick",
                       text_anchor="middle"))
    out.append(tag("text", esc(label), x=(scale.px0 + scale.px1) / 2, y=y + 32,
                   class_="axis-label", text_anchor="middle"))
    return "".join(out)


def x_ticks_above(scale: Scale, y: float, per_unit: float,
                  fmt: Callable[[float], str] | None = None) -> str:
    """The tick labels again above a tall chart, so its top screenful can be read too."""
    return "".join(tag("text", esc(fmt(t) if fmt else number(t / per_unit)), x=scale(t), y=y,
                       class_="tick", text_anchor="middle") for t in scale.ticks())


def y_axis(scale: Scale, x: float, x_right: float, per_unit: float, label: str) -> str:
    """Vertical axis on the left at ``x``: ticks, grid lines to ``x_right``, rotated label."""
    out = [tag("line", x1=x, x2=x, y1=scale.px0, y2=scale.px1, class_="axis")]
    for t in scale.ticks():
        y = scale(t)
        out.append(tag("line", x1=x, x2=x_right, y1=y, y2=y, class_="grid"))
        out.append(tag("text", esc(number(t / per_unit)), x=x - 6, y=y + 4, class_="tick",
                       text_anchor="end"))
    mid = (scale.px0 + scale.px1) / 2
    out.append(tag("text", esc(label), x=x - 52, y=mid, class_="axis-label",
                   text_anchor="middle", transform=f"rotate(-90 {x - 52:.1f} {mid:.1f})"))
    return "".join(out)


def whisker(x0: float, x1: float, y: float, cap: float = 4.0, vertical: bool = False) -> str:
    """An interval drawn as a line with end caps (horizontal, or vertical at x=y)."""
    if vertical:
        return tag("path", d=f"M{y - cap:.1f},{x0:.1f}h{2 * cap:.1f}M{y:.1f},{x0:.1f}V{x1:.1f}"
                   f"M{y - cap:.1f},{x1:.1f}h{2 * cap:.1f}", class_="whisker")
    return tag("path", d=f"M{x0:.1f},{y - cap:.1f}v{2 * cap:.1f}M{x0:.1f},{y:.1f}H{x1:.1f}"
               f"M{x1:.1f},{y - cap:.1f}v{2 * cap:.1f}", class_="whisker")


def middle_cut(text: str, limit: int) -> str:
    """``text`` cut in the middle to at most ``limit`` characters (op names share a prefix)."""
    if len(text) <= limit:
        return text
    keep = limit - 1
    return text[:keep // 2] + "…" + text[len(text) - (keep - keep // 2):]


def svg(width: float, height: float, body: Iterable[str], **attrs: object) -> str:
    # inline SVG in HTML needs no xmlns: the file names no URL at all
    return tag("svg", "".join(body), viewBox=f"0 0 {width:.0f} {height:.0f}", width=f"{width:.0f}",
               height=f"{height:.0f}", role="img", **attrs)


PATTERNS = (  # shared fills: the first-run excess and unresolved components are hatched
    '<pattern id="hatch-excess" width="6" height="6" patternUnits="userSpaceOnUse" '
    'patternTransform="rotate(45)"><rect width="6" height="6" fill="#fde0d2"/>'
    '<line x1="0" y1="0" x2="0" y2="6" stroke="#c0392b" stroke-width="3"/></pattern>'
    '<pattern id="hatch-unresolved" width="6" height="6" patternUnits="userSpaceOnUse" '
    'patternTransform="rotate(45)"><rect width="6" height="6" fill="#f2f2f2"/>'
    '<line x1="0" y1="0" x2="0" y2="6" stroke="#9a9a9a" stroke-width="2"/></pattern>')


def defs() -> str:
    """One hidden SVG carrying the shared patterns (referenced by id from every chart)."""
    return f'<svg width="0" height="0" style="position:absolute" aria-hidden="true">' \
           f"<defs>{PATTERNS}</defs></svg>"
