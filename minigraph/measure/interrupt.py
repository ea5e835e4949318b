"""SIGTERM handled like Ctrl-C, so a killed profile or diagnose still writes what it measured.

Python turns SIGINT into KeyboardInterrupt; SIGTERM (``kill``, a CI timeout, a container stop)
would end the process at once and lose a long measurement. Inside ``terminate_as_interrupt()``
SIGTERM raises KeyboardInterrupt in the main thread instead, so the same partial-results path
runs (results marked partial, written atomically, subprocesses reaped).
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
