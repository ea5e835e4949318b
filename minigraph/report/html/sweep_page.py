"""The sweep's page: each op's time against the swept size on log-log axes (a straight line of
slope k is time growing as size^k), then the per-op table of the text report.

On log-log axes an op growing linearly and one growing quadratically have slopes 1 and 2, so
the op that takes over at large sizes is the steepest line; each line is a ``<path>`` with its
points as circles carrying the numbers (tests count them in the browser's DOM).
"""
from __future__ import annotations

from ...results.sweep import Growth, Sweep
from ..sweep import render_sweep
from . import palette
from .charts import legend
from .page import document, section
from .svg import Scale, duration, esc, svg, tag, title, unit_for, x_axis, y_axis

TOP = 8          # lines drawn: the ops largest at the largest size
W, H, LEFT, RIGHT, TOP_PX, BOTTOM = 1000.0, 520.0, 90.0, 30.0, 20.0, 60.0


def _drawn(sweep: Sweep) -> list[Growth]:
    k = len(sweep.profiles) - 1
    return sorted((g for g in sweep.growth if g.medians_ns[k]),
                  key=lambda g: -(g.medians_ns[k] or 0))[:TOP]


def _line(g: Growth, xs: list[int], sx: Scale, sy: Scale, colour: str, symbol: str) -> str:
    pts = [(sx(x), sy(m), x, m) for x, m in zip(xs, g.medians_ns) if m]
    path = " ".join(f"{'M' if i == 0 else 'L'}{px:.1f},{py:.1f}"
                    for i, (px, py, _, _) in enumerate(pts))
    slope = f"{symbol}^{g.exponent:.2f}" if g.exponent is not None else "-"
    dots = "".join(tag("circle", title(f"{g.name}: {duration(m)} at {symbol}={x}"), cx=px,
                       cy=py, r=4.0, fill=colour, class_="point", data_op=g.name)
                   for px, py, x, m in pts)
    return tag("g", tag("path", d=path, fill="none", stroke=colour, stroke_width=2.0) + dots,
               class_="series", data_op=g.name, data_exponent=slope)


def chart(sweep: Sweep) -> str:
    drawn = _drawn(sweep)
    xs = sweep.values[:len(sweep.profiles)]
    values = [m for g in drawn for m in g.medians_ns if m]
    if len(xs) < 2 or not values:
        return "<p>fewer than two sizes measured: nothing to draw</p>"
    sx = Scale.fit(min(xs), max(xs), LEFT, W - RIGHT, log=True)
    sy = Scale.fit(min(values), max(values), H - BOTTOM, TOP_PX, log=True)
    unit, per = unit_for(max(values))
    colours = palette.KIND_COLOURS
    body = [x_axis(sx, H - BOTTOM, TOP_PX, 1.0, f"{sweep.symbol} (log)",
                   fmt=lambda v: f"{v:g}"),
            y_axis(sy, LEFT, W - RIGHT, per, f"{sweep.mode} median ({unit}, log)")]
    body += [_line(g, xs, sx, sy, colours[i % len(colours)], sweep.symbol)
             for i, g in enumerate(drawn)]
    keys = [(f"{g.name} ({sweep.symbol}^{g.exponent:.2f})" if g.exponent is not None
             else g.name, colours[i % len(colours)]) for i, g in enumerate(drawn)]
    return legend(keys) + svg(W, H, body, class_="chart sweep", data_symbol=sweep.symbol)


def render(sweep: Sweep) -> str:
    """The sweep as one self-contained HTML document."""
    sub = (f"{len(sweep.growth)} ops at {sweep.symbol} = "
           f"{', '.join(map(str, sweep.values[:len(sweep.profiles)]))}"
           + "".join(f"; {k}={v}" for k, v in sweep.fixed.items()))
    return document("minigraph sweep", sub, [
        section("growth", f"Time against {sweep.symbol}, per op (log-log)",
                f"The {min(TOP, len(sweep.growth))} ops largest at the largest size; on these "
                "axes a line of slope k grows as the size to the k (1: linear, 2: quadratic).",
                chart(sweep)),
        section("table", "Per op", "", f"<pre>{esc(render_sweep(sweep))}</pre>")],
        "sweep")
