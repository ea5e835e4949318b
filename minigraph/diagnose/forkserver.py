"""A zygote for the ladder's fresh processes: Python, NumPy and TVM imported once, one fork per
measurement, so that only the model's own first run is fresh in each process.

A spawned ``python -m minigraph.diagnose.worker`` spends most of its life importing Python
modules and TVM before it even loads the model. None of the first-run effects the ladder
measures happens at import: TVM's thread pool is created by the first parallel kernel, the
activations are first touched by the first run, the weights are read and the kernels' code is
first run by the first iteration. So the zygote imports everything the worker imports and does
nothing else: it never loads a model, never calls into TVM's thread pool, never allocates a TVM
array. Each fork is then a fresh process for everything the ladder measures: it loads the model,
creates the pool, faults its pages, exactly as a spawned worker (tests/diagnose/test_forkserver.py
checks the counters). The child first breaks copy-on-write sharing of the zygote's writable
memory (``own_private_memory``), so that its Python objects are its own, as in a spawned
process, and a write to them during a timed op takes no copy-on-write fault.

Fork safety: fork copies only the calling thread. TVM and minigraph create no thread at import
(checked at start-up: no thread appears while they are imported; TVM's pool workers appear
only when a parallel kernel runs). NumPy's OpenBLAS starts threads at import but shuts them
down before every fork (its pthread_atfork handler) and restarts them lazily in the child.
Before each fork the zygote checks that no other thread has appeared since.

Protocol, one JSON object a line, on the zygote's stdin and on a private copy of its stdout
(its fd 1 is sent to stderr so that a stray print cannot corrupt it): parent -> zygote, a
WorkerSpec; zygote -> parent, ``{"started": pid}`` then ``{"returncode", "stdout", "stderr"}``.
Counterpart: multiprocessing's "forkserver" start method; none in TVM.
"""
from __future__ import annotations

import ctypes
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from typing import IO

from ..errors import MinigraphError
from ..measure import child
from ..measure.child import ChildExit, die_with_parent
from ..measure.counters import task_ids
from .spec import WorkerSpec
from .worker import main as worker_main

_MADV_POPULATE_WRITE = 23  # Linux 5.14+: fault pages in writable, breaking copy-on-write


def preload() -> None:
    """Imports what a worker imports (and what its lazy imports pull in), nothing more; a test
    (tests/diagnose/test_forkserver.py) checks that a worker run after it imports nothing new."""
    import encodings.ascii  # noqa: F401
    import encodings.utf_8_sig  # noqa: F401
    import secrets  # noqa: F401

    import elftools.elf.elffile  # noqa: F401  (artifacts/elf.py imports pyelftools lazily)
    import elftools.elf.structs  # noqa: F401
    import numpy.random  # noqa: F401
    import psutil  # noqa: F401
    import tvm.runtime  # noqa: F401

    # lazy on purpose: this is the zygote's import list, run once in the zygote before its first
    # fork (the parent that only starts a ForkServer does not need them imported)
    from ..artifacts import buildinfo, elf, library, signatures  # noqa: F401
    from ..runtime import doors, link  # noqa: F401  (doors imports every front door)
    from ..threadpool import wake  # noqa: F401
    from ..values import inputs  # noqa: F401
    from . import worker  # noqa: F401


def own_private_memory(libc=None) -> int:
    """Writes every page of this process's writable private mappings that hold data
    (MADV_POPULATE_WRITE: the kernel faults them in writable, contents unchanged), so that
    after a fork no page is still shared with the parent. Returns the bytes owned; 0 where the
    kernel lacks the advice (the child then takes the copy-on-write faults lazily)."""
    try:
        libc = libc or ctypes.CDLL(None, use_errno=True)
        libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
        mappings = _data_mappings()
    except (OSError, AttributeError):  # no /proc or no madvise: copy-on-write stays lazy
        return 0
    owned = 0
    for start, end in mappings:
        if libc.madvise(start, end - start, _MADV_POPULATE_WRITE) == 0:
            owned += end - start
    return owned


def _data_mappings() -> list[tuple[int, int]]:
    """(start, end) of the private writable mappings with resident pages (smaps "Rss"), which
    are the ones a fork shares copy-on-write; never-touched reservations are left alone."""
    out, current = [], None
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()
            if "-" in head[0] and len(head) >= 5 and ":" not in head[0]:
                start, end = (int(x, 16) for x in head[0].split("-"))
                current = (start, end) if head[1].startswith("rw") and head[1][3] == "p" else None
            elif current is not None and head[0] == "Rss:" and int(head[1]) > 0:
                out.append(current)
                current = None
    return out


def _child(spec_line: str, out_fd: int, err_fd: int, replies_fd: int, zygote: int) -> int:
    """In the forked child: its own memory, default signals, stdout/stderr to the zygote's
    buffers, then the worker's main exactly as ``python -m minigraph.diagnose.worker``."""
    die_with_parent(signal.SIGKILL, zygote)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.close(replies_fd)
    own_private_memory()
    os.dup2(out_fd, 1)
    os.dup2(err_fd, 2)
    return worker_main([spec_line])


def _read_all(fd: int) -> str:
    os.lseek(fd, 0, os.SEEK_SET)
    with os.fdopen(os.dup(fd), "rb") as f:
        return f.read().decode(errors="replace")


def serve(requests: IO[str], replies: IO[str], allowed: set[int]) -> None:
    """The zygote's loop: one fork per request line, until stdin closes."""
    zygote = os.getpid()
    for line in requests:
        extra = task_ids() - allowed
        if extra:  # a thread appeared since start-up: forking now would be unsafe
            raise MinigraphError(f"fork server: {len(extra)} unexpected thread(s) in the zygote")
        out_fd, err_fd = os.memfd_create("worker-out"), os.memfd_create("worker-err")
        pid = child.fork(lambda: _child(line.strip(), out_fd, err_fd, replies.fileno(),
                                        zygote))
        replies.write(json.dumps({"started": pid}) + "\n")
        replies.flush()
        returncode, cpu_s = child.reap_usage(pid)
        replies.write(json.dumps({"returncode": returncode, "cpu_s": cpu_s,
                                  "stdout": _read_all(out_fd), "stderr": _read_all(err_fd)})
                      + "\n")
        replies.flush()
        os.close(out_fd)
        os.close(err_fd)


def main() -> int:
    die_with_parent(signal.SIGKILL)  # no zygote outlives a diagnose killed outright
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when the zygote ends
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # stray prints (imports, TVM) go to stderr, never into the protocol
    import numpy  # noqa: F401  (its OpenBLAS threads are fork-safe; see the module docstring)
    allowed = task_ids()
    preload()
    if task_ids() - allowed:
        replies.write(json.dumps({"error": "importing TVM created threads: forking is unsafe"})
                      + "\n")
        return 1
    replies.write(json.dumps({"ready": os.getpid()}) + "\n")
    replies.flush()
    serve(sys.stdin, replies, allowed)
    return 0


class ForkServer:
    """The parent's side: starts the zygote, runs one WorkerSpec per call, kills and reaps
    everything on close (also on Ctrl-C, SIGTERM or a timeout)."""

    def __init__(self, env: dict[str, str], start_timeout_s: float = 120.0) -> None:
        """Starts the zygote; its imports run while the caller does other work (the first
        ``run`` waits for it to be ready)."""
        self._stderr = tempfile.TemporaryFile()  # never fills up and blocks the zygote
        self.proc = child.start([sys.executable, "-m", "minigraph.diagnose.forkserver"], env,
                                self._stderr)
        self.child: int | None = None
        self.zygote_pid: int | None = None
        self._buf = b""
        self._start_timeout_s = start_timeout_s

    def ready(self) -> None:
        """Waits until the zygote has imported everything (its first use would otherwise)."""
        if self.zygote_pid is not None:
            return
        try:
            ready = self._reply(self._start_timeout_s)
        except TimeoutError:
            raise MinigraphError("fork server: the zygote did not start in "
                                 f"{self._start_timeout_s:.0f} s (try --start spawn)") from None
        if "ready" not in ready:
            raise MinigraphError(f"fork server did not start: {ready.get('error', ready)} "
                                 "(try --start spawn)")
        self.zygote_pid = int(ready["ready"])

    def _reply(self, timeout_s: float) -> dict:
        """The zygote's next line, read unbuffered (select must see every byte not yet read);
        TimeoutError after ``timeout_s``, MinigraphError if the zygote is gone."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                self.proc.wait()
                self._stderr.seek(0)
                err = self._stderr.read().decode(errors="replace")
                raise MinigraphError(f"fork server exited with {self.proc.returncode}: "
                                     + (err.strip().splitlines() or ["no message"])[-1]
                                     + " (try --start spawn)")
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return json.loads(line)

    def run(self, spec: WorkerSpec, timeout_s: float) -> ChildExit:
        """One forked worker's exit; on timeout it is killed and TimeoutError raised."""
        assert self.proc.stdin is not None
        self.ready()
        self.proc.stdin.write(spec.to_json().encode() + b"\n")
        self.proc.stdin.flush()
        self.child = int(self._reply(30.0)["started"])
        try:
            done = self._reply(timeout_s)
        except TimeoutError:
            self._kill_child()
            self._reply(30.0)  # the zygote reaps it and reports
            raise
        self.child = None
        # cpu_s: the worker's user + system CPU time (wait4), start-up included
        return ChildExit(int(done["returncode"]), str(done["stdout"]), str(done["stderr"]),
                         float(done["cpu_s"]))

    def _kill_child(self) -> None:
        if self.child is not None:
            try:
                os.kill(self.child, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.child = None

    def close(self) -> None:
        """Kills the running worker, ends the zygote (EOF, then SIGKILL) and reaps it."""
        self._kill_child()
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except (subprocess.TimeoutExpired, OSError):
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()
        self._stderr.close()

    def __enter__(self) -> "ForkServer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


if __name__ == "__main__":
    sys.exit(main())
