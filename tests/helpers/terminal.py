"""A command run with its stderr on a pseudo-terminal, so it draws its progress line: a test
can then act at a real point of the run (the line names a mode) instead of guessing from
thread counts or sleeps, which a busy machine turns into races."""
from __future__ import annotations

import contextlib
import os
import pty
import subprocess
import threading

import psutil


class OnTerminal:
    """``argv`` started with stdout piped and stderr on a pty that is read to its end (a
    full pty would stall the child)."""

    def __init__(self, argv: list[str], **popen) -> None:
        master, slave = pty.openpty()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=slave, **popen)
        os.close(slave)
        self._master, self._seen, self._lock = master, bytearray(), threading.Lock()
        self._grew = threading.Condition(self._lock)
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self._master, 4096)
            except OSError:  # EIO: the child closed its side
                chunk = b""
            with self._grew:
                self._seen.extend(chunk)
                self._grew.notify_all()
            if not chunk:
                return

    def wait_for(self, marker: bytes, timeout_s: float) -> bool:
        """True once ``marker`` was drawn on the terminal; False after ``timeout_s``."""
        with self._grew:
            return self._grew.wait_for(lambda: marker in self._seen, timeout_s)

    def finish(self, timeout_s: float) -> tuple[bytes, bytes]:
        """Waits for the command; its stdout and everything drawn on the terminal. On a
        timeout the command and its children are killed first: a test that failed leaves
        no process behind to load the machine for the tests after it."""
        try:
            stdout, _ = self.proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            raise
        self._reader.join(10)
        os.close(self._master)
        with self._lock:
            return stdout, bytes(self._seen)

    def kill(self) -> None:
        """SIGKILL to the command and everything it started."""
        with contextlib.suppress(psutil.NoSuchProcess):
            for p in [*psutil.Process(self.proc.pid).children(recursive=True)]:
                with contextlib.suppress(psutil.NoSuchProcess):
                    p.kill()
        self.proc.kill()
        self.proc.communicate()

    def __enter__(self) -> OnTerminal:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.kill()
