"""``Report.csv()`` and ``Report.json()`` (and ``Report.from_json``'s input) read back.

Counterparts in src/runtime/profiling.cc (TVM 0.8-0.23):
- ``ReportNode::AsCSV``: the calls only (no Sum, no Total), one per call in call order; the
  header is every metric name in byte order; strings in double quotes (never escaped: shapes
  hold commas inside the quotes), numbers in the C locale's default format ("1234.57",
  "1.23457e+06"), missing metrics empty.
- ``ReportNode::AsJSON``: ``{"calls": [...], "device_metrics": {device: {...}},
  "configuration": {...}}`` (configuration from 0.9), every metric an object with one key:
  ``{"string": s}``, ``{"count": n}``, ``{"microseconds": x}``, ``{"percent": x}`` or
  ``{"ratio": x}`` (0.9+). ``FromJSON`` (``parse_metrics``) refuses any other key; so do we.
"""
from __future__ import annotations

import csv
import io
import math

from ...errors import InputError
from ...fileio.jsontext import loads_strict
from .rows import COUNT, DURATION, NAME, PERCENT, STRING_COLUMNS, TvmReport, is_layout, make_row

_METRIC_KEYS = ("string", "count", "microseconds", "percent", "ratio")


def _decode(data: bytes, source: str) -> str:
    try:
        return data.removeprefix(b"\xef\xbb\xbf").decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"{source}: not UTF-8 text ({err.reason} at byte {err.start})") from None


def _csv_value(column: str, cell: str, where: str) -> object:
    if cell == "":
        return None
    if column in STRING_COLUMNS or is_layout(column):
        return cell
    try:
        if column == COUNT:
            return int(cell)
        if column in (DURATION, PERCENT) or _numeric(cell):
            value = float(cell)
            if not math.isfinite(value) and column == DURATION:
                raise ValueError
            return value if math.isfinite(value) else None
    except ValueError:
        raise InputError(f"{where}: column '{column}': '{cell[:40]}' is not a number") from None
    return cell


def _numeric(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def read_csv(data: bytes, source: str) -> TvmReport:
    """The calls of ``report.csv()``; the Total is recomputed from Percent where it can be
    (Percent = Duration / Total x 100), and the report says so."""
    text = _decode(data, source)
    try:
        table = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    except csv.Error as err:
        raise InputError(f"{source}: not CSV ({err})") from None
    table = [r for r in table if r]
    if not table or NAME not in table[0] or DURATION not in table[0]:
        raise InputError(f"{source}: not a TVM report CSV (the header has no 'Name' and "
                         "'Duration (us)')")
    head = table[0]
    if len(set(head)) != len(head):
        raise InputError(f"{source}: line 1: the header names a column twice")
    calls = []
    for i, cells in enumerate(table[1:], start=2):
        if len(cells) != len(head):
            raise InputError(f"{source}: row {i}: {len(cells)} cells under {len(head)} "
                             "columns (truncated or quotes unbalanced?)")
        metrics = {c: _csv_value(c, v, f"{source}: row {i}") for c, v in zip(head, cells)}
        calls.append(make_row(metrics))
    notes, totals = [], ()
    best = max((r for r in calls if r.percent and r.duration_us), default=None,
               key=lambda r: r.percent or 0.0)
    if best is not None:
        total = 100 * (best.duration_us or 0.0) / (best.percent or 1.0)
        totals = (make_row({NAME: "Total", DURATION: total}),)
        notes.append(f"no Total in a CSV report: {total:,.2f} us recomputed from the "
                     f"Percent of '{best.name}' (Percent = Duration / Total x 100)")
    return TvmReport("csv", tuple(calls), None, totals, {}, tuple(head), {}, tuple(notes),
                     total_derived=bool(totals))


def _metric(value: object, where: str) -> object:
    """One ``{"type": value}`` metric, checked as FromJSON's parse_metrics checks it."""
    if not isinstance(value, dict) or len(value) != 1 or next(iter(value)) not in _METRIC_KEYS:
        raise InputError(f"{where}: must be one of {{\"string\": ...}}, {{\"count\": ...}}, "
                         "{\"microseconds\": ...}, {\"percent\": ...}, {\"ratio\": ...}")
    kind, v = next(iter(value.items()))
    if kind == "string":
        if not isinstance(v, str):
            raise InputError(f"{where}: a string metric must hold a string")
        return v
    if kind == "count":
        if type(v) is not int or abs(v) >= 2**63:
            raise InputError(f"{where}: a count must be a 64-bit integer")
        return v
    if type(v) not in (int, float) or not math.isfinite(v) or abs(v) > 1e15:
        raise InputError(f"{where}: {kind} must be a finite number")
    return float(v)


def _metrics(obj: object, where: str) -> dict[str, object]:
    if not isinstance(obj, dict):
        raise InputError(f"{where}: must be an object of metrics")
    return {str(k): _metric(v, f"{where}.{k}") for k, v in obj.items()}


def read_json(data: bytes, source: str) -> TvmReport:
    """``report.json()``: calls in call order, one Total per device, the configuration."""
    try:
        doc = loads_strict(_decode(data, source))
    except (ValueError, RecursionError) as err:
        raise InputError(f"{source}: not JSON ({err})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("calls"), list):
        raise InputError(f"{source}: not a TVM report JSON (no \"calls\" list)")
    calls = [make_row(_metrics(c, f"{source}: calls[{i}]")) for i, c in enumerate(doc["calls"])]
    devices = doc.get("device_metrics", {})
    if not isinstance(devices, dict):
        raise InputError(f"{source}: device_metrics: must be an object")
    totals = tuple(make_row({**_metrics(m, f"{source}: device_metrics.{d}"), NAME: "Total",
                             "Device": str(d)}) for d, m in devices.items())
    config = _metrics(doc.get("configuration", {}), f"{source}: configuration")
    columns = sorted({k for c in doc["calls"] if isinstance(c, dict) for k in c})
    return TvmReport("json", tuple(calls), None, totals,
                     {k: v for k, v in config.items() if isinstance(v, (str, int, float))},
                     tuple(columns))
