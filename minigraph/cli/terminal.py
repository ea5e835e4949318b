"""Text for the terminal: what the CLI prints, with every control character made visible, and
the standard streams it prints to, whatever state the shell left them in.

Reports print names read from files (op and kernel names from graph.json, a saved profile or a
TVM report, error messages quoting them). A name holding ``\\x1b[2J`` would clear the user's
screen, one holding ``\\x1b]8;;...`` would plant a link, a NUL or a carriage return would hide
what follows: so every C0 control character but newline and tab, DEL and the C1 controls are
printed as ``\\xNN`` escapes. The CLI's own progress line (a carriage return, nothing from a
file) is the one text printed without this.

A shell may start the command with stdout closed (``minigraph run out >&-``): Python then has
no ``sys.stdout`` and the next file the command opens would become descriptor 1, so
``open_standard_streams`` puts /dev/null there (the report is discarded, everything else
works, files are written). A stdout that refuses the report (``> /dev/full``: no space) is an
``OutputError``, said in one line, not an internal error.
"""
from __future__ import annotations

import os
import sys
from typing import TextIO

from ..errors import MinigraphError
from ..fileio.printable import visible

_STREAMS = ((0, "stdin", os.O_RDONLY, "r"), (1, "stdout", os.O_WRONLY, "w"),
            (2, "stderr", os.O_WRONLY, "w"))


class OutputError(MinigraphError):
    """stdout or stderr refused what was printed (a full disk, an I/O error)."""


def escape(text: str) -> str:
    """``text`` with its control characters (but newline and tab) as visible ``\\xNN``
    (fileio/printable.py ``visible``: the HTML pages show them the same way)."""
    return visible(text)


def _stream_name(stream: TextIO) -> str:
    return {id(sys.stdout): "stdout", id(sys.stderr): "stderr"}.get(
        id(stream), str(getattr(stream, "name", "the output")))


def emit(text: object = "", *, file: TextIO | None = None, end: str = "\n",
         flush: bool = False) -> None:
    """``print`` for anything that may hold text from a file: control characters escaped; a
    stream that refuses the text is an OutputError (a closed pipe stays a BrokenPipeError)."""
    stream = file if file is not None else sys.stdout
    try:
        print(escape(str(text)), file=stream, end=end, flush=flush)
    except BrokenPipeError:
        raise
    except OSError as err:
        raise OutputError(f"cannot write to {_stream_name(stream)}: "
                          f"{err.strerror or err}") from err


def flush_stdout() -> None:
    """What is still buffered for stdout, written now: a full disk is said by the command,
    not by Python's 'Exception ignored' at exit."""
    emit("", end="", flush=True)


def discard_stdout() -> None:
    """stdout from here on goes to /dev/null (what is still buffered too): after a reader
    closed the pipe, or the disk was full, the exit's own flush must not fail again."""
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, sys.stdout.fileno())
    finally:
        os.close(null)


def open_standard_streams() -> None:
    """Descriptors 0, 1 and 2 that the shell closed (``>&-``) get /dev/null, and Python's
    ``sys.stdin/stdout/stderr`` a stream on it: nothing printed fails, and no file the command
    opens later (a saved profile, a library) takes descriptor 1 and receives the report."""
    for fd, name, flags, mode in _STREAMS:
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, flags)  # the lowest free descriptor: ``fd``
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, mode, closefd=False))  # noqa: SIM115 - lives on
