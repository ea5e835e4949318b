"""File helpers shared by every stage: reads that name the file, outputs that are never lost.

Outputs (``--json``, ``--csv``, ``--trace``, ...) are checked before any measuring starts
(``check_output``), so a typo costs a second, not a diagnosis. ``write_output`` then writes a
regular file atomically (a temp file beside it, renamed over it; through a symlink, to the
link's target, keeping the link), and streams to anything else: ``-`` (stdout), a device such
as ``/dev/null``, a FIFO. A failed write (ENOSPC, EIO) is an error, never a silent exit 0.
"""
from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from .errors import InputError, MinigraphError

STDOUT = "-"


def read_file(path: str | os.PathLike[str], what: str) -> bytes:
    """The file's bytes; an unreadable file is an InputError naming it and what it was for."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise InputError(f"cannot read {what} {os.fspath(path)!r}: {e.strerror or e}") from None


def _is_regular_or_absent(p: Path) -> bool:
    try:
        return stat.S_ISREG(p.stat().st_mode)
    except FileNotFoundError:
        return True


def check_output(path: str | os.PathLike[str], what: str = "output") -> None:
    """InputError now, before anything is measured, if ``path`` cannot be written later."""
    if os.fspath(path) == STDOUT:
        return
    p = Path(os.path.realpath(path))  # through symlinks: the target is what gets written
    if p.is_dir():
        raise InputError(f"{what} {os.fspath(path)}: is a directory; name a file in it")
    if p.exists():
        if not os.access(p, os.W_OK):
            raise InputError(f"{what} {os.fspath(path)}: not writable")
        if not _is_regular_or_absent(p):
            return  # a device or FIFO: streamed to, no temp file needed beside it
    parent = p.parent
    if not parent.is_dir():
        raise InputError(f"{what} {os.fspath(path)}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"{what} {os.fspath(path)}: cannot create files in {parent}")


def write_output(path: str | os.PathLike[str], data: bytes | str) -> None:
    """Writes ``data`` to ``path``: atomically for regular files, streamed otherwise."""
    blob = data.encode() if isinstance(data, str) else data
    if os.fspath(path) == STDOUT:
        _stream(sys.stdout.buffer, blob, "stdout")
        return
    target = Path(os.path.realpath(path))
    if _is_regular_or_absent(target):
        write_atomic(target, blob)
        return
    try:
        with open(target, "wb") as f:
            _stream(f, blob, os.fspath(path))
    except OSError as err:
        raise MinigraphError(f"cannot write {os.fspath(path)}: {err.strerror or err}") from err


def _stream(f, blob: bytes, name: str) -> None:
    try:
        f.write(blob)
        f.flush()
    except OSError as err:
        raise MinigraphError(f"cannot write {name}: {err.strerror or err}") from err


def write_atomic(path: str | os.PathLike[str], data: bytes | str) -> None:
    """Writes a temp file beside ``path`` then renames it: readers never see half a file.
    Only for regular files (``write_output`` decides); the data is on disk before the rename."""
    p = Path(path)
    tmp = p.with_name(f".{p.name}.tmp{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise InputError(f"cannot write {p}: {err.strerror or err}") from err
