"""The text table ``print(report)`` / ``Report.table()`` printed, read by column position.

Counterpart: ``ReportNode::AsTable`` (src/runtime/profiling.cc, TVM 0.8-0.23). Its layout:
- a header of column names: "Name", "Duration (us)", "Percent", "Device", "Count",
  "Argument Shapes" always, in that order, then every other metric name in byte order
  ("Hash", "VM::Argument Shapes", "data_layout", ..., collector metrics);
- every cell padded with ``std::setw`` to its column's widest cell and followed by two spaces:
  the Name column left-aligned, every other column right-aligned (so a cell ends exactly where
  its header ends); a missing metric is an empty cell;
- the calls (aggregated by hash + shapes + device and sorted by duration by default), a
  separator row "----------", the "Sum" row, one "Total" row per device (``device_metrics``),
  then (0.9+) a blank line and a "Configuration" block of "key: value" lines.
``std::setw`` counts bytes, not characters, so positions are taken on the UTF-8 bytes (a
locale's U+202F thousands separator is 3 bytes wide). Shapes hold ", " and numbers may hold
spaces, so cells are cut at the header's positions, never split on whitespace; a line that does
not fit the columns is an InputError naming it.
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass, replace

from ...errors import InputError
from .numbers import Numerals
from .rows import COUNT, DURATION, PERCENT, STRING_COLUMNS, TvmReport, is_layout, make_row
from .wrap import rejoin

_GAP = re.compile(rb" {2,}")
SEPARATOR = "----------"


@dataclass(frozen=True)
class Layout:
    """Where each column's cells lie in a table line (byte offsets after the indent)."""

    indent: int
    names: tuple[str, ...]
    spans: tuple[tuple[int, int], ...]   # (start, end) per column; end is exclusive


def _blank(b: bytes) -> bool:
    return not b.strip(b" ")


def header_lines(lines: list[bytes]) -> list[int]:
    """Indexes of lines that open a TVM table: "Name" first, "Duration (us)" among the
    columns, columns two or more spaces apart."""
    found = []
    for i, line in enumerate(lines):
        if b"Duration (us)" not in line:
            continue
        cells = _GAP.split(line.strip(b" "))
        if cells[0] == b"Name" and b"Duration (us)" in cells and line.lstrip(b" ").startswith(
                b"Name "):
            found.append(i)
    return found


def collapsed_header(lines: list[bytes]) -> int | None:
    """A header whose columns are not two spaces apart: spacing lost (copied from a web page)."""
    heads = set(header_lines(lines))
    return next((i for i, line in enumerate(lines) if i not in heads and
                 line.lstrip(b" ").startswith(b"Name ") and b"Duration (us)" in line), None)


def _first_run(line: bytes) -> int:
    """Width of the left-aligned Name cell's text: up to the first two-space gap."""
    m = _GAP.search(line)
    return len(line[:m.start()] if m else line.rstrip(b" "))


def layout(header: bytes, body: list[bytes], where: str) -> Layout:
    """Column spans from the header: every column but Name ends where its header text ends."""
    indent = len(header) - len(header.lstrip(b" "))
    head = header[indent:]
    tokens = [(m.start(), m.end()) for m in re.finditer(rb"\S+(?: \S+)*", head)]
    names = tuple(head[s:e].decode("utf-8", "replace") for s, e in tokens)
    if len(set(names)) != len(names):
        raise InputError(f"{where}: the header names a column twice")
    width0 = max([_first_run(line[indent:]) for line in [head, *body]])
    if len(tokens) > 1 and width0 + 2 > tokens[1][0]:
        raise InputError(f"{where}: the Name column runs into '{names[1]}': the columns are "
                         "misaligned (was the table re-wrapped or its spacing changed?)")
    spans = [(0, width0)]
    for _, end in tokens[1:]:
        spans.append((spans[-1][1] + 2, end))
    return Layout(indent, names, tuple(spans))


def cut(line: bytes, lay: Layout, lineno: int, source: str) -> list[str]:
    """The cells of one table line; InputError when text leaves its column."""
    where = f"{source}: line {lineno}"
    if b"\t" in line:
        raise InputError(f"{where}: tab characters in the table: its spacing was changed")
    if not _blank(line[:lay.indent]):
        raise InputError(f"{where}: does not start at the table's indentation")
    line = line[lay.indent:]
    cells = []
    for col, (start, end) in enumerate(lay.spans):
        cell = line[start:end].ljust(end - start)   # a line cut short leaves its cell short
        gutter = line[end:end + 2]
        if not _blank(gutter):
            raise InputError(f"{where}: text in the gap after column '{lay.names[col]}' (byte "
                             f"{lay.indent + end + 1}): the columns are misaligned")
        if not col and cell.startswith(b" ") and not _blank(cell):
            raise InputError(f"{where}: the Name cell does not start at the table's left edge: "
                             "the columns are misaligned")
        if col and not _blank(cell) and cell.endswith(b" "):
            raise InputError(f"{where}: the '{lay.names[col]}' cell does not end under its "
                             "header: the line is truncated or the columns are misaligned")
        cells.append(cell.decode("utf-8", "replace").strip(" "))
    if not _blank(line[lay.spans[-1][1]:]):
        raise InputError(f"{where}: text beyond the last column '{lay.names[-1]}'")
    return cells


class _Typer:
    """Types cells by column: TVM's known columns now, other columns once all are read."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
        self.numerals = Numerals()

    def known(self, cells: list[str], where: str) -> dict[str, object]:
        typed: dict[str, object] = {}
        for name, cell in zip(self.names, cells):
            if not cell:
                continue
            try:
                if name == DURATION:
                    typed[name] = self.numerals.duration(cell)
                elif name == PERCENT:
                    typed[name] = self.numerals.percent(cell)
                elif name == COUNT:
                    typed[name] = self.numerals.count(cell)
                else:
                    typed[name] = cell
            except ValueError as err:
                raise InputError(f"{where}: column '{name}': {err}") from None
        return typed

    def extra(self, rows: list[dict[str, object]]) -> None:
        """Collector metrics (PAPI counters, ...): counts, else durations, else text."""
        for name in self.names:
            if name in STRING_COLUMNS or is_layout(name) or name in (DURATION, PERCENT, COUNT):
                continue
            cells = [r[name] for r in rows if isinstance(r.get(name), str)]
            for how in ("count", "duration", "ratio"):
                trial = copy.copy(self.numerals)
                try:
                    values = [getattr(trial, how)(c) for c in cells]
                except ValueError:
                    continue
                self.numerals = trial
                for r in rows:
                    if isinstance(r.get(name), str):
                        r[name] = values.pop(0)
                break


def _configuration(lines: list[bytes], at: int, typer: _Typer) -> dict[str, str | float]:
    """The "Configuration" block after the table (TVM 0.9+): "key: value" lines."""
    text = [ln.decode("utf-8", "replace").strip() for ln in lines[at:]]
    while text and not text[0]:
        text = text[1:]
    if len(text) < 2 or text[0] != "Configuration" or set(text[1]) != {"-"}:
        return {}
    config: dict[str, str | float] = {}
    for line in text[2:]:
        key, sep, value = line.partition(": ")
        if not sep:
            break
        try:
            config[key] = typer.numerals.count(value)
        except ValueError:
            config[key] = value
    return config


def _table_end(lines: list[bytes], start: int) -> int:
    """The table runs to the first blank line; whatever follows its last Total row without
    a blank line (a prompt, a code fence) is not part of it."""
    end = next((i for i in range(start + 1, len(lines)) if _blank(lines[i])), len(lines))
    totals = [i for i in range(start + 1, end) if lines[i].lstrip(b" ").startswith(b"Total ")
              or lines[i].strip(b" ") == b"Total"]
    return totals[-1] + 1 if totals else end


def read_table(data: bytes, source: str) -> TvmReport:
    """Parses the one TVM table in ``data`` (log lines before it are skipped)."""
    lines = [ln.rstrip(b"\r") for ln in data.removeprefix(b"\xef\xbb\xbf").split(b"\n")]
    heads = header_lines(lines)
    if len(heads) != 1:
        raise InputError(f"{source}: {len(heads)} TVM tables (headers on lines "
                         f"{', '.join(str(h + 1) for h in heads)}); keep one per file")
    try:
        return _parse(lines, heads[0], source)
    except InputError:
        wrapped = rejoin(lines, heads[0])
        if wrapped is None:
            raise
    try:
        report = _parse(wrapped[0], heads[0], source + " (rejoined)")
    except InputError:
        return _parse(lines, heads[0], source)   # the error as the file stands
    return replace(report, notes=report.notes + (
        f"the table's lines were wrapped at {wrapped[1]} columns (a terminal copy): rejoined; "
        "line numbers count the rejoined lines",))


def _parse(lines: list[bytes], start: int, source: str) -> TvmReport:
    end = _table_end(lines, start)
    lay = layout(lines[start], lines[start + 1:end], f"{source}: line {start + 1}")
    typer = _Typer(lay.names)
    parsed = _rows(lines, start, end, lay, typer, source)
    typer.extra([m for m, _ in parsed.rows])
    rows = [make_row(m, ln) for m, ln in parsed.rows]
    calls, rest = rows[:parsed.n_calls], rows[parsed.n_calls:]
    has_sum = parsed.n_sum == 1
    return TvmReport("table", tuple(calls), rest[0] if has_sum else None,
                     tuple(rest[1:] if has_sum else rest),
                     _configuration(lines, parsed.end, typer), lay.names,
                     typer.numerals.describe())


@dataclass
class _Parsed:
    rows: list[tuple[dict[str, object], int]]   # typed cells, line number
    n_calls: int
    n_sum: int
    end: int    # index of the first line after the table


def _rows(lines: list[bytes], start: int, end: int, lay: Layout, typer: _Typer,
          source: str) -> _Parsed:
    """Calls until the separator, then Sum, then Total rows; after a Total row, a line that
    does not fit ends the table (a prompt or a code fence pasted right after it)."""
    rows: list[tuple[dict[str, object], int]] = []
    state, n_calls, n_sum = "calls", 0, 0
    for i in range(start + 1, end):
        try:
            cells = cut(lines[i], lay, i + 1, source)
        except InputError:
            if state == "totals":
                return _Parsed(rows, n_calls, n_sum, i)
            raise
        name, others = cells[0], cells[1:]
        if name == SEPARATOR and not any(others):
            if state != "calls":
                raise InputError(f"{source}: line {i + 1}: a second separator row")
            state = "sum"
            continue
        if state == "sum":
            if name != "Sum":
                raise InputError(f"{source}: line {i + 1}: expected the Sum row after the "
                                 f"separator, found '{name}'")
            state, n_sum = "totals", 1
        elif name == "Total" and state == "calls":
            state = "totals"
        elif state == "totals" and name != "Total":
            return _Parsed(rows, n_calls, n_sum, i)
        elif state == "calls":
            n_calls += 1
        rows.append((typer.known(cells, f"{source}: line {i + 1}"), i + 1))
    if state == "sum" or (state == "calls"):
        raise InputError(f"{source}: the table ends at line {end} without its "
                         f"{'Sum' if state == 'sum' else 'Sum or Total'} row (truncated?)")
    return _Parsed(rows, n_calls, n_sum, end)
