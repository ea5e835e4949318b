"""The top ops' first-run excess split into causes: one stacked bar per op.

Components whose 90% interval lies above zero are stacked in ladder order, each in its cause's
colour with its interval drawn under it (from the segment's start); the components whose
interval includes zero are not drawn as costs, negative or positive: their net is one hatched
"unresolved" segment (when positive) and the tooltip lists them. A component resolved below
zero (the warm-up made the op slower) is drawn left of zero. The black mark is the op's excess
(first rung minus last) with its interval: the segments telescope to it.
"""
from __future__ import annotations

from ...results.attribution import Attribution, Interval
from ...results.diagnosis import Diagnosis
from ...results.rungs import label
from . import palette
from .charts import legend
from .svg import Scale, duration, esc, middle_cut, svg, tag, title, unit_for, whisker, x_axis

ROW_H, BAR_H, LABEL_W, RIGHT_W = 40, 14, 300, 190


def _iv(x: Interval) -> str:
    return f"{duration(x.median_ns)} [{duration(x.lo_ns)}, {duration(x.hi_ns)}]"


def split(att: Attribution, i: int) -> tuple[list[str], list[str], list[str]]:
    """(resolved above zero, resolved below zero, unresolved) component keys of op ``i``."""
    pos = [k for k in att.components if att.components[k][i].lo_ns > 0]
    neg = [k for k in att.components if att.components[k][i].hi_ns < 0]
    return pos, neg, [k for k in att.components if k not in pos and k not in neg]


def _extent(att: Attribution, ops: list[int]) -> tuple[float, float]:
    lo, hi = 0.0, 1.0
    for i in ops:
        pos, neg, unres = split(att, i)
        c = att.components
        net = sum(c[k][i].median_ns for k in unres)
        right = sum(c[k][i].median_ns for k in pos) + max(net, 0.0)
        hi = max(hi, right, att.excess[i].hi_ns, *(c[k][i].hi_ns for k in pos))
        lo = min(lo, sum(c[k][i].median_ns for k in neg), att.excess[i].lo_ns)
    return lo, hi


def _resolved(att: Attribution, i: int, keys: list[str], scale: Scale, y: float, name: str,
              sign: int) -> tuple[list[str], float]:
    """The resolved components stacked from zero (``sign`` 1: rightwards, each with its
    interval under it; -1: leftwards, faded); returns the drawing and where the stack ends."""
    out, at = [], 0.0
    for k in keys:
        iv = att.components[k][i]
        x0, x1 = sorted((scale(at), scale(at + iv.median_ns)))
        what = label(k) if sign > 0 else f"{label(k)} (made it faster to skip)"
        out.append(tag("rect", title(f"op {i} {name}\n{what}: {_iv(iv)}"), x=x0, y=y,
                       width=max(x1 - x0, 0.8), height=BAR_H, fill=palette.cause(k),
                       class_="bar cause" + ("" if sign > 0 else " negative"), data_op=i,
                       data_cause=k, opacity=None if sign > 0 else 0.6))
        if sign > 0:
            out.append(whisker(scale(at + iv.lo_ns), scale(at + iv.hi_ns), y + BAR_H + 5, 2.5))
        at += iv.median_ns
    return out, at


def _row(diag: Diagnosis, att: Attribution, i: int, scale: Scale, y: float) -> list[str]:
    pos, neg, unres = split(att, i)
    name = diag.ops[i]["name"]
    out = [tag("text", esc(middle_cut(f"#{i} {name}", 44)), x=LABEL_W, y=y + BAR_H - 2,
               class_="row-label", text_anchor="end")]
    drawn, at = _resolved(att, i, pos, scale, y, name, 1)
    out += drawn + _resolved(att, i, neg, scale, y, name, -1)[0]
    if unres:
        net = sum(att.components[k][i].median_ns for k in unres)
        listed = "\n".join(f"  {label(k)}: {_iv(att.components[k][i])}" for k in unres)
        tip = (f"op {i} {name}\nunresolved (interval includes 0), net {duration(net)}:\n"
               f"{listed}")
        x0, x1 = scale(at), scale(at + max(net, 0.0))
        out.append(tag("rect", title(tip), x=x0, y=y, width=max(x1 - x0, 0.8), height=BAR_H,
                       fill=palette.UNRESOLVED, stroke="#9a9a9a", stroke_width=0.6,
                       class_="bar unresolved", data_op=i, data_cause="unresolved"))
    ex = att.excess[i]
    xe = scale(ex.median_ns)
    out.append(tag("path", title(f"op {i} {name}\nfirst-run excess: {_iv(ex)}"),
                   d=f"M{xe:.1f},{y - 4:.1f}V{y + BAR_H + 2:.1f}", class_="excess-mark",
                   stroke="#000", stroke_width=2.5))
    out.append(whisker(scale(ex.lo_ns), scale(ex.hi_ns), y - 4, cap=2.5))
    out.append(tag("text", esc(("+" if ex.median_ns >= 0 else "") + _iv(ex)), x=scale.px1 + 8,
                   y=y + BAR_H - 2, class_="note"))
    return out


def chart(diag: Diagnosis, att: Attribution, top: int, width: float = 1300) -> str:
    ops = att.ranked()[:top]
    lo, hi = _extent(att, ops)
    unit, per = unit_for(hi)
    scale = Scale.fit(lo, hi, LABEL_W + 10, width - RIGHT_W)
    body = []
    for k, i in enumerate(ops):
        body += _row(diag, att, i, scale, 14 + k * ROW_H)
    axis_y = 14 + len(ops) * ROW_H
    used = [k for k in att.components if any(k in split(att, i)[0] + split(att, i)[1]
                                              for i in ops)]
    keys = legend([(label(k), palette.cause(k)) for k in used]
                  + [("unresolved (interval includes 0)", palette.UNRESOLVED)],
                  '<span class="key"><b>|</b>&nbsp;first-run excess [90% interval]</span>')
    return keys + svg(width, axis_y + 42, [
        x_axis(scale, axis_y, 6, per, f"share of the op's first-run excess ({unit})"),
        *body], class_="causes")
