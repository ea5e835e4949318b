"""Two profiles -> the comparison's HTML report: per-op ratio B/A with an interval, the band of
noise each op had to leave to count as a change, the verdicts marked, the summary line.

The verdicts, ratios and summary line are ``report.compare``'s (the text report's); the 90%
interval drawn around each ratio is the op's ``Delta.interval`` (measure/significance.py).
"""
from __future__ import annotations

import math

from ...analysis.comparison import Comparison
from ...analysis.contention import warning
from ...measure.significance import Delta, Significance
from .. import findings
from ..compare import mode_label, shift_line, summary_line
from .charts import legend
from .page import cards, document, lines, section, warnings
from .svg import duration, esc, middle_cut, svg, tag, title

COLOURS = {"slower": "#c0392b", "faster": "#1a9850"}
ROW_H, LABEL_W, RIGHT_W = 22, 330, 230
TICKS = sorted({m * 10.0 ** k for k in range(-5, 6) for m in (1, 2, 5)}
               | {0.8, 0.9, 0.95, 1.05, 1.1, 1.25, 1.5})  # shown where 44 px apart


def _finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def _span(rows: list[Delta], shift: float = 1.0) -> float:
    """Half-width of the log axis, symmetric around 1x."""
    m = math.log(1.1)
    for d in rows:
        ends = [d.ratio, *(d.interval or ()),
                shift * (1 + d.noise) if _finite(d.noise) else 1.0,
                shift / (1 + d.noise) if _finite(d.noise) else 1.0]
        m = max([m] + [abs(math.log(v)) for v in ends if _finite(v) and v > 0])
    return m * 1.08


def _row(d: Delta, k: int, x: "_LogX", index: int | None, shift: float = 1.0) -> str:
    """One op's row (group translated to its slot; the page's script can re-order); an op
    without a ratio (nothing to compare) keeps its label and says so."""
    band = f" (a change had to exceed ±{d.noise:.1%})" if _finite(d.noise) else ""
    tip = (f"{d.name}\nA: {duration(d.a.median_ns)} (n={d.a.n}), B: {duration(d.b.median_ns)} "
           f"(n={d.b.n})\nB/A {d.ratio:.3f}x" + (f", p={d.p:.2g}" if d.p is not None else "")
           + f"\nverdict: {d.verdict}{band}")
    iv = d.interval
    if iv:
        tip += f"\n90% interval of B/A: [{iv[0]:.3f}, {iv[1]:.3f}]"
    y, mid = 0.0, ROW_H / 2
    name = d.name if index is None else f"#{index} {d.name}"
    out = [tag("text", esc(middle_cut(name, 50)), x=LABEL_W, y=mid + 4, class_="row-label",
               text_anchor="end")]
    if _finite(d.noise):
        lo, hi = x(shift / (1 + d.noise)), x(shift * (1 + d.noise))  # around the whole run
        out.append(tag("rect", x=lo, y=y + 2, width=hi - lo, height=ROW_H - 4, fill="#eceff2",
                       class_="noise-band"))
    if not (_finite(d.ratio) and d.ratio > 0):
        out.append(tag("text", esc(f"{d.verdict}: no ratio"), x=x.px1 + 12, y=mid + 4,
                       class_="tick"))
        return tag("g", "".join(out), class_="row", transform=f"translate(0,{6 + k * ROW_H})",
                   data_k_exec=k, data_k_ratio=1e9)
    if iv:
        out.append(tag("path", d=f"M{x(iv[0]):.1f},{mid:.1f}H{x(iv[1]):.1f}", class_="whisker"))
    sure = d.verdict in COLOURS
    out.append(tag("circle", title(tip), cx=x(d.ratio), cy=mid, r=5 if sure else 4,
                   fill=COLOURS.get(d.verdict, "#fff"), stroke=COLOURS.get(d.verdict, "#666"),
                   stroke_width=1.5, class_="ratio" + (" significant" if sure else ""),
                   data_verdict=d.verdict, data_op=index if index is not None else ""))
    text = f"{100 * (d.ratio - 1):+.1f}%  {d.verdict}"
    out.append(tag("text", esc(text), x=x.px1 + 12, y=mid + 4, class_="note" if sure else "tick"))
    return tag("g", "".join(out), class_="row", transform=f"translate(0,{6 + k * ROW_H})",
               data_k_exec=k, data_k_ratio=f"{-abs(math.log(d.ratio)) if d.ratio > 0 else 0:.6g}"
               if index is not None else 1e9)  # the e2e row stays last


class _LogX:
    def __init__(self, half: float, px0: float, px1: float):
        self.half, self.px0, self.px1 = half, px0, px1

    def __call__(self, ratio: float) -> float:
        t = (math.log(max(ratio, 1e-9)) + self.half) / (2 * self.half)
        return self.px0 + min(max(t, 0.0), 1.0) * (self.px1 - self.px0)


def ratio_chart(cmp: Significance, width: float = 1300) -> str:
    rows = list(cmp.deltas) + ([cmp.e2e] if cmp.e2e is not None else [])
    x = _LogX(_span(rows, cmp.shift), LABEL_W + 10, width - RIGHT_W)
    body = [_row(d, k, x, k if k < len(cmp.deltas) else None, cmp.shift)
            for k, d in enumerate(rows)]
    axis_y = 6 + len(rows) * ROW_H
    axis = [tag("line", x1=x.px0, x2=x.px1, y1=axis_y, y2=axis_y, class_="axis"),
            tag("line", x1=x(1.0), x2=x(1.0), y1=0, y2=axis_y, class_="axis")]
    shown: list[float] = []
    for t in sorted(TICKS, key=lambda t: abs(math.log(t))):  # 1x first, then outwards
        if abs(math.log(t)) <= x.half and all(abs(x(t) - p) >= 44 for p in shown):
            shown.append(x(t))
            axis.append(tag("line", x1=x(t), x2=x(t), y1=0, y2=axis_y, class_="grid"))
            axis.append(tag("text", f"{t:g}x", x=x(t), y=axis_y + 15, class_="tick",
                            text_anchor="middle"))
    axis.append(tag("text", "B / A (median ratio, log scale; left of 1x: B faster)",
                    x=(x.px0 + x.px1) / 2, y=axis_y + 32, class_="axis-label",
                    text_anchor="middle"))
    return svg(width, axis_y + 42, axis + [tag("g", "".join(body), class_="rows",
                                               data_y0=6, data_rowh=ROW_H)], class_="ratios")


def render(c: Comparison) -> str:
    """The comparison of two profiles as one self-contained HTML document."""
    a, b, paths = c.a, c.b, c.paths
    cmp, matched = c.ops.tested, c.ops.matched
    line, shift = summary_line(cmp), shift_line(cmp)
    head = [(c.ops.findings[0].cls, "verdict"),
            (f"{len(cmp.differ)} of {len(cmp.deltas)}", "ops differ"),
            (f"{cmp.geomean:.3f}x" if cmp.geomean == cmp.geomean else "-",
             "geometric mean of B/A")]
    if cmp.e2e is not None:
        head.append((f"{cmp.e2e.ratio:.3f}x", f"e2e B/A ({cmp.e2e.verdict})"))
    busy = [w for w in (warning(p.contention, f"{n}'s measurements") for n, p in
                        (("A", a), ("B", b))) if w]
    keys = legend([("slower", COLOURS["slower"]), ("faster", COLOURS["faster"]),
                   ("noise band: the change an op had to exceed (around the whole-run shift)",
                    "#eceff2")],
                  '<span class="key">○ not a change &nbsp; — 90% interval of B/A</span>')
    intro = (f"Each op's median in B over A ({mode_label(c)}). A change is marked where compare's "
             "verdict (the text report's) says so: outside the op's noise band and, with "
             f"several samples a side, Mann-Whitney p < {cmp.alpha:g}; hover a point for the "
             "numbers.")
    order = ('<div class="controls"><span class="sep">order</span><button type="button" '
             'data-order="exec" class=on>execution</button><button type="button" '
             'data-order="ratio">size of change</button></div>')
    only = [f"{len(matched.only_a)} ops of A not matched in B (by {matched.by})"] \
        if matched.only_a else []
    return document("minigraph compare", f"A: {paths[0]}  vs  B: {paths[1]}; {mode_label(c)}", [
        cards(head),
        section("verdict", "Why they differ", "", lines(findings.render(c.ops.findings))),
        f'<p class="intro"><b>{esc(line)}</b></p>',
        *([f'<p class="intro">{esc(shift)}</p>'] if shift else []), warnings(busy + only),
        section("ratios", "Per-op ratio B / A", intro,
                keys + f'<div class="figure">{order}{ratio_chart(cmp)}</div>'),
        section("notes", "How to read it", "", lines([
            "B/A below 1x: B is faster; a filled point is a change, a hollow one is not.",
            "The interval is computed from each side's median and IQR; ops measured once "
            "(single-sample modes) have none."]))], "compare")
