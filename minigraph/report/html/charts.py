"""The two chart shapes most pictures are made of: grouped horizontal bars (one row per op,
one bar per mode or protocol, re-orderable, log or linear) and the waterfall (totals and the
signed steps between them, with intervals). Values arrive in a base unit (ns for times) and are
drawn divided by ``per_unit``; the callers build the tooltips from the report's own numbers.
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

from .palette import SWATCH
from .svg import (
    Scale,
    duration,
    esc,
    middle_cut,
    number,
    svg,
    tag,
    title,
    whisker,
    x_axis,
    x_ticks_above,
    y_axis,
)

BAR_H, BAR_GAP, ROW_GAP = 7, 1, 9
CHUNK = 24  # rows per SVG: one printed page, about one screenful
LABEL_W = 330


@dataclass(frozen=True)
class Bar:
    series: str                      # legend entry (a mode, a protocol)
    value: float
    colour: str
    tip: str
    lo: float | None = None          # interval drawn as a whisker
    hi: float | None = None
    over_from: float | None = None   # hatched from here to ``value`` (the first-run excess)
    data: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Row:
    label: str
    tip: str
    bars: tuple[Bar | None, ...]     # one slot per series, None: not measured
    keys: dict[str, float]           # ordering name -> sort value (ascending)
    data: dict = field(default_factory=dict)


def legend(items: list[tuple[str, str]], extra: str = "") -> str:
    """An HTML legend: (label, CSS background) swatches in a row."""
    spans = "".join(f'<span class="key"><span class="sw" style="background:'
                    f'{esc(SWATCH.get(c, c))}"></span>{esc(label)}</span>' for label, c in items)
    return f'<div class="legend">{spans}{extra}</div>'


def _data(d: dict) -> dict:
    return {f"data_{k}": v for k, v in d.items()}


def _bar(b: Bar, scale: Scale, y: float) -> str:
    x0, x1 = scale.px0, scale(b.value)
    out = [tag("rect", title(b.tip), x=x0, y=y, width=max(x1 - x0, 0.8), height=BAR_H,
               fill=b.colour, class_="bar", data_series=b.series, **_data(b.data))]
    if b.over_from is not None and b.value > b.over_from:
        xs = scale(b.over_from)
        out.append(tag("rect", title(b.tip), x=xs, y=y, width=x1 - xs, height=BAR_H,
                       fill="url(#hatch-excess)", class_="excess", stroke="#c0392b",
                       stroke_width=0.6))
    if b.lo is not None and b.hi is not None:
        out.append(whisker(scale(b.lo), scale(b.hi), y + BAR_H / 2, cap=3))
    return "".join(out)


def _row_group(r: Row, scale: Scale, row_h: float, y: float) -> str:
    parts = [tag("text", esc(middle_cut(r.label, 52)) + title(r.tip), x=LABEL_W,
                 y=row_h / 2 - ROW_GAP / 2 + 4, class_="row-label", text_anchor="end")]
    parts += [_bar(b, scale, k * (BAR_H + BAR_GAP)) for k, b in enumerate(r.bars) if b]
    return tag("g", "".join(parts), class_="row", transform=f"translate(0,{y})",
               **{f"data_k_{k}": f"{v:.6g}" for k, v in r.keys.items()}, **_data(r.data))


def hbars(rows: list[Row], axis: str, per_unit: float, width: float = 1300,
          log: bool = False, order: str = "exec", name: str = "chart") -> str:
    """Grouped horizontal bars, one group per row, in SVGs of at most CHUNK rows that share
    one scale (each with its axis, so a printed page or a screenful can be read on its own);
    ``order`` picks the initial ordering among the rows' keys (the page's script re-orders
    them across the chunks by ``data-k-*``). A log scale is for durations in ns: its ticks
    name their own unit."""
    slots = max((len(r.bars) for r in rows), default=1)
    row_h = slots * (BAR_H + BAR_GAP) + ROW_GAP
    values = [v for r in rows for b in r.bars if b for v in (b.value, b.hi) if v]
    hi = max(values, default=1.0)
    lo = min((v for v in values if v > 0), default=hi / 10)
    scale = Scale.fit(lo if log else 0.0, hi, LABEL_W + 10, width - 20, log)
    ranked = sorted(rows, key=lambda r: r.keys.get(order, 0.0))
    label = axis.split(" (")[0] + " (log scale)" if log else axis
    fmt = duration if log else None
    out = []
    for chunk in [ranked[i:i + CHUNK] for i in range(0, len(ranked), CHUNK)] or [[]]:
        plot_h = max(len(chunk), 1) * row_h
        top = 22 if plot_h > 400 else 8  # a tall chart repeats its tick labels on top
        body = [_row_group(r, scale, row_h, top + k * row_h) for k, r in enumerate(chunk)]
        out.append(svg(width, top + plot_h + 42, [
            x_axis(scale, top + plot_h, top, per_unit, label, fmt),
            x_ticks_above(scale, 12, per_unit, fmt) if top > 8 else "",
            tag("g", "".join(body), class_="rows", data_y0=top, data_rowh=row_h,
                data_n=len(chunk))],
            class_=f"hbars {name}", data_scale="log" if log else "lin"))
    return "".join(out)


def wide_range(rows: list[Row]) -> bool:
    """True where the values span over two decades: log scale by default, else linear."""
    xs = [b.value for r in rows for b in r.bars if b and b.value > 0]
    return bool(xs) and max(xs) > 100 * min(xs)


def _button(attr: str, key: str, text: str, on: bool) -> str:
    return f'<button type="button" data-{attr}="{esc(key)}"{" class=on" if on else ""}>' \
           f"{esc(text)}</button>"


def hbars_figure(rows: list[Row], axis: str, per_unit: float, orders: dict[str, str],
                 order: str, name: str, both_scales: bool = True, width: float = 1300) -> str:
    """The chart in log and linear scale (one shown, log where the values span over two
    decades; buttons switch), with ordering buttons."""
    scales = (True, False) if both_scales else (False,)
    charts = "".join(hbars(rows, axis, per_unit, width, log, order, name) for log in scales)
    shown = "log" if both_scales and wide_range(rows) else "lin"
    buttons = "".join(_button("order", k, text, k == order) for k, text in orders.items())
    scale_buttons = ('<span class="sep">scale</span>' + _button("scale", "log", "log",
                     shown == "log") + _button("scale", "lin", "linear", shown == "lin")) \
        if both_scales else ""
    controls = f'<div class="controls"><span class="sep">order</span>{buttons}' \
               f"{scale_buttons}</div>" if len(orders) > 1 or both_scales else ""
    return f'<div class="figure" data-scale="{shown}">{controls}{charts}</div>'


@dataclass(frozen=True)
class Step:
    label: str
    value: float                     # a total: the level; a step: the signed change
    total: bool
    colour: str
    tip: str
    lo: float | None = None          # interval of the level (total) or of the change (step)
    hi: float | None = None
    note: str | None = None          # printed above the column (default: the value)
    data: dict = field(default_factory=dict)


def _levels(steps: list[Step]) -> list[tuple[float, float]]:
    """(bottom, top) of every column: totals stand on zero, steps float between levels."""
    out, level = [], 0.0
    for s in steps:
        new = s.value if s.total else level + s.value
        out.append((0.0, new) if s.total else (min(level, new), max(level, new)))
        level = new
    return out


def waterfall(steps: list[Step], axis: str, per_unit: float, unit: str, width: float = 1300,
              height: float = 420, name: str = "waterfall") -> str:
    spans, before = _levels(steps), _levels_before(steps)
    ends = [v for (b, t) in spans for v in (b, t)]
    ends += [v + (0.0 if s.total else lvl) for s, lvl in zip(steps, before)
             for v in (s.lo, s.hi) if v is not None]
    left, top, bottom = 80, 28, height - 110  # room for 7 label lines under each column
    scale = Scale.fit(min(ends + [0.0]), max(ends + [1e-9]), bottom, top)
    col_w = (width - left - 10) / max(len(steps), 1)
    body = [y_axis(scale, left, width - 10, per_unit, axis)]
    for k, (s, (b, t), lvl) in enumerate(zip(steps, spans, before)):
        x = left + k * col_w + col_w * 0.18
        w = col_w * 0.64
        cls = "bar total" if s.total else "bar step"
        body.append(tag("rect", title(s.tip), x=x, y=scale(t), width=w,
                        height=max(scale(b) - scale(t), 1.0), fill=s.colour, class_=cls,
                        **_data(s.data)))
        if s.lo is not None and s.hi is not None:
            base = 0.0 if s.total else lvl
            body.append(whisker(scale(base + s.lo), scale(base + s.hi), x + w / 2, 5, True))
        if k + 1 < len(steps):  # the level carried to the next column
            y = scale(t if s.total or s.value >= 0 else b)
            body.append(tag("line", x1=x + w, x2=x + col_w, y1=y, y2=y, class_="connector"))
        note = s.note if s.note is not None else \
            ("" if s.total else ("+" if s.value >= 0 else "−")) + number(abs(s.value) / per_unit)
        y_note = scale(t) - 6
        if s.hi is not None:  # above the whisker's top too
            y_note = min(y_note, scale((0.0 if s.total else lvl) + s.hi) - 6)
        body.append(tag("text", esc(note), x=x + w / 2, y=y_note, class_="note",
                        text_anchor="middle"))
        chars = max(8, int(col_w / 6.4))  # 11 px text: about 6.4 px a character
        wrapped = [ln for para in s.label.split("\n") for ln in textwrap.wrap(para, chars)]
        for j, line in enumerate(wrapped[:7]):
            body.append(tag("text", esc(line), x=x + w / 2, y=bottom + 16 + 13 * j,
                            class_="col-label", text_anchor="middle"))
    return svg(width, height, body, class_=f"waterfall {name}", data_unit=unit)


def _levels_before(steps: list[Step]) -> list[float]:
    out, level = [], 0.0
    for s in steps:
        out.append(level)
        level = s.value if s.total else level + s.value
    return out
