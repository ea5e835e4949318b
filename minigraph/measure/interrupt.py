"""SIGTERM handled like Ctrl-C, so a killed profile or diagnose still writes what it measured.

Python turns SIGINT into KeyboardInterrupt; SIGTERM (``kill``, a CI timeout, a container stop)
would end the process at once and lose a long measurement. Inside ``terminate_as_interrupt()``
SIGTERM raises KeyboardInterrupt in the main thread instead, so the same partial-results path
runs (results marked partial, written atomically, subprocesses reaped).
``interrupts_kept()`` makes sure an interrupt that arrived inside TVM (which reports it as an
empty RuntimeError) still ends as KeyboardInterrupt: ``build`` exits 130 saying so.
"""
from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


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
        raise KeyboardInterrupt(f"signal {signum}")
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
