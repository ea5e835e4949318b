"""File helpers shared by every stage: reads that name the file, writes that are atomic."""
from __future__ import annotations

import os
from pathlib import Path

from .errors import InputError


def read_file(path: str | os.PathLike[str], what: str) -> bytes:
    """The file's bytes; an unreadable file is an InputError naming it and what it was for."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise InputError(f"cannot read {what} {os.fspath(path)!r}: {e.strerror or e}") from None


def write_atomic(path: str | os.PathLike[str], data: bytes | str) -> None:
    """Writes a temp file beside ``path`` then renames it: readers never see half a file."""
    p = Path(path)
    tmp = p.with_name(f".{p.name}.tmp{os.getpid()}")
    try:
        tmp.write_bytes(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, p)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise InputError(f"cannot write {p}: {err.strerror or err}") from err
