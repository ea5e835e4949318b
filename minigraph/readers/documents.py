"""Any saved file -> the object it holds: minigraph's own documents through the format registry
(results/formats.py), else one of TVM's own report forms (tvm_report/), read into a Profile.

``show`` and ``compare`` start here: one size-checked read of the file, one decision of what it
is, then a table of what to do with each kind.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from ..errors import InputError
from ..results.files import parse_saved_profile, read_limited
from ..results.formats import read as read_own
from ..results.profile import Profile
from .tvm_report import read_report, sniff


@dataclass(frozen=True)
class Document:
    """What a saved file holds: its kind (a results/formats.py kind, or "profile" for an
    imported TVM report) and the object read from it."""

    kind: str
    value: object
    source: str


def parse_document(data: bytes, source: str) -> Document:
    """The document in ``data`` (bytes of a saved file), validated by its own reader."""
    own = read_own(data, source)
    if own is not None:
        fmt, value = own
        return Document(fmt.kind, value, source)
    if sniff(data):
        return Document("profile", read_report(data, source), source)
    return Document("profile", parse_saved_profile(data, source), source)  # says what it is not


def load_document(path: str | os.PathLike) -> Document:
    """A saved file's document; size-checked before a byte of it is read."""
    return parse_document(read_limited(path), str(path))


def parse_profile(data: bytes, source: str = "profile") -> Profile:
    """A profile: saved by minigraph (JSON or msgpack), or one of TVM's own profiler reports
    (text table, CSV, JSON, benchmark); anything else is an InputError saying what it holds."""
    doc = parse_document(data, source)
    if not isinstance(doc.value, Profile):
        raise InputError(f"{source}: a saved {doc.kind}, not a profile")
    return doc.value


def load_profile(path: str | os.PathLike) -> Profile:
    """A profile file (``profile --json`` or ``--raw``, or a TVM report); size-checked first."""
    return parse_profile(read_limited(path), str(path))
