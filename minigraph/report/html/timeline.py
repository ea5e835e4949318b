"""A timeline of one pass: lanes (one per thread, or per pass) of op spans on a time axis.

The chart takes spans as (op index, start_ns, end_ns) per lane, which is what a recorded pass
gives (the clock around each op, the gaps between ops included). Where a profile carries no
recorded pass, ``laid_end_to_end`` builds lanes from the single-sample modes' per-op times put
back to back from 0, and the chart says plainly that it is not a recorded timeline.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...results.modes import BY_NAME, PER_OP
from ...results.profile import Profile
from . import palette
from .charts import legend
from .svg import Scale, duration, esc, middle_cut, svg, tag, title, unit_for, x_axis

Span = tuple[int, float, float]  # (op index, start_ns, end_ns)
LANE_H, LABEL_W = 26, 250


@dataclass(frozen=True)
class Timeline:
    lanes: dict[str, list[Span]]    # lane name (thread, or pass) -> spans in time order
    recorded: bool                  # False: per-op times laid end to end, not a real pass
    what: str                       # one line: where the spans come from


def recorded(profile: Profile) -> Timeline | None:
    """Lanes from the real passes a profile recorded (``Profile.timeline``: mode -> a pass
    with ``op_start_ns`` / ``op_end_ns`` and its threads' CPU time per op, where the profiler
    records them): the main thread's op windows as they happened, gaps included, and for every
    other thread (pool workers) the CPU time it spent inside each op's window, drawn from the
    op's start. None when the profile has no recorded pass."""
    passes = getattr(profile, "timeline", None) or {}
    lanes: dict[str, list[Span]] = {}
    for mode, real in passes.items():
        starts, ends = list(real.op_start_ns), list(real.op_end_ns)
        lanes[f"{mode}: main thread"] = [(i, float(s), float(e))
                                         for i, (s, e) in enumerate(zip(starts, ends))]
        for t in getattr(real, "threads", []):
            if t.role == "main":
                continue
            busy = [(i, float(starts[i]), float(starts[i] + cpu)) for i in range(len(starts))
                    if (cpu := t.op_cpu_ns(i))]
            if busy:
                lanes[f"{mode}: {t.name} {t.tid} (CPU in op)"] = busy
    if not lanes:
        return None
    return Timeline(lanes, True, "one recorded pass per single-sample mode: the main thread's "
                    "op windows on the clock, other threads' CPU time inside each op")


def laid_end_to_end(profile: Profile) -> Timeline | None:
    """One lane per single-sample mode (first-run, one-pass): its per-op times back to back."""
    lanes: dict[str, list[Span]] = {}
    for mode in (m for m in PER_OP if BY_NAME[m].one_sample and m in profile.samples):
        t, spans = 0.0, []
        for op in profile.ops:
            ns = profile.median(mode, op["index"])
            if ns is not None:
                spans.append((op["index"], t, t + ns))
                t += ns
        if spans:
            lanes[mode] = spans
    if not lanes:
        return None
    return Timeline(lanes, False, "per-op times of " + " and ".join(lanes) + " laid end to "
                    "end from 0: no gaps between ops, no worker threads")


def chart(tl: Timeline, ops: list[dict], width: float = 1300) -> str:
    kinds = palette.kinds([op["kind"] for op in ops])
    end = max((s[2] for spans in tl.lanes.values() for s in spans), default=1.0)
    start = min((s[1] for spans in tl.lanes.values() for s in spans), default=0.0)
    unit, per = unit_for(end - start)
    scale = Scale.fit(0.0, end - start, LABEL_W + 10, width - 20)
    body = []
    for k, (lane, spans) in enumerate(tl.lanes.items()):
        y = 8 + k * LANE_H
        body.append(tag("text", esc(middle_cut(lane, 36)), x=LABEL_W, y=y + 15,
                        class_="lane-label", text_anchor="end"))
        for i, t0, t1 in spans:
            op = ops[i] if 0 <= i < len(ops) else {"name": f"op {i}", "kind": "?"}
            x0, x1 = scale(t0 - start), scale(t1 - start)
            tip = (f"op {i} {op['name']} ({op['kind']})\n{lane}: starts at "
                   f"{duration(t0 - start)}, takes {duration(t1 - t0)}")
            body.append(tag("rect", title(tip), x=x0, y=y, width=max(x1 - x0, 0.6),
                            height=LANE_H - 6, fill=kinds.get(op["kind"], "#999"),
                            class_="span", data_op=i, data_lane=lane, stroke="#fff",
                            stroke_width=0.4))
    axis_y = 8 + len(tl.lanes) * LANE_H + 2
    label = "time since the pass started (" + unit + ")" + \
        ("" if tl.recorded else " (not a recorded timeline)")
    drawing = svg(width, axis_y + 42, [x_axis(scale, axis_y, 6, per, label), *body],
                  class_="timeline", data_recorded=str(tl.recorded).lower())
    note = "" if tl.recorded else \
        '<p class="intro"><b>(not a recorded timeline)</b> ' + esc(tl.what) + ".</p>"
    return note + legend(sorted(kinds.items())) + drawing
