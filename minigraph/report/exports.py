"""Renderings of a Profile for other tools: CSV (spreadsheets) and Chrome / Perfetto traces.

The profile's own serialisation (JSON, msgpack) lives with the data, in profile/files.py.
"""
from __future__ import annotations

import csv
import io

from ..measure.stats import Stats
from ..profile.model import Profile
from ..profile.modes import PER_OP
from ..profile.roofline import rooflines


def to_csv(profile: Profile) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    modes = [m for m in PER_OP if m in profile.samples]
    w.writerow(["index", "name", "func_name", "kind", "hash", "shapes"]
               + [f"{m}_median_us" for m in modes] + [f"{m}_iqr_us" for m in modes]
               + ["flops", "gflops", "pct_peak", "roofline_flagged"])
    roof = {r.index: r for r in rooflines(profile)}
    for op in profile.ops:
        r = roof.get(op["index"])
        stats = [Stats.of(profile.samples[m][op["index"]]) if op["index"] < len(profile.samples[m])
                 else None for m in modes]
        w.writerow([op["index"], op["name"], op["func_name"], op["kind"], op["hash"],
                    "; ".join(f"{t}{s}" for t, s in op["shapes"])]
                   + [f"{s.median_ns / 1e3:.3f}" if s else "" for s in stats]
                   + [f"{s.iqr_ns / 1e3:.3f}" if s else "" for s in stats]
                   + [f"{op['flops']:.0f}" if op.get("flops") is not None else "",
                      f"{r.gflops:.2f}" if r else "",
                      f"{r.pct_peak:.1f}" if r and r.pct_peak is not None else "",
                      str(int(r.flagged)) if r else ""])
    return buf.getvalue()


def to_trace(profile: Profile) -> dict:
    """Chrome / Perfetto trace-event JSON: one track (tid) per mode, ops as complete events."""
    events = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "minigraph"}}]
    for tid, mode in enumerate(m for m in PER_OP if m in profile.samples):
        events.append({"ph": "M", "name": "thread_name", "pid": 1, "tid": tid,
                       "args": {"name": mode}})
        ts = 0.0
        for op in profile.ops:
            rows = profile.samples[mode]
            if op["index"] >= len(rows) or not rows[op["index"]]:
                continue
            dur = Stats.of(rows[op["index"]]).median_ns / 1e3
            events.append({"ph": "X", "name": op["name"], "cat": op["kind"], "pid": 1,
                           "tid": tid, "ts": round(ts, 3), "dur": round(dur, 3),
                           "args": {"func_name": op["func_name"], "hash": op["hash"],
                                    "shapes": op["shapes"], "samples": len(rows[op["index"]])}})
            ts += dur
    return {"traceEvents": events, "displayTimeUnit": "ns"}
