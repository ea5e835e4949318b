"""SIGTERM handled like Ctrl-C, so a killed profile or diagnose still writes what it measured.

Python turns SIGINT into KeyboardInterrupt; SIGTERM (``kill``, a CI timeout, a container stop)
would end the process at once and lose a long measurement. Inside ``terminate_as_interrupt()``
SIGTERM raises KeyboardInterrupt in the main thread instead, so the same partial-results path
runs (results marked partial, written atomically, subprocesses reaped).
``interrupts_kept()`` makes sure an interrupt that arrived inside TVM (which reports it as an
empty RuntimeError) still ends as KeyboardInterrupt: ``build`` exits 130 saying so.
Which signal it was is kept (``interrupted_by``): the CLI exits 128 + that signal, as a shell
reports a process the signal ended (130 for Ctrl-C, 143 for SIGTERM). Taking one is marked in
the process's in-flight record (measure/inflight.py), so the CLI's supervisor knows the command
is saving what it measured, not stuck in native code (where Python sees no signal: the
supervisor kills such a command within a second, cli/supervise.py).
"""
from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator

from .inflight import FLIGHT

_ARRIVED: list[int] = []  # the signals turned into KeyboardInterrupt in this process, in order


def _raise_interrupt(signum: int, frame: object) -> None:
    _ARRIVED.append(signum)
    FLIGHT.interrupted(signum)  # taken: the supervisor waits for what is saved
    raise KeyboardInterrupt(f"signal {signum}")


def take_ctrl_c() -> None:
    """Ctrl-C raises KeyboardInterrupt as Python's own handler does, and marks the record as
    taken (the CLI's supervised child sets it once; a SIGINT ignored stays ignored)."""
    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _raise_interrupt)


def interrupted_by() -> int:
    """The signal behind the last interrupt: SIGTERM if one was turned into an interrupt
    here, else SIGINT (Python's own handler raised it)."""
    return _ARRIVED[-1] if _ARRIVED else int(signal.SIGINT)


def interrupt_exit_code() -> int:
    """128 + the signal (``interrupted_by``), as a shell reports a process it ended."""
    return 128 + interrupted_by()


def interrupt_message(sig: int | None = None) -> str:
    """'interrupted' (Ctrl-C) or 'terminated (SIGTERM)', for the CLI's error line (``sig``:
    that signal's; default: ``interrupted_by``)."""
    sig = interrupted_by() if sig is None else sig
    return "interrupted" if sig == signal.SIGINT else \
        f"terminated ({signal.Signals(sig).name})"


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises KeyboardInterrupt (main thread only; else a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def interrupts_kept() -> Iterator[None]:
    """Within the block, Ctrl-C or SIGTERM always ends as KeyboardInterrupt, even when it
    arrived inside TVM: TVM's FFI turns the KeyboardInterrupt raised by Python's handler into an
    empty ``RuntimeError`` (e.g. during ``tvm.compile``). Any exception raised after a signal
    arrived is taken for that interrupt (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []

    def handler(signum: int, frame: object) -> None:
        arrived.append(signum)
        _raise_interrupt(signum, frame)
    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    except KeyboardInterrupt:
        raise
    except Exception as err:
        if arrived:
            raise KeyboardInterrupt(f"signal {arrived[0]}") from err
        raise
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
