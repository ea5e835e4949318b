"""Reads of user-named files that never take more than a bound decided before reading.

Every file a user names (an --input array, a params file, graph.json, build.json, a saved
document, a library) is read through here, with the most bytes it can legitimately hold: the
graph's size of that input, the params the graph needs, a format's own cap, or, where nothing
tells the size, a share of the machine's memory (``memory_cap``). A regular file larger than
its bound is refused before a byte is read (its size is known); a stream (a FIFO, a device such
as /dev/zero or /dev/urandom, a pipe) is read only up to the bound and refused when it gives
more, so ``--input x=/dev/zero`` costs one bound of memory, not the machine. A FIFO that no
process writes to is an error at once, not a wait forever.

``BoundedFile`` is the one reader: ``read_bounded`` takes a whole file through it, and format
readers that check a header before the data (.npy, param blobs) read in steps through it.
"""
from __future__ import annotations

import os
import resource
import stat
from typing import Self

from ..errors import InputError

_CHUNK = 1 << 20            # bytes per read of a stream: the most a read overshoots a bound
_FIRST = 1 << 16            # bytes of the first, non-blocking read of a stream
MEMORY_SHARE = 4            # an unsized read may take 1/4 of physical memory (and of ulimit -v)
MAX_UNSIZED = 16 << 30      # bytes: and never more than this, whatever the machine
# completes "more than the N ..." for a read bounded by ``memory_cap``
UNSIZED_REASON = "a file of unknown size may take here (a quarter of memory or of ulimit -v)"


def size_text(nbytes: int) -> str:
    """'12 KiB', '1.5 GiB', '40 bytes': a size for a message, one decimal at most."""
    if nbytes < 1024:
        return f"{nbytes} bytes"
    value, unit = float(nbytes), "bytes"
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        value /= 1024
        if value < 1024:
            break
    text = f"{value:.1f}".removesuffix(".0") if value < 10 else f"{value:.0f}"
    return f"{text} {unit}"


def sizes_text(nbytes: int, limit: int) -> tuple[str, str]:
    """Two sizes for 'N is more than the M ...': in bytes when rounding would print them
    alike ('64 MiB is more than the 64 MiB' says nothing)."""
    a, b = size_text(nbytes), size_text(limit)
    return (a, b) if a != b else (f"{nbytes:,} bytes", f"{limit:,} bytes")


def memory_cap() -> int:
    """The most bytes a read may take when nothing says how large the file should be: a
    quarter of the machine's physical memory and of the address space this process may use
    (``ulimit -v``), at most MAX_UNSIZED. Why a share: other processes (and the model itself)
    need the rest; the read is refused, not the machine taken down."""
    caps = [MAX_UNSIZED]
    try:
        caps.append(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // MEMORY_SHARE)
    except (ValueError, OSError):  # no such sysconf name here: the fixed cap only
        pass
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        caps.append(soft // MEMORY_SHARE)
    return max(1, min(caps))


def _unreadable(what: str, name: str, err: OSError) -> InputError:
    return InputError(f"cannot read {what} {name!r}: {err.strerror or err}")


def _larger(what: str, name: str, nbytes: int, limit: int, reason: str) -> InputError:
    """A file whose size is known to be more than ``limit``, refused before it is read."""
    size, bound = sizes_text(nbytes, limit)
    return InputError(f"{what} {name!r}: {size} is more than the {bound} {reason}; "
                      "refused before reading it")


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "non-regular file"


class BoundedFile:
    """A user-named file open for reading, every read within a bound given by the caller.

    ``size`` is a regular file's size in bytes (None for a stream), known before reading, so
    a caller can compare what a header declares with what the file holds. Errors are
    InputErrors naming ``what`` the file is for and its path."""

    def __init__(self, path: str | os.PathLike[str], what: str) -> None:
        self.name, self.what, self.pos = os.fspath(path), what, 0
        try:
            self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as e:
            raise _unreadable(what, self.name, e) from None
        try:
            self.mode = os.fstat(self.fd).st_mode
            if stat.S_ISDIR(self.mode):
                raise InputError(f"cannot read {what} {self.name!r}: Is a directory")
            regular = stat.S_ISREG(self.mode)
            self.size: int | None = os.fstat(self.fd).st_size if regular else None
            self._pending = b"" if regular else self._first_of_stream()
            os.set_blocking(self.fd, True)
        except BaseException:
            os.close(self.fd)
            raise

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)

    @property
    def kind(self) -> str:
        return "regular file" if self.size is not None else _kind(self.mode)

    def _first_of_stream(self) -> bytes:
        """What a FIFO or device holds now (a non-blocking read): b"" from a FIFO means no
        process has it open for writing, and a blocking read would wait for one forever."""
        try:
            first = os.read(self.fd, _FIRST)
        except BlockingIOError:  # a writer exists and has not written yet: wait for it
            return b""
        except OSError as e:
            raise _unreadable(self.what, self.name, e) from None
        if not first and stat.S_ISFIFO(self.mode):
            raise InputError(f"cannot read {self.what} {self.name!r}: a FIFO (named pipe) that "
                             "no process writes to, so reading it would wait forever; start its "
                             "writer first, or pass a regular file")
        return first

    def too_large(self, nbytes: int | None, limit: int, reason: str) -> InputError:
        """The error for more than ``limit`` bytes; ``reason`` completes 'more than the N ...'
        (e.g. 'a graph.json may be'). ``nbytes`` None: a stream that gave more."""
        bound = f"the {size_text(limit)} {reason}"
        if nbytes is None:
            return InputError(f"{self.what} {self.name!r}: a {self.kind} that gives more than "
                              f"{bound}; refused after reading that much (pass a regular file)")
        return _larger(self.what, self.name, nbytes, limit, reason)

    def _read(self, n: int) -> bytes:
        """Up to ``n`` bytes (fewer only at the end of the file)."""
        if self._pending:
            out, self._pending = self._pending[:n], self._pending[n:]
        else:
            try:
                out = os.read(self.fd, n)
            except OSError as e:
                raise _unreadable(self.what, self.name, e) from None
        self.pos += len(out)
        return out

    def read_upto(self, n: int) -> bytes:
        """At most ``n`` bytes: fewer only where the file ends. A regular file's rest is one
        read (os.read allocates what it is asked for, so never more than the file holds; the
        kernel copies straight in, where chunks joined would touch every page twice)."""
        chunks, got = [], 0
        while got < n:
            if self.size is not None and self.pos < self.size:
                want = min(n - got, self.size - self.pos)
            else:  # a stream, or a file grown since its fstat: 1 MiB at a time
                want = min(n - got, _CHUNK)
            chunk = self._read(want)
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def read_rest(self, limit: int, reason: str) -> bytes:
        """Everything left, at most ``limit`` bytes: a regular file with more left is refused
        before reading (its size is known); a stream is refused once it gives more."""
        start = self.pos
        if self.size is not None and self.size - start > limit:
            raise self.too_large(self.size, limit + start, reason)
        data = self.read_upto(limit + 1)  # one byte more: is there more than the bound?
        if len(data) > limit:
            raise self.too_large(None if self.size is None else self.pos, limit + start,
                                 reason)
        return data


def read_bounded(path: str | os.PathLike[str], limit: int, what: str,
                 reason: str = "such a file may be") -> bytes:
    """The file's bytes, at most ``limit``: a larger regular file is refused unread, a stream
    read only that far; every error an InputError naming ``what``, the path and the bound."""
    with BoundedFile(path, what) as f:
        return f.read_rest(limit, reason)


def regular_size(path: str | os.PathLike[str], limit: int, what: str,
                 reason: str = "such a file may be") -> int:
    """The size of a file that is mapped or handed to a loader rather than read (a library):
    InputError unless it is a regular file of at most ``limit`` bytes. Checked before it is
    opened: opening a FIFO that no process writes to would wait forever."""
    name = os.fspath(path)
    try:
        st = os.stat(path)
    except OSError as e:
        raise _unreadable(what, name, e) from None
    if not stat.S_ISREG(st.st_mode):
        kind = "directory" if stat.S_ISDIR(st.st_mode) else _kind(st.st_mode)
        raise InputError(f"{what} {name!r}: a {kind}, not a regular file; pass the file itself")
    if st.st_size > limit:
        raise _larger(what, name, st.st_size, limit, reason)
    return st.st_size
