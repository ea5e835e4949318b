"""Provenance: what was measured, when, on which machine and by which command.

Saved profiles and diagnoses carry this record so that a file found weeks later still says
which model.so / graph.json / params it measured (paths and sha256 of their bytes), the command
line, an ISO 8601 timestamp with its UTC offset, the host and minigraph's version. Captured
before measuring: the hashes are of the files as they were when the work started.
Counterpart: none in TVM (its profiling Report recorded no provenance).
"""
from __future__ import annotations

import datetime
import os
import platform
from pathlib import Path
from typing import Mapping, Sequence

from .. import __version__
from ..fileio import sha256_file


def sha256_of(path: str | os.PathLike[str]) -> str | None:
    """Hex sha256 of a file's bytes; None where it cannot be read (recorded, not fatal)."""
    try:
        return sha256_file(path)
    except OSError:
        return None


def file_record(path: str | os.PathLike[str]) -> dict:
    """{path (as given), abspath, sha256, nbytes} of one input file."""
    p = Path(path)
    try:
        nbytes: int | None = p.stat().st_size
    except OSError:
        nbytes = None
    return {"path": os.fspath(path), "abspath": os.path.abspath(p), "sha256": sha256_of(p),
            "nbytes": nbytes}


def now_iso() -> str:
    """The local time with its UTC offset, to the second: '2025-01-31T14:05:09+01:00'."""
    return datetime.datetime.now(datetime.timezone.utc).astimezone().isoformat(
        timespec="seconds")


def capture(files: Mapping[str, str | os.PathLike[str] | None],
            command: Sequence[str]) -> dict:
    """The provenance record: ``files`` by role (lib, graph, params; None: absent) and the
    command line as a list of arguments."""
    return {"created": now_iso(), "minigraph_version": __version__,
            "command": [str(a) for a in command], "cwd": os.getcwd(),
            "hostname": platform.node(),
            "files": {role: file_record(p) for role, p in files.items() if p is not None}}


def validate(prov: object, path: str = "provenance") -> dict:
    """A saved record back, checked where reports read it; ValueError naming the field."""
    if not isinstance(prov, dict):
        raise ValueError(f"{path}: must be an object")
    for key in ("created", "minigraph_version", "cwd", "hostname"):
        if key in prov and not isinstance(prov[key], str):
            raise ValueError(f"{path}.{key}: must be a string")
    command = prov.get("command", [])
    if not isinstance(command, list) or not all(isinstance(a, str) for a in command):
        raise ValueError(f"{path}.command: must be a list of strings")
    files = prov.get("files", {})
    if not isinstance(files, dict):
        raise ValueError(f"{path}.files: must be an object")
    for role, rec in files.items():
        where = f"{path}.files.{role}"
        if not isinstance(rec, dict) or not isinstance(rec.get("path"), str):
            raise ValueError(f"{where}: must be an object with a string path")
        if not isinstance(rec.get("sha256"), (str, type(None))):
            raise ValueError(f"{where}.sha256: must be a string or null")
        if rec.get("nbytes") is not None and type(rec["nbytes"]) is not int:
            raise ValueError(f"{where}.nbytes: must be an integer or null")
    return dict(prov)
