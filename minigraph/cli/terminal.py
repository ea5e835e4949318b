"""Text for the terminal: what the CLI prints, with every control character made visible.

Reports print names read from files (op and kernel names from graph.json, a saved profile or a
TVM report, error messages quoting them). A name holding ``\\x1b[2J`` would clear the user's
screen, one holding ``\\x1b]8;;...`` would plant a link, a NUL or a carriage return would hide
what follows: so every C0 control character but newline and tab, DEL and the C1 controls are
printed as ``\\xNN`` escapes. The CLI's own progress line (a carriage return, nothing from a
file) is the one text printed without this.
"""
from __future__ import annotations

import sys
from typing import TextIO

from ..report.units import visible


def escape(text: str) -> str:
    """``text`` with its control characters (but newline and tab) as visible ``\\xNN``
    (report/units.py ``visible``: the HTML pages show them the same way)."""
    return visible(text)


def emit(text: object = "", *, file: TextIO | None = None, end: str = "\n",
         flush: bool = False) -> None:
    """``print`` for anything that may hold text from a file: control characters escaped."""
    print(escape(str(text)), file=file if file is not None else sys.stdout, end=end,
          flush=flush)
