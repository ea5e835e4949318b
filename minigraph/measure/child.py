"""One way to run a fresh process: a spec in, its last stdout line (JSON) out, a timeout, the
child killed and reaped on timeout or Ctrl-C, and how it died said plainly.

The one module that starts processes. Used by every part that needs a process of its own:
diagnose's spawned workers, the fork server (its zygote is ``start``ed, its workers are
``fork``ed and reaped with ``reap_usage``, and come back as ``ChildExit`` too), the CLI's
supervisor (``fork``, then ``poll``), remote jobs on a device, the link probe, the thread-pool
probe and the compiler's ConvertLayout probe (``run_forked``: a function in a forked child,
for code that may kill the process). Counterpart: TVM's ``PopenWorker``
(python/tvm/contrib/popen_pool.py), which also kills its child on timeout.
"""
from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Callable, Mapping, Sequence

from ..errors import MinigraphError

# The directory holding this minigraph package: a child process given it on its path imports
# this very tree, not whichever minigraph its interpreter would otherwise find.
PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


def importing_this_tree(env: dict[str, str]) -> dict[str, str]:
    """``env`` with PACKAGE_ROOT first on PYTHONPATH: a process started with it imports this
    minigraph (a diagnose worker, an LLM rung, a remote job, TVM's RPC server)."""
    return {**env, "PYTHONPATH": os.pathsep.join(p for p in (PACKAGE_ROOT, env.get("PYTHONPATH"))
                                                 if p)}
_POLL_S = 0.01


def die_with_parent(sig: int = signal.SIGKILL, parent: int | None = None) -> None:
    """Linux: ``sig`` to this process when its parent exits (prctl PR_SET_PDEATHSIG), so no
    child outlives a parent killed with SIGKILL; with ``parent`` (the pid this process's
    parent had), exits at once if that one already died before the prctl (nobody is left to
    send the signal). A no-op where prctl is missing. The one place every child-side process
    (forked workers, the zygote, the CLI's supervised child, remote jobs) says so."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(sig), 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if parent is not None and os.getppid() != parent:
        os._exit(1)


class ChildTimeout(MinigraphError):
    """The child ran longer than its timeout and was killed."""


def describe_death(returncode: int) -> str:
    """'exited with 3', 'killed by signal 11 (SIGSEGV)' (Popen: negative = the signal; a shell
    reports 128 + signal, which is said as such too)."""
    sig = -returncode if returncode < 0 else returncode - 128 if 128 < returncode < 160 else 0
    if sig:
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = "unknown signal"
        return f"killed by signal {sig} ({name})"
    return f"exited with {returncode}"


@dataclass(frozen=True)
class ChildExit:
    """How a child ended: exit code (negative: the signal that killed it), its output, and the
    CPU time it used (0.0 where not measured)."""

    returncode: int
    stdout: str
    stderr: str
    cpu_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def died(self) -> str:
        """How it ended, with the last line of its stderr (the child's own last word)."""
        tail = (self.stderr.strip().splitlines() or [""])[-1][:300]
        return describe_death(self.returncode) + (f": {tail}" if tail else "")

    def last_json(self) -> dict | None:
        """The last stdout line as a JSON object (None: no output, or not JSON)."""
        lines = self.stdout.strip().splitlines()
        try:
            doc = json.loads(lines[-1]) if lines else None
        except ValueError:
            return None
        return doc if isinstance(doc, dict) else None


def run_child(argv: Sequence[str], *, stdin: str | None = None,
              env: Mapping[str, str] | None = None, cwd: str | os.PathLike | None = None,
              timeout_s: float | None = None, what: str = "child process") -> ChildExit:
    """Runs ``argv`` to its end; on timeout (ChildTimeout) or any interruption (Ctrl-C) the
    child is killed and reaped before the exception goes on: never an orphan."""
    proc = subprocess.Popen(list(argv), stdin=subprocess.PIPE if stdin is not None else
                            subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=None if env is None else dict(env), cwd=cwd, text=True)
    t0 = os.times()
    try:
        out, err = proc.communicate(stdin, timeout=timeout_s)
    except BaseException as exc:  # TimeoutExpired, KeyboardInterrupt, SystemExit
        proc.kill()
        proc.communicate()
        if isinstance(exc, subprocess.TimeoutExpired):
            raise ChildTimeout(f"{what} took more than {timeout_s:.0f} s and was killed") \
                from None
        raise
    t1 = os.times()
    cpu = (t1.children_user - t0.children_user) + (t1.children_system - t0.children_system)
    return ChildExit(proc.returncode, out, err, max(cpu, 0.0))


def fork(body: Callable[[], int], failed: int = 1) -> int:
    """Forks; the parent gets the child's pid. The child runs ``body()`` and exits with its
    return value (a SystemExit's code; ``failed`` if it raised), its stdio flushed, through
    ``os._exit``: it never returns into the caller's code, runs no atexit handler and flushes
    no buffer the parent holds too (both are flushed before the fork for that reason)."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return pid
    code = failed
    try:
        code = body()
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else failed
    except BaseException:  # noqa: BLE001  (the child's failure is its exit code)
        code = failed
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def reap_usage(pid: int) -> tuple[int, float]:
    """Waits for a forked child: (its exit code, negative for a signal, as subprocess gives
    it; the user + system CPU seconds it used)."""
    _, status, usage = os.wait4(pid, 0)
    return os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime


def kill_group(pid: int) -> None:
    """SIGKILL to a forked child and the process group it leads (what it started too), then
    reaped: for a child that does not end when asked (native code sees no signal)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)


def poll(pid: int) -> int | None:
    """A forked child's wait status once it has ended, else None (never blocks)."""
    done, status = os.waitpid(pid, os.WNOHANG)
    return status if done else None


def start(argv: Sequence[str], env: Mapping[str, str], stderr: IO[bytes]) -> subprocess.Popen:
    """A long-lived child to talk to over its stdin and stdout (binary pipes), its stderr
    into ``stderr`` (a file: a pipe nobody reads would fill and block it); the caller kills
    and reaps it."""
    return subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=stderr, env=dict(env))


def run_forked(fn: Callable[[], object], timeout_s: float) -> ChildExit:
    """Runs ``fn`` in a forked child (for code that may crash the process: a segfaulting
    compiler pass); its exit code 0 if ``fn`` returned, 3 if it raised, the signal if it died.
    Killed and reaped on timeout (ChildTimeout) or Ctrl-C. Output is not captured."""
    if not hasattr(os, "fork"):
        raise MinigraphError("not run (no fork on this platform)")

    def body() -> int:
        fn()
        return 0
    pid = fork(body, failed=3)
    deadline = time.monotonic() + timeout_s
    try:
        while (status := poll(pid)) is None:
            if time.monotonic() > deadline:
                raise ChildTimeout(f"timed out after {timeout_s:.0f} s")
            time.sleep(_POLL_S)
    except BaseException:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise
    code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
    return ChildExit(code, "", "")
