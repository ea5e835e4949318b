"""``minigraph COMMAND`` from a shell: the command runs in a child that this process watches, so
a kernel that kills the process (SIGSEGV, SIGILL, SIGTRAP, ...) still ends in one ``error:``
line naming the op, its kernel and the signal, instead of a bare exit 139 and nothing said.

The child is forked once the arguments are parsed, before anything has imported TVM (the CLI
never does at import time, and a test keeps it so), and runs the command exactly as
``main(argv)`` would; it keeps its op in flight in a record (measure/inflight.py) this process
reads when it died of a signal. Signals meant for the command reach it once: the child has a
process group of its own, so Ctrl-C, ``kill``, ``timeout`` and a closing terminal reach this
process, which forwards them; Ctrl-Z stops both and ``fg`` continues both. The child dies with
this process (PR_SET_PDEATHSIG with SIGTERM, so it still saves what it measured). The exit
code is the child's; a child killed by a signal exits 128 + the signal, as a shell says it.
"""
from __future__ import annotations

import os
import signal
import sys
import traceback
from typing import Callable

from ..measure import child
from ..measure.child import die_with_parent
from ..measure.inflight import FLIGHT, child_record, crash_message, read_record
from .terminal import emit

_FORWARDED = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGWINCH,
              signal.SIGUSR1, signal.SIGUSR2}
_WATCHED = _FORWARDED | {signal.SIGCHLD, signal.SIGTSTP}
# the child ended by a signal someone sent on purpose: nothing to explain
_QUIET = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGPIPE}


def supervised(run: Callable[[], int], what: str) -> int:
    """``run()`` in a watched child (see the module); ``what`` names the command in the crash
    message. Without fork, or already inside a child, ``run()`` here."""
    if not hasattr(os, "fork") or not hasattr(signal, "sigwaitinfo"):
        return run()
    with child_record() as (record, path):
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, _WATCHED)  # none lost before the loop
        pid = child.fork(lambda: _child(run, str(path), mask))
        try:
            os.setpgid(pid, pid)  # as the child does: whichever runs first
        except OSError:
            pass
        try:
            return _watch(pid, record, what)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _child(run: Callable[[], int], record: str, mask: set) -> int:
    """The command, in the child: its own process group, dies with the parent, then runs."""
    os.setpgid(0, 0)
    die_with_parent(signal.SIGTERM)  # SIGTERM: it still saves what it measured
    signal.signal(signal.SIGTTOU, signal.SIG_IGN)  # writes to the terminal from its group
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    FLIGHT.attach(record, unlink=True)  # this process's own record: read by its fd
    try:
        return run()
    except SystemExit:  # its code is the exit code (measure/child.py fork)
        raise
    except BaseException:  # --debug re-raises: the traceback, as Python would print it
        traceback.print_exc()
        return 1


def _watch(pid: int, record: int, what: str) -> int:
    """Forwards signals to the child until it ends; its exit code, or 128 + the signal that
    ended it (said, with the op in flight, when it was not one sent on purpose)."""
    while True:
        info = signal.sigwaitinfo(_WATCHED)
        if info.si_signo == signal.SIGTSTP:  # Ctrl-Z: stop the child, then this process
            _send(pid, signal.SIGTSTP)
            os.kill(os.getpid(), signal.SIGSTOP)
            _send(pid, signal.SIGCONT)  # continued (fg or bg): so is the command
        elif info.si_signo != signal.SIGCHLD:
            _send(pid, info.si_signo)
        status = child.poll(pid)
        if status is None:
            continue
        if os.WIFEXITED(status):
            return os.WEXITSTATUS(status)
        sig = os.WTERMSIG(status)
        if sig not in _QUIET:
            emit("error: " + crash_message(sig, read_record(record), f"minigraph {what}"),
                 file=sys.stderr)
        return 128 + sig


def _send(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
