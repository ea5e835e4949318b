"""Profile files: versioned JSON (and loading it back), CSV, Chrome trace, msgpack raw samples.

Every file is written atomically (temp file in the same directory, then rename).
"""
from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

from ..errors import InputError
from ..fileio import write_atomic  # noqa: F401  (re-exported for the CLI)
from ..profile import Profile
from ..timing import Stats
from .table import PER_OP_MODES

FORMAT = "minigraph-profile/1"
MAX_PROFILE_BYTES = 512 << 20


def to_json(profile: Profile) -> str:
    return json.dumps(profile.to_dict(), indent=1)


def from_dict(doc: object, source: str = "profile") -> Profile:
    """A saved profile back into a Profile; anything foreign or corrupt is an InputError."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise InputError(f"{source}: not a minigraph profile (expected format '{FORMAT}')")
    try:
        ops = [dict(o) for o in doc["ops"]]
        samples = {str(m): [[float(x) for x in row] for row in rows]
                   for m, rows in dict(doc["samples_ns"]).items()}
        for o in ops:
            _ = (int(o["index"]), str(o["name"]), str(o["func_name"]), str(o["kind"]),
                 str(o["hash"]), list(o["shapes"]), dict(o["layouts"]))
        for m, rows in samples.items():
            if len(rows) > len(ops):
                raise ValueError(f"mode {m} has {len(rows)} rows for {len(ops)} ops")
        return Profile(ops, dict(doc["settings"]), samples,
                       [dict(c) for c in doc.get("first_run_counters", [])],
                       [float(x) for x in doc.get("e2e_ns", [])],
                       {str(k): [float(x) for x in v] for k, v in dict(doc.get("warmup_ns", {})).items()},
                       dict(doc.get("env", {})), dict(doc.get("threads", {})), bool(doc.get("partial")))
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise InputError(f"{source}: corrupt minigraph profile ({type(err).__name__}: {err})") from err


def load_profile(path: str | os.PathLike) -> Profile:
    p = Path(path)
    try:
        if p.stat().st_size > MAX_PROFILE_BYTES:
            raise InputError(f"{p}: larger than {MAX_PROFILE_BYTES >> 20} MiB; not a profile")
        doc = json.loads(p.read_bytes())
    except OSError as err:
        raise InputError(f"{p}: cannot read ({err.strerror or err})") from err
    except (ValueError, RecursionError) as err:
        raise InputError(f"{p}: not JSON ({err})") from err
    return from_dict(doc, str(p))


def to_csv(profile: Profile) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    modes = [m for m in PER_OP_MODES if m in profile.samples]
    w.writerow(["index", "name", "func_name", "kind", "hash", "shapes"]
               + [f"{m}_median_us" for m in modes] + [f"{m}_iqr_us" for m in modes])
    for op in profile.ops:
        stats = [Stats.of(profile.samples[m][op["index"]]) if op["index"] < len(profile.samples[m])
                 else None for m in modes]
        w.writerow([op["index"], op["name"], op["func_name"], op["kind"], op["hash"],
                    "; ".join(f"{t}{s}" for t, s in op["shapes"])]
                   + [f"{s.median_ns / 1e3:.3f}" if s else "" for s in stats]
                   + [f"{s.iqr_ns / 1e3:.3f}" if s else "" for s in stats])
    return buf.getvalue()


def to_trace(profile: Profile) -> dict:
    """Chrome / Perfetto trace-event JSON: one track (tid) per mode, ops as complete events."""
    events = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "minigraph"}}]
    for tid, mode in enumerate(m for m in PER_OP_MODES if m in profile.samples):
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


def to_msgpack(profile: Profile) -> bytes:
    import msgpack
    return msgpack.packb(profile.to_dict(), use_bin_type=True)


def from_msgpack(data: bytes, source: str = "raw samples") -> Profile:
    """Reads raw samples with size limits and strict types (never arbitrary objects)."""
    import msgpack
    if len(data) > MAX_PROFILE_BYTES:
        raise InputError(f"{source}: larger than {MAX_PROFILE_BYTES >> 20} MiB; not a profile")
    try:
        doc = msgpack.unpackb(data, raw=False, strict_map_key=True)
    except (ValueError, TypeError, msgpack.exceptions.ExtraData,
            msgpack.exceptions.FormatError, msgpack.exceptions.StackError) as err:
        raise InputError(f"{source}: not a minigraph msgpack file ({err})") from err
    return from_dict(doc, source)
