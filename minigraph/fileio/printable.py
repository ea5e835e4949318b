"""Text read from files, made printable: every control character shown as a visible ``\\xNN``.

Names in saved documents and TVM reports come from files anyone can write: a name holding
``\\x1b[2J`` would clear a terminal, a NUL or carriage return hide what follows, a newline start
a line of its own (one that could pass for a "Summary:" or a verdict). Every room that puts
such text into a sentence or a table cell goes through this one table: report/ and its HTML
pages, the analysis' verdicts (analysis/verdict.py), the CLI's output (cli/terminal.py).
"""
from __future__ import annotations

# every C0 control character, DEL and the C1 controls, as a visible \xNN escape
_ONE_LINE = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))}
_TEXT = {c: e for c, e in _ONE_LINE.items() if chr(c) not in "\n\t"}


def visible(text: object) -> str:
    """``text`` with every control character but newline and tab shown as ``\\xNN``: a name
    holding ``\\x1b[2J`` would clear a terminal, a NUL or carriage return hide what follows
    (what the CLI prints, cli/terminal.py, and the HTML pages)."""
    return str(text).translate(_TEXT)


def one_line(text: object) -> str:
    """A name (an op's, a kernel's, a device's: single-line fields) as one line of text: a
    newline in it, from a crafted file, is shown as ``\\x0a`` instead of starting a line of
    its own (one that could pass for a "Summary:" or a verdict); every other control
    character as ``visible`` shows it, so a table cell is as wide as it prints."""
    return str(text).translate(_ONE_LINE)
