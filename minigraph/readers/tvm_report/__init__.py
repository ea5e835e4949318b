"""TVM's own profiler reports read into Profiles: parsing is serialisation, next to the data.

The readers follow TVM's printing code (src/runtime/profiling.cc ``ReportNode::AsTable``,
``AsCSV``, ``AsJSON``; python/tvm/runtime/profiling/__init__.py; ``BenchmarkResult`` in
python/tvm/runtime/module.py) at the tags that printed them, 0.8 to 0.23:

    sniff(data)            -> "table" | "csv" | "json" | "benchmark" | None
    read_report(data, src) -> Profile (source kind "tvm-report"), or an InputError naming the line

Modules: numbers (the locale's digit grouping), table (the text table, by column position),
formats (CSV and JSON), benchmark (BenchmarkResult), rows (the Report as read), convert
(Report -> Profile: one op per call, the protocol it came from).
"""
from __future__ import annotations

import csv

from ...errors import InputError
from ...fileio.jsontext import loads_strict
from .benchmark import is_benchmark, read_benchmark
from .convert import to_profile
from .formats import read_csv, read_json
from .rows import check_calls, check_numbers
from .table import collapsed_header, header_lines, read_table


def _first_line(data: bytes) -> bytes:
    stripped = data.removeprefix(b"\xef\xbb\xbf").lstrip()
    return stripped.split(b"\n", 1)[0].rstrip(b"\r")


def _is_tvm_json(data: bytes) -> bool:
    if not data.lstrip().startswith(b"{") or b'"calls"' not in data:
        return False
    try:
        doc = loads_strict(data)
    except (ValueError, RecursionError):
        return b'"format"' not in data  # broken JSON with TVM's key: let the reader say where
    return isinstance(doc, dict) and "calls" in doc and "format" not in doc


def _is_csv_header(line: bytes) -> bool:
    """``AsCSV``'s header: the metric names, comma-separated, "Name" and "Duration (us)"
    among them."""
    if b"Duration (us)" not in line or b"," not in line:
        return False
    try:
        cells = next(csv.reader([line.decode("utf-8", "replace")]), [])
    except csv.Error:  # a stray carriage return, a field over csv's limit: not TVM's header
        return False
    return "Name" in cells and "Duration (us)" in cells


def sniff(data: bytes) -> str | None:
    """Which TVM report form ``data`` holds, None if none (then it may be a saved profile)."""
    if _is_tvm_json(data):
        return "json"
    if _is_csv_header(_first_line(data)):
        return "csv"
    if b"Duration (us)" in data:
        lines = data.split(b"\n")
        if header_lines(lines) or collapsed_header(lines) is not None:
            return "table"
    if is_benchmark(data):
        return "benchmark"
    return None


def read_report(data: bytes, source: str):
    """The report in ``data`` (any form sniff recognises) as a Profile."""
    kind = sniff(data)
    if kind == "table" and not header_lines(data.split(b"\n")):
        at = collapsed_header(data.split(b"\n"))
        if at is not None:
            raise InputError(f"{source}: line {at + 1}: a TVM table header whose columns are "
                             "not two spaces apart: its spacing was changed (copied from a "
                             "rendered web page?); copy the raw text (the post's source)")
    readers = {"table": read_table, "csv": read_csv, "json": read_json,
               "benchmark": read_benchmark}
    if kind is None:
        raise InputError(f"{source}: not a TVM profiler report (no table header 'Name  "
                         "Duration (us) ...', no CSV or JSON report, no benchmark result)")
    report = readers[kind](data, source)
    check_calls(list(report.calls), source)
    check_numbers(report, source)
    if kind != "benchmark" and is_benchmark(data):
        report = _with_benchmark(report, data, source)
    return to_profile(report, source)


def _with_benchmark(report, data: bytes, source: str):
    """A log holding the profiler's table and ``print(module.benchmark(...))`` (the classic
    complaint, both in one file): the benchmark is kept as the whole-run time."""
    from dataclasses import replace

    try:
        bench = read_benchmark(data, source).benchmark
    except InputError as err:
        return replace(report, notes=report.notes + (f"a benchmark result in the same file "
                                                     f"was not read: {err}",))
    return replace(report, benchmark=bench, notes=report.notes + (
        "a BenchmarkResult in the same file: kept as the whole-run time",))
