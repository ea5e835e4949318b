"""File helpers shared by every stage: reads that name the file, outputs that are never lost.

Outputs (``--json``, ``--csv``, ``--trace``, ...) are checked before any measuring starts
(``check_output``), so a typo costs a second, not a diagnosis; a FIFO is opened then, without
blocking, so one nobody reads is an error at once rather than a hang (and the open end is kept
for the write). ``write_output`` then writes a regular file atomically (a temp file beside it,
renamed over it; through a symlink, to the link's target, keeping the link), and streams to
anything else: ``-`` (stdout) or a path that is this process's stdout (``/dev/stdout``, which
names a pipe under /proc that no rename can reach), a device such as ``/dev/null``, a FIFO. A
failed write (ENOSPC, EIO) is an error, never a silent exit 0. A partial (interrupted) result
never replaces a file that is already there: it goes beside it (``NAME.partial.EXT``).
``same_file`` says whether two paths name one file, for the CLI's check that no output replaces
an input. Reads go through
bounded.py (``read_bounded``, ``read_file``): a size limit checked before reading, a stream
read no further than it, a FIFO nobody writes to an error, not a hang; saved JSON documents are
read back through ``json_document`` (strict JSON: see jsontext.py). ``staging.py`` builds a set
of files and moves it into place complete.
"""
from __future__ import annotations

import dataclasses
import errno
import hashlib
import json
import os
import stat
import sys
from pathlib import Path
from typing import Callable, Iterable, TypeVar

from ..errors import InputError, MinigraphError
from .bounded import (  # noqa: F401 (the package's API)
    UNSIZED_REASON,
    BoundedFile,
    memory_cap,
    read_bounded,
    regular_size,
    size_text,
    sizes_text,
)
from .jsontext import loads_strict

STDOUT = "-"
T = TypeVar("T")
_STREAMS: dict[str, int] = {}  # FIFO outputs opened by check_output, by real path: written later


def user_path(path: str | os.PathLike[str]) -> Path:
    """What a user typed -> an absolute path, decided once at the CLI/API boundary. ``~`` is
    expanded (a quoted ``~`` reaches us unexpanded) and a relative name joined to the working
    directory, without resolving symlinks or ``..`` (a symlinked build keeps its own folder's
    build.json). Why here: ``Path("./model.so")`` is ``model.so``, and a name without a slash
    sends dlopen to the library search path instead of the folder the user stood in."""
    return Path(os.path.expanduser(os.fspath(path))).absolute()


def read_file(path: str | os.PathLike[str], what: str, limit: int | None = None) -> bytes:
    """The file's bytes; an unreadable file is an InputError naming it and what it was for.
    ``limit``: more bytes is an InputError (a regular file's size checked before reading, a
    stream read no further); None: the share of memory a read of unknown size may take
    (bounded.py ``memory_cap``), so no read is ever unbounded."""
    if limit is None:
        return read_bounded(path, memory_cap(), what, UNSIZED_REASON)
    return read_bounded(path, limit, what)


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB blocks (OSError if it cannot be read):
    build.json's digests and the provenance of every saved result."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """True when ``a`` and ``b`` name one file: equal once symlinks and '..' are resolved, or,
    for files that exist, the same device and inode (hard links, bind mounts)."""
    if STDOUT in (os.fspath(a), os.fspath(b)):  # '-' and /dev/stdout are one output
        return is_stdout(a) and is_stdout(b)
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def is_device(path: str | os.PathLike[str]) -> bool:
    """A character device (``/dev/null``): it keeps nothing, so two outputs may share one."""
    try:
        return stat.S_ISCHR(os.stat(path).st_mode)
    except OSError:
        return False


def is_stdout(path: str | os.PathLike[str]) -> bool:
    """``-``, or a path naming the file, pipe or socket this process's stdout writes to
    (``/dev/stdout``, ``/proc/self/fd/1``, the file stdout was redirected to). A terminal or
    a device such as /dev/null is not counted: it keeps nothing that output could spoil."""
    if os.fspath(path) == STDOUT:
        return True
    try:
        st, out = os.stat(path), os.fstat(1)
    except OSError:
        return False
    return os.path.samestat(st, out) and not stat.S_ISCHR(st.st_mode)


def _is_regular_or_absent(path: str | os.PathLike[str]) -> bool:
    """Through symlinks, /proc's descriptor links included (their targets read 'pipe:[..]')."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except FileNotFoundError:
        return True


def _open_fifo(p: Path, what: str, shown: str) -> None:
    """Opens a FIFO output now, without blocking: ENXIO means no process reads it (a write
    would wait forever). The open end is kept for ``write_output`` (by ``p``, the real path):
    closing it would send the reader an end of file before anything was written."""
    if str(p) in _STREAMS:
        return
    try:
        fd = os.open(shown, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        if err.errno == errno.ENXIO:
            raise InputError(f"{what} {shown}: a FIFO (named pipe) that no process reads, so "
                             "writing it would wait forever; start its reader first") from None
        raise InputError(f"{what} {shown}: {err.strerror or err}") from None
    os.set_blocking(fd, True)
    _STREAMS[str(p)] = fd


def check_output(path: str | os.PathLike[str], what: str = "output") -> None:
    """InputError now, before anything is measured, if ``path`` cannot be written later."""
    if is_stdout(path):
        return
    p = Path(os.path.realpath(path))  # through symlinks: the target is what gets written
    if os.path.isdir(path):
        raise InputError(f"{what} {os.fspath(path)}: is a directory; name a file in it")
    if os.path.exists(path):
        if not os.access(path, os.W_OK):
            raise InputError(f"{what} {os.fspath(path)}: not writable")
        if stat.S_ISFIFO(os.stat(path).st_mode):
            _open_fifo(p, what, os.fspath(path))
        if not _is_regular_or_absent(path):
            return  # a device or FIFO: streamed to, no temp file needed beside it
    parent = p.parent
    if not parent.is_dir():
        raise InputError(f"{what} {os.fspath(path)}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"{what} {os.fspath(path)}: cannot create files in {parent}")


def write_output(path: str | os.PathLike[str], data: bytes | str) -> None:
    """Writes ``data`` to ``path``: atomically for regular files, streamed otherwise."""
    blob = data.encode() if isinstance(data, str) else data
    if is_stdout(path):
        sys.stdout.flush()  # what was printed before goes first
        _stream(sys.stdout.buffer, blob, "stdout")
        return
    target = Path(os.path.realpath(path))
    if _is_regular_or_absent(path):
        write_atomic(target, blob)
        return
    fd = _STREAMS.pop(str(target), None)  # a FIFO check_output opened
    try:
        with (os.fdopen(fd, "wb") if fd is not None else open(path, "wb")) as f:
            _stream(f, blob, os.fspath(path))
    except OSError as err:
        raise MinigraphError(f"cannot write {os.fspath(path)}: {err.strerror or err}") from err


@dataclasses.dataclass(frozen=True)
class Written:
    """What ``write_outputs`` did: the errors of the outputs that failed, and each partial
    result written beside a file it would have replaced: (the file kept, where it went)."""

    errors: list[MinigraphError]
    beside: list[tuple[str, str]]


def partial_path(path: str | os.PathLike[str]) -> Path:
    """Where a partial result goes when ``path`` already holds a file: NAME.partial.EXT."""
    p = Path(path)
    return p.with_name(f"{p.stem}.partial{p.suffix}")


def _holds_a_file(path: str | os.PathLike[str]) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    return not is_stdout(path) and stat.S_ISREG(st.st_mode) and st.st_size > 0


def write_outputs(jobs: Iterable[tuple[str | os.PathLike[str] | None, Callable[[], bytes | str]]],
                  *, partial: bool = False, overwrite: bool = False) -> Written:
    """Writes every (path, make data) job whose path is set. One failed output does not stop
    the others: the errors are returned, so the caller can show what it measured first and
    report them after (a measurement is never lost to a full disk). A ``partial`` result goes
    beside a regular file already at its path (``partial_path``) unless ``overwrite``."""
    errors: list[MinigraphError] = []
    beside: list[tuple[str, str]] = []
    for path, make in jobs:
        if path:
            target = path
            if partial and not overwrite and _holds_a_file(path):
                target = partial_path(path)
                beside.append((os.fspath(path), os.fspath(target)))
            try:
                write_output(target, make())
            except MinigraphError as err:
                errors.append(err)
    return Written(errors, beside)


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


def json_document(data: bytes | str, source: str) -> object:
    """Saved JSON's decoded document; anything that is not strict JSON (jsontext.py: no NaN or
    Infinity, no duplicate key) is an InputError naming it."""
    try:
        return loads_strict(data)
    except (ValueError, RecursionError) as err:  # JSONDecodeError, UnicodeDecodeError, strict
        raise InputError(f"{source}: not JSON ({err})") from None


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
