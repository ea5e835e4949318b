"""File helpers shared by every stage: reads that name the file, outputs that are never lost.

Outputs (``--json``, ``--csv``, ``--trace``, ...) are checked before any measuring starts
(``check_output``), so a typo costs a second, not a diagnosis. ``write_output`` then writes a
regular file atomically (a temp file beside it, renamed over it; through a symlink, to the
link's target, keeping the link), and streams to anything else: ``-`` (stdout), a device such
as ``/dev/null``, a FIFO. A failed write (ENOSPC, EIO) is an error, never a silent exit 0.
Saved JSON documents are read back through ``json_document`` / ``dataclass_from_json``.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import stat
import sys
import threading
from pathlib import Path
from typing import Callable, Iterable, Iterator, TypeVar

from .errors import InputError, MinigraphError

STDOUT = "-"
T = TypeVar("T")


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


def write_outputs(jobs: Iterable[tuple[str | os.PathLike[str] | None, Callable[[], bytes | str]]]
                  ) -> list[MinigraphError]:
    """Writes every (path, make data) job whose path is set. One failed output does not stop
    the others: the errors are returned, so the caller can show what it measured first and
    report them after (a measurement is never lost to a full disk)."""
    errors: list[MinigraphError] = []
    for path, make in jobs:
        if path:
            try:
                write_output(path, make())
            except MinigraphError as err:
                errors.append(err)
    return errors


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


def staging_dir(out: str | os.PathLike[str]) -> Path:
    """A fresh hidden directory to build a set of outputs in before ``install_dir`` moves them
    into ``out``: inside ``out`` if it exists (same filesystem even when ``out`` is a mount
    point), else beside where it will be (under its nearest existing ancestor). Nothing is
    created at ``out`` itself; InputError if the place cannot be written."""
    import tempfile
    o = Path(out)
    if o.exists() and not o.is_dir():
        raise InputError(f"output directory {o}: exists and is not a directory")
    base = o if o.is_dir() else next(p for p in o.absolute().parents if p.exists())
    try:
        return Path(tempfile.mkdtemp(prefix=".minigraph-staging-", dir=base))
    except OSError as err:
        raise InputError(f"cannot write to output directory {o}: {err.strerror or err}") from err


def install_dir(staging: Path, out: str | os.PathLike[str], owned: tuple[str, ...] = ()) -> None:
    """Moves the complete set of files in ``staging`` into ``out``: a rename of the whole
    directory when ``out`` does not exist yet, else one rename per file with Ctrl-C and SIGTERM
    held off until the last one (the set is then complete: the build is done), and the
    ``owned`` names the new set lacks removed, so no old file stays beside the new ones."""
    o = Path(out)
    with _signals_held():
        try:
            if not o.exists():
                o.parent.mkdir(parents=True, exist_ok=True)
                umask = os.umask(0o022)
                os.umask(umask)
                os.chmod(staging, 0o777 & ~umask)  # as mkdir would make it (mkdtemp: 0700)
                os.rename(staging, o)
                return
            names = {p.name for p in staging.iterdir()}
            for name in names:
                os.replace(staging / name, o / name)
            for name in set(owned) - names:
                (o / name).unlink(missing_ok=True)
            staging.rmdir()
        except OSError as err:
            raise MinigraphError(f"cannot move the new files into {o}: "
                                 f"{err.strerror or err}") from err


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM recorded, not raised, inside the block (main thread only: Python
    runs signal handlers there; elsewhere nothing can be changed and nothing is)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, lambda signum, frame: None)
                for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def json_document(data: bytes | str, source: str) -> object:
    """Saved JSON's decoded document; anything that is not JSON is an InputError naming it."""
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as err:  # JSONDecodeError, UnicodeDecodeError
        raise InputError(f"{source}: not JSON ({err})") from None


def names_format(data: bytes, format_name: str, within: int = 4096) -> bool:
    """True if saved bytes are a JSON object naming ``format_name``'s family (any version, so a
    newer file gets a clear "not ours" error from its reader) near its start."""
    family = format_name.split("/")[0]
    return data.lstrip()[:1] == b"{" and f'"{family}/'.encode() in data[:within]


def dataclass_from_json(cls: type[T], text: str, what: str) -> T:
    """A dataclass back from ``json.dumps(asdict(x))``; a missing, unknown or mistyped field is
    an InputError naming ``what``."""
    try:
        doc = json.loads(text)
        names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        if not isinstance(doc, dict) or set(doc) - names:
            unknown = sorted(set(doc) - names) if isinstance(doc, dict) else doc
            raise ValueError(f"unknown fields {unknown}")
        return cls(**doc)
    except (ValueError, TypeError) as err:
        raise InputError(f"bad {what}: {err}") from None
