"""TVM's measuring protocols side by side: per op (one bar per protocol, with the ladder's
steady state beside them) and in total (each protocol's reported time, its samples' range, and
the references the text report compares them with)."""
from __future__ import annotations

import math

from ...results.attribution import Attribution
from ...results.diagnosis import Diagnosis
from ...results.protocols import ProtocolResult
from . import palette
from .charts import Bar, Row, hbars_figure, legend
from .page import lines
from .svg import Scale, duration, esc, svg, tag, title, unit_for, whisker, x_axis

STEADY = "steady state (ladder rung f)"
STEADY_COLOUR = "#9aa4ae"


def _spread(values: list[float | None]) -> float:
    xs = [v for v in values if v is not None and math.isfinite(v)]
    return max(xs) - min(xs) if len(xs) > 1 else 0.0


def per_op(diag: Diagnosis, results: list[ProtocolResult], att: Attribution | None) -> str:
    per = [r for r in results if r.per_op_ns is not None and not r.skipped]
    if not per:
        return ""
    steady = att.rung_ns.get("f") if att is not None else None
    rows = []
    for i, op in enumerate(diag.ops):
        values = [r.per_op_ns[i] if i < len(r.per_op_ns) else None for r in per]
        bars = [None if v is None else Bar(r.key, v, palette.protocol(r.key),
                                           f"op {i} {op['name']}\n{r.key}: {duration(v)}",
                                           data={"protocol": r.key, "op": i})
                for r, v in zip(per, values)]
        if steady is not None:
            s = steady[i]
            bars.append(Bar(STEADY, s.median_ns, STEADY_COLOUR, f"op {i} {op['name']}\n"
                            f"{STEADY}: {duration(s.median_ns)} [{duration(s.lo_ns)}, "
                            f"{duration(s.hi_ns)}]", s.lo_ns, s.hi_ns,
                            data={"protocol": "steady", "op": i}))
        tip = f"op {i} {op['name']}\nspread across protocols: {duration(_spread(values))}"
        rows.append(Row(f"#{i} {op['name']}", tip, tuple(bars),
                        {"exec": i, "spread": -_spread(values)}))
    hi = max((b.value for r in rows for b in r.bars if b), default=1.0)
    unit, per_unit = unit_for(hi)
    keys = [(r.key, palette.protocol(r.key)) for r in per]
    keys += [(STEADY, STEADY_COLOUR)] if steady is not None else []
    return legend(keys) + hbars_figure(rows, f"time per op ({unit})", per_unit,
                                       {"exec": "execution", "spread": "spread"}, "exec",
                                       "protocols-per-op")


def totals(results: list[ProtocolResult], att: Attribution | None, width: float = 1300) -> str:
    """Each protocol's total (bar), its samples' min-max (whisker), and reference lines:
    benchmark_e2e and the ladder's steady state."""
    ran = [r for r in results if not r.skipped]
    if not ran:
        return ""
    refs = [(f"benchmark_e2e {duration(r.total_ns)}", r.total_ns, palette.protocol(r.key))
            for r in ran if r.key == "benchmark_e2e"]
    if att is not None and "f" in att.rung_total:
        f = att.rung_total["f"]
        refs.append((f"steady state, rung f {duration(f.median_ns)}", f.median_ns, "#555"))
    hi = max([max(r.samples_ns + (r.total_ns,)) for r in ran] + [v for _, v, _ in refs])
    unit, per = unit_for(hi)
    label_w, row_h = 230, 26
    scale = Scale.fit(0.0, hi, label_w + 10, width - 30)
    body = []
    for k, r in enumerate(ran):
        y = 8 + k * row_h
        tip = (f"{r.key}: {duration(r.total_ns)} ({len(r.samples_ns)} samples, min "
               f"{duration(min(r.samples_ns))}, max {duration(max(r.samples_ns))})\n"
               f"{r.description}" + "".join(f"\nnote: {n}" for n in r.notes))
        body.append(tag("text", esc(r.key), x=label_w, y=y + 13, class_="row-label",
                        text_anchor="end"))
        body.append(tag("rect", title(tip), x=scale.px0, y=y, width=scale(r.total_ns) -
                        scale.px0, height=16, fill=palette.protocol(r.key), class_="bar total",
                        data_protocol=r.key))
        if len(r.samples_ns) > 1:
            body.append(whisker(scale(min(r.samples_ns)), scale(max(r.samples_ns)), y + 8, 4))
        body.append(tag("text", esc(duration(r.total_ns)), x=scale(max(r.samples_ns +
                        (r.total_ns,))) + 8, y=y + 13, class_="note"))
    axis_y = 8 + len(ran) * row_h
    for text, v, colour in refs:
        x = scale(v)
        body.append(tag("line", title(text), x1=x, x2=x, y1=2, y2=axis_y, class_="ref",
                        stroke=colour))
    drawing = svg(width, axis_y + 42, [x_axis(scale, axis_y, 4, per,
                                              f"model time as each protocol reports it ({unit})"),
                                       *body], class_="protocol-totals")
    return legend([(t, c) for t, _, c in refs], '<span class="key">whisker: min-max of the '
                  "protocol's samples; dashed lines: references</span>") + drawing


def skipped(results: list[ProtocolResult]) -> str:
    gone = [f"{r.key}: " + "; ".join(r.notes) for r in results if r.skipped]
    return lines(gone) if gone else ""
