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

A command that measures (``stop_s``) ends within about a second of a Ctrl-C or SIGTERM even
inside native code, which sees no signal (Python runs its handlers between calls; a kernel or
a ``time_evaluator`` loop can run for minutes): the child marks its in-flight record when it
takes the signal (measure/interrupt.py), and then has SAVE_S to save what it measured as a
partial result and exit; a child that has not taken it within ``stop_s`` is killed, and this
process says so (nothing of it saved) and exits 128 + the signal. A second Ctrl-C or SIGTERM
kills it at once.
"""
from __future__ import annotations

import os
import signal
import sys
import time
import traceback
from typing import Callable

from ..measure import child
from ..measure.child import die_with_parent
from ..measure.inflight import FLIGHT, child_record, crash_message, interrupt_taken, read_record
from ..measure.interrupt import interrupt_message, take_ctrl_c
from .terminal import emit

_FORWARDED = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGWINCH,
              signal.SIGUSR1, signal.SIGUSR2}
_WATCHED = _FORWARDED | {signal.SIGCHLD, signal.SIGTSTP}
# the child ended by a signal someone sent on purpose: nothing to explain
_QUIET = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGPIPE}
_STOPPING = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT}  # asked to end
STOP_S = 0.75   # a measuring child must take a stop within this (it does between native calls)
SAVE_S = 60.0   # ... and then save what it measured and exit within this


def supervised(run: Callable[[], int], what: str, stop_s: float | None = None) -> int:
    """``run()`` in a watched child (see the module); ``what`` names the command in the crash
    message; ``stop_s``: a stop the child has not taken within this many seconds kills it
    (None: the child is given all the time it takes). Without fork, or already inside a
    child, ``run()`` here."""
    if not hasattr(os, "fork") or not hasattr(signal, "sigtimedwait"):
        return run()
    # a signal this process was started ignoring (SIGINT in a background job, SIGHUP under
    # nohup) stays ignored: not forwarded, so the child, which inherits the same, is not then
    # killed for not taking it
    ignored = frozenset(s for s in _FORWARDED if signal.getsignal(s) == signal.SIG_IGN)
    with child_record() as (record, path):
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, _WATCHED)  # none lost before the loop
        pid = child.fork(lambda: _child(run, str(path), mask))
        try:
            os.setpgid(pid, pid)  # as the child does: whichever runs first
        except OSError:
            pass
        try:
            return _watch(pid, record, what, _Stop(stop_s), ignored)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _child(run: Callable[[], int], record: str, mask: set) -> int:
    """The command, in the child: its own process group, dies with the parent, then runs."""
    os.setpgid(0, 0)
    die_with_parent(signal.SIGTERM)  # SIGTERM: it still saves what it measured
    signal.signal(signal.SIGTTOU, signal.SIG_IGN)  # writes to the terminal from its group
    take_ctrl_c()  # a Ctrl-C Python takes is marked as taken in the record
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    FLIGHT.attach(record, unlink=True)  # this process's own record: read by its fd
    try:
        return run()
    except SystemExit:  # its code is the exit code (measure/child.py fork)
        raise
    except BaseException:  # --debug re-raises: the traceback, as Python would print it
        traceback.print_exc()
        return 1


class _Stop:
    """A stop forwarded to the child (see the module): when it must have been taken by, and
    then when the child must have ended by."""

    def __init__(self, take_s: float | None) -> None:
        self.take_s, self.sig, self.saving = take_s, 0, False
        self.deadline: float | None = None

    def asked(self, sig: int) -> bool:
        """A signal was forwarded; True when it is a second stop (kill the child now)."""
        if self.take_s is None or sig not in _STOPPING:
            return False
        again, self.sig = self.sig != 0, sig
        if not again:
            self.deadline = time.monotonic() + self.take_s
        return again

    def wait_s(self) -> float | None:
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())

    def overdue(self, record: int) -> bool:
        """At the deadline: True to kill the child; one that took the stop gets SAVE_S."""
        if not self.saving and interrupt_taken(record):
            self.saving, self.deadline = True, time.monotonic() + SAVE_S
            return False
        return True


def _watch(pid: int, record: int, what: str, stop: _Stop, ignored: frozenset[int]) -> int:
    """Forwards signals (but ``ignored``) to the child until it ends; its exit code, or 128 +
    the signal that ended it (said, with the op in flight, when it was not one sent on
    purpose)."""
    while True:
        wait = stop.wait_s()
        info = signal.sigwaitinfo(_WATCHED) if wait is None else \
            signal.sigtimedwait(_WATCHED, wait)
        if info is None:  # a stop's deadline passed
            if stop.overdue(record):
                return _kill(pid, record, what, stop)
            continue
        if info.si_signo == signal.SIGTSTP:  # Ctrl-Z: stop the child, then this process
            _send(pid, signal.SIGTSTP)
            os.kill(os.getpid(), signal.SIGSTOP)
            _send(pid, signal.SIGCONT)  # continued (fg or bg): so is the command
        elif info.si_signo in ignored:
            continue
        elif info.si_signo != signal.SIGCHLD:
            _send(pid, info.si_signo)
            if stop.asked(info.si_signo):
                return _kill(pid, record, what, stop)
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


def _kill(pid: int, record: int, what: str, stop: _Stop) -> int:
    """The child did not stop in time: killed with its process group, said; 128 + the stop."""
    child.kill_group(pid)
    found = read_record(record)
    where = f" (it was in {found.where()})" if found is not None else ""
    late = f"did not save what it measured within {SAVE_S:g} s" if stop.saving else \
        f"did not stop within {stop.take_s:g} s{where}: native code sees no signal"
    emit(f"error: {interrupt_message(stop.sig)}: minigraph {what} {late}; it was killed, and "
         "nothing it measured was saved", file=sys.stderr)
    return 128 + stop.sig


def _send(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
