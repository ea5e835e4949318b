"""The op in flight: what a process is running, kept where its parent can read it after a crash.

A kernel that faults (SIGSEGV, SIGILL, SIGBUS, SIGFPE, SIGTRAP; SIGABRT from a failed check in
C++) kills the process on the spot: no Python code can run on that stack, and faulthandler can
only print the Python traceback, which says "run_op" but not which op. So a process that runs
kernels keeps, in a small file its parent gave it, what it is doing (the phase: a mode, a rung)
and which op it is calling, plus the table of its ops ("op 3 (node 7 'x', kernel 'y')"),
written once per executor. The parent (the CLI's supervisor, cli/supervise.py; diagnose's
ladder; the RPC server's job runner) reads the record once the child ended by a signal and
says which op, which kernel and which signal (``crash_message``).

The per-op record is one 8-byte store into the shared mapping (about 25 ns in CPython), made
before the op's clock starts, never inside a timed window; the phase is written when it
changes. A process nobody supervises writes into a private buffer: same code, no file.
File layout: magic (8 bytes), op index (int64, -1: none), phase length (int64), the phase
(UTF-8, up to 240 bytes), table length (int64) at byte 256, the signal the process took as an
interrupt (int64, 0: none; ``interrupted``) at byte 264, the table (JSON list) at byte 4096. The
last tells the CLI's supervisor that the command is saving what it measured after a Ctrl-C or
SIGTERM, not stuck in native code, which never sees the signal (cli/supervise.py).
"""
from __future__ import annotations

import contextlib
import json
import mmap
import os
import signal
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

ENV = "MINIGRAPH_INFLIGHT"  # the record's path, for a child started with it in its environment
MAGIC = b"MGINFLT1"
_HEAD = 4096
_PHASE_MAX = 240
_TAKEN = 264  # the interrupt taken (int64), after the table length


class Flight:
    """This process's record; ``attach`` points it at a file (else a private buffer)."""

    def __init__(self) -> None:
        self._buf: mmap.mmap | bytearray = bytearray(_HEAD)
        self._slot = memoryview(self._buf)[8:16].cast("q")
        self._fd: int | None = None

    @property
    def attached(self) -> bool:
        return self._fd is not None

    def attach(self, path: str | os.PathLike[str], unlink: bool = False) -> bool:
        """Writes into ``path`` (a record ``child_record`` made) from now on; False when it
        cannot be opened (the process then runs unrecorded, as before). ``unlink``: remove
        the name at once (the parent reads the record through its own descriptor), so none
        is left behind even if the parent is killed outright."""
        try:
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
            buf = mmap.mmap(fd, _HEAD)
        except (OSError, ValueError):
            return False
        if unlink:
            with contextlib.suppress(OSError):
                os.unlink(path)
        self._slot.release()
        self._fd, self._buf = fd, buf
        self._slot = memoryview(buf)[8:16].cast("q")
        return True

    def op(self, index: int) -> None:
        """The op about to be called (-1: none, or a full run of the plain loop)."""
        self._slot[0] = index

    def phase(self, text: str) -> None:
        """What the process is doing now (a mode, a rung); no op is in flight yet."""
        raw = text.encode("utf-8", "replace")[:_PHASE_MAX]
        self._slot[0] = -1
        self._buf[16:24] = len(raw).to_bytes(8, "little")
        self._buf[24:24 + len(raw)] = raw

    def interrupted(self, sig: int) -> None:
        """This process took signal ``sig`` as an interrupt: it is saving what it measured."""
        self._buf[_TAKEN:_TAKEN + 8] = int(sig).to_bytes(8, "little")

    def ops(self, describe: Callable[[], list[str]]) -> None:
        """The table of ops (index -> description), written only when recorded for a parent."""
        if self._fd is None:
            return
        table = json.dumps(describe()).encode()
        os.pwrite(self._fd, table, _HEAD)
        self._buf[256:264] = len(table).to_bytes(8, "little")


FLIGHT = Flight()


def attach_from_env() -> None:
    """Attaches to the record named in the environment (and removes the name, so that the
    processes this one starts do not write into its record)."""
    path = os.environ.pop(ENV, None)
    if path:
        FLIGHT.attach(path, unlink=True)


@contextlib.contextmanager
def child_record(directory: str | os.PathLike[str] | None = None
                 ) -> Iterator[tuple[int, Path]]:
    """A fresh, empty record for children: (an open descriptor the parent reads it by, its
    path for the child), closed and removed when the block ends."""
    fd, name = tempfile.mkstemp(prefix="minigraph-inflight-", dir=directory)
    try:
        reset_record(fd)
        yield fd, Path(name)
    finally:
        os.close(fd)
        Path(name).unlink(missing_ok=True)


def reset_record(fd: int) -> None:
    """Empties a record before the next child writes into it."""
    os.ftruncate(fd, 0)
    os.pwrite(fd, MAGIC + (-1).to_bytes(8, "little", signed=True) + bytes(_HEAD - 16), 0)


@dataclass(frozen=True)
class InFlight:
    """What a record said when it was read: the phase, the op index, its description."""

    phase: str
    op: int
    op_text: str | None

    def where(self) -> str:
        """'op 3 (node 7 'x', kernel 'y') in the first-run mode', 'the checked run', ..."""
        during = f" during {self.phase}" if self.phase else ""
        if self.op_text:
            return f"{self.op_text}{during}"
        if self.op >= 0:
            return f"op {self.op}{during}"
        if self.phase:
            return f"{self.phase} (no single op in flight: a full run of the plain run loop, " \
                   "which records none, or between ops)"
        return "before any kernel ran"


def read_record(fd: int) -> InFlight | None:
    """The record behind ``fd``; None if it holds none (a child that never attached)."""
    try:
        head = os.pread(fd, _HEAD, 0)
        if len(head) < 264 or head[:8] != MAGIC:
            return None
        op = int.from_bytes(head[8:16], "little", signed=True)
        n = min(int.from_bytes(head[16:24], "little"), _PHASE_MAX)
        phase = head[24:24 + n].decode("utf-8", "replace")
        size = int.from_bytes(head[256:264], "little")
        table = json.loads(os.pread(fd, size, _HEAD)) if 0 < size < 1 << 26 else []
    except (OSError, ValueError):
        return None
    text = table[op] if isinstance(table, list) and 0 <= op < len(table) and \
        isinstance(table[op], str) else None
    return InFlight(phase, op, text)


def interrupt_taken(fd: int) -> bool:
    """Whether the process writing the record behind ``fd`` has taken an interrupt
    (``Flight.interrupted``): Python code of it runs, handling the signal."""
    try:
        raw = os.pread(fd, 8, _TAKEN)
    except OSError:
        return False
    return len(raw) == 8 and int.from_bytes(raw, "little") != 0


def read_record_at(path: str | os.PathLike[str] | None) -> InFlight | None:
    """``read_record`` by path (None, or a file that cannot be opened: None)."""
    if not path:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return read_record(fd)
    finally:
        os.close(fd)


# what each deadly signal most likely means when a kernel raised it
MEANING = {
    signal.SIGILL: ("illegal instruction", "its machine code is damaged, or uses instructions "
                    "this CPU lacks"),
    signal.SIGTRAP: ("trace/breakpoint trap", "its machine code is damaged (a breakpoint byte "
                     "where code should be)"),
    signal.SIGSEGV: ("invalid memory access", "it read or wrote outside its buffers: a damaged "
                     "library, or arguments it was not built for"),
    signal.SIGBUS: ("bus error", "a mapped file shrank or changed under it (model.so rewritten "
                    "while running?)"),
    signal.SIGFPE: ("arithmetic exception", "an integer division by zero"),
    signal.SIGABRT: ("aborted", "TVM or a library it uses called abort(): a failed check"),
    signal.SIGKILL: ("killed", "from outside: the out-of-memory killer (see `dmesg`) or kill -9"),
}


def signal_text(sig: int) -> str:
    """'signal 4 (SIGILL: illegal instruction)'."""
    try:
        name = signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"
    meaning = MEANING.get(sig)  # type: ignore[call-overload]
    return f"signal {sig} ({name}: {meaning[0]})" if meaning else f"signal {sig} ({name})"


def crash_message(sig: int, record: InFlight | None, who: str = "the process") -> str:
    """One line: which op and kernel were running, and what killed them."""
    meaning = MEANING.get(sig)  # type: ignore[call-overload]
    where = record.where() if record is not None else "(nothing recorded)"
    hint = f": {meaning[1]}" if meaning and record is not None and record.op >= 0 else \
        f": {meaning[1]}" if meaning and sig == signal.SIGKILL else ""
    return f"{who} was killed by {signal_text(sig)} in {where}{hint}"
