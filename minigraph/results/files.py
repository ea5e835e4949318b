"""Saved profiles on disk: versioned JSON and msgpack (raw samples), read back with limits.

Loading is defensive: files are size-checked before they are read, msgpack is decoded with
per-object limits and no extension types, and the decoded document is validated (profile_schema.py)
before any report touches it. Nothing is ever unpickled.
"""
from __future__ import annotations

import os
from pathlib import Path

import msgpack

from ..errors import InputError, last_line
from ..fileio import read_bounded
from ..fileio.jsontext import document_text, finite, loads_strict
from .profile import Profile

MAX_PROFILE_BYTES = 64 << 20  # a ResNet-50 profile is ~100 KiB; decoded JSON grows ~10x
# msgpack limits: strings are names and env text, arrays are per-op sample rows; a saved
# profile never holds bin or ext values, so those are refused outright
_MSGPACK_LIMITS = {"max_str_len": 1 << 20, "max_bin_len": 0, "max_ext_len": 0,
                   "max_array_len": 1 << 22, "max_map_len": 1 << 16}


def to_json(profile: Profile) -> str:
    """Strict JSON: a value that is not a finite number is written as null (jsontext.py)."""
    return document_text(profile.to_dict(), indent=1)


def to_msgpack(profile: Profile) -> bytes:
    """msgpack can carry NaN and infinities, but a saved document never holds them (null)."""
    return msgpack.packb(finite(profile.to_dict()), use_bin_type=True)


def _check_size(nbytes: int, source: str) -> None:
    if nbytes > MAX_PROFILE_BYTES:
        raise InputError(f"{source}: larger than {MAX_PROFILE_BYTES >> 20} MiB; not a profile")


def read_limited(path: str | os.PathLike) -> bytes:
    """A saved file's bytes (profile or diagnosis), refused unread beyond MAX_PROFILE_BYTES."""
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{p}: is a directory, not a saved profile")
    # size-checked before a byte is read; a FIFO nobody writes to is refused, not waited on
    return read_bounded(p, MAX_PROFILE_BYTES, "saved file", "a saved document may be")


def is_msgpack(data: bytes) -> bool:
    """A saved document in msgpack starts with a map (fixmap, map16 or map32)."""
    return bool(data[:1]) and (0x80 <= data[0] <= 0x8F or data[0] in (0xDE, 0xDF))


def parse_saved_profile(data: bytes, source: str = "profile") -> Profile:
    """A profile minigraph saved: JSON, or msgpack (told apart by the first byte: a map).
    TVM's own report forms are read by readers/ (``readers.parse_profile`` takes both)."""
    if is_msgpack(data):
        return from_msgpack(data, source)
    _check_size(len(data), source)
    try:
        doc = loads_strict(data)
    except (ValueError, RecursionError) as err:  # JSONDecodeError, UnicodeDecodeError, strict
        first = f"0x{data[0]:02x}" if data else "nothing"
        raise InputError(f"{source}: not a saved profile: not JSON ({err}) and not msgpack "
                         f"(starts with {first}, not a map), nor a TVM profiler report; save "
                         "one with `minigraph profile --json` or `--raw`") from None
    return Profile.from_dict(doc, source)


def msgpack_document(data: bytes, source: str = "raw samples") -> object:
    """A msgpack document decoded with size limits and strict types (never arbitrary objects)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise InputError(f"{source}: msgpack data must be bytes, got {type(data).__name__}")
    _check_size(len(data), source)
    try:
        return msgpack.unpackb(data, raw=False, strict_map_key=True, use_list=True,
                               **_MSGPACK_LIMITS)
    except (ValueError, msgpack.exceptions.UnpackException) as err:  # incl. ExtraData, UTF-8
        raise InputError(f"{source}: not a minigraph msgpack file ({last_line(err)}); "
                         "expected one saved with `minigraph profile --raw`") from None


def from_msgpack(data: bytes, source: str = "raw samples") -> Profile:
    """Reads raw samples (``profile --raw``) with size limits and strict types."""
    return Profile.from_dict(msgpack_document(data, source), source)
