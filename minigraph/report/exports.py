"""Profile files: versioned JSON (and loading it back), CSV, Chrome trace, msgpack raw samples.

Every file is written atomically (temp file in the same directory, then rename). Loading is
defensive: files are size-checked before they are read, msgpack is decoded with per-object
limits and no extension types, and the decoded document is validated (profile_schema.py)
before any report touches it. Nothing is ever unpickled.
"""
from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

from ..errors import InputError, last_line
from ..fileio import write_atomic  # noqa: F401  (re-exported for the CLI)
from ..profile import Profile
from ..timing import Stats
from .profile_schema import FORMAT, check_profile_doc  # noqa: F401  (FORMAT re-exported)
from .table import PER_OP_MODES

MAX_PROFILE_BYTES = 64 << 20  # a ResNet-50 profile is ~100 KiB; decoded JSON grows ~10x
# msgpack limits: strings are names and env text, arrays are per-op sample rows; a saved
# profile never holds bin or ext values, so those are refused outright
_MSGPACK_LIMITS = {"max_str_len": 1 << 20, "max_bin_len": 0, "max_ext_len": 0,
                   "max_array_len": 1 << 22, "max_map_len": 1 << 16}


def to_json(profile: Profile) -> str:
    return json.dumps(profile.to_dict(), indent=1)


def from_dict(doc: object, source: str = "profile") -> Profile:
    """A saved profile back into a Profile; anything foreign or corrupt is an InputError."""
    check_profile_doc(doc, source)
    assert isinstance(doc, dict)  # for type checkers: check_profile_doc guarantees it
    return Profile(ops=[dict(o) for o in doc["ops"]], settings=dict(doc["settings"]),
                   samples={m: [[float(x) for x in row] for row in rows]
                            for m, rows in doc["samples_ns"].items()},
                   counters=[dict(c) for c in doc.get("first_run_counters", [])],
                   e2e_ns=[float(x) for x in doc.get("e2e_ns", [])],
                   dispatch_ns=[float(x) for x in doc.get("dispatch_ns", [])],
                   warmup_ns={k: [float(x) for x in v]
                              for k, v in doc.get("warmup_ns", {}).items()},
                   env=dict(doc.get("env", {})), threads=dict(doc.get("threads", {})),
                   contention=dict(doc.get("contention", {})),
                   partial=bool(doc.get("partial", False)))


def _check_size(nbytes: int, source: str) -> None:
    if nbytes > MAX_PROFILE_BYTES:
        raise InputError(f"{source}: larger than {MAX_PROFILE_BYTES >> 20} MiB; not a profile")


def read_limited(path: str | os.PathLike) -> bytes:
    """A saved file's bytes (profile or diagnosis), refused unread beyond MAX_PROFILE_BYTES."""
    p = Path(path)
    try:
        if p.is_dir():
            raise InputError(f"{p}: is a directory, not a saved profile")
        _check_size(p.stat().st_size, str(p))  # before reading a byte of it
        return p.read_bytes()
    except OSError as err:
        raise InputError(f"{p}: cannot read ({err.strerror or err})") from None


def parse_profile(data: bytes, source: str = "profile") -> Profile:
    """A saved profile's bytes: JSON, or msgpack (told apart by the first byte: a map)."""
    if data[:1] and (0x80 <= data[0] <= 0x8F or data[0] in (0xDE, 0xDF)):
        return from_msgpack(data, source)
    _check_size(len(data), source)
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as err:  # JSONDecodeError, UnicodeDecodeError
        first = f"0x{data[0]:02x}" if data else "nothing"
        raise InputError(f"{source}: not a saved profile: not JSON ({err}) and not msgpack "
                         f"(starts with {first}, not a map); save one with `minigraph profile "
                         "--json` or `--raw`") from None
    return from_dict(doc, source)


def load_profile(path: str | os.PathLike) -> Profile:
    """A profile file saved with --json or --raw; size-checked before it is read."""
    return parse_profile(read_limited(path), str(path))


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
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise InputError(f"{source}: msgpack data must be bytes, got {type(data).__name__}")
    _check_size(len(data), source)
    try:
        doc = msgpack.unpackb(data, raw=False, strict_map_key=True, use_list=True,
                              **_MSGPACK_LIMITS)
    except (ValueError, msgpack.exceptions.UnpackException) as err:  # incl. ExtraData, UTF-8
        raise InputError(f"{source}: not a minigraph msgpack file ({last_line(err)}); "
                         "expected one saved with `minigraph profile --raw`") from None
    return from_dict(doc, source)
