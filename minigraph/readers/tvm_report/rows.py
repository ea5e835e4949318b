"""One TVM profiling Report as read from any of its printed forms, before it becomes a Profile.

Counterpart: ``tvm::runtime::profiling::ReportNode`` (src/runtime/profiling.cc, TVM 0.8-0.23):
``calls`` (one metrics map per call, or per aggregated group of calls in ``AsTable``),
``device_metrics`` (the "Total" rows: the whole profiled run per device) and, from 0.9,
``configuration`` ("Number of threads", "Executor"). The metric names are TVM's columns:
"Name", "Duration (us)", "Percent", "Count", "Device", "Argument Shapes", "Hash", attributes
whose name contains "layout" (``GraphExecutorDebug::Profile`` and the VM profiler copy them from
the fused function), "VM::Argument Shapes", and whatever a MetricCollector adds (PAPI counters).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ...errors import InputError

MAX_CALLS = 1 << 20   # calls in one report (a ResNet-50 pass makes ~100-300)
NAME, DURATION, PERCENT, COUNT = "Name", "Duration (us)", "Percent", "Count"
DEVICE, SHAPES, HASH = "Device", "Argument Shapes", "Hash"
STRING_COLUMNS = (NAME, DEVICE, SHAPES, HASH, "VM::Argument Shapes")


def is_layout(column: str) -> bool:
    """TVM copies every fused-function attribute whose name contains "layout"."""
    return "layout" in column


@dataclass(frozen=True)
class ReportRow:
    """One call (or one aggregated group of ``count`` calls), the Sum row or a Total row."""

    name: str
    duration_us: float | None
    percent: float | None = None
    count: int | None = None
    device: str = ""
    shapes: str = ""
    hash: str = ""
    layouts: dict[str, str] = field(default_factory=dict)
    attrs: dict[str, str] = field(default_factory=dict)      # other string columns
    metrics: dict[str, float] = field(default_factory=dict)  # other numeric columns
    line: int = 0   # 1-based line of the text table; 0 when not read from a text line

    def to_dict(self) -> dict:
        return {"name": self.name, "duration_us": self.duration_us, "percent": self.percent,
                "count": self.count, "device": self.device, "shapes": self.shapes,
                "hash": self.hash, "layouts": dict(self.layouts), "attrs": dict(self.attrs),
                "metrics": dict(self.metrics), "line": self.line}


@dataclass(frozen=True)
class TvmReport:
    """Everything one printed Report holds; ``format``: table | csv | json | benchmark."""

    format: str
    calls: tuple[ReportRow, ...]
    sum: ReportRow | None = None
    totals: tuple[ReportRow, ...] = ()
    configuration: dict[str, str | float] = field(default_factory=dict)
    columns: tuple[str, ...] = ()
    numbers: dict = field(default_factory=dict)   # the locale's separators (text tables)
    notes: tuple[str, ...] = ()
    total_derived: bool = False    # the Total was recomputed from Percent (CSV has no Total)
    benchmark: dict | None = None  # BenchmarkResult: mean/median/max/min/std ms, results s


def make_row(metrics: dict[str, object], line: int = 0) -> ReportRow:
    """A row from one typed metrics map (column -> str | int | float | None); every reader
    (text, CSV, JSON) builds its rows here so they mean the same thing."""
    def text(key: str) -> str:
        value = metrics.get(key)
        return value if isinstance(value, str) else ""

    def number(key: str) -> float | None:
        value = metrics.get(key)
        return float(value) if isinstance(value, (int, float)) else None
    count = metrics.get(COUNT)
    known = {NAME, DURATION, PERCENT, COUNT, DEVICE, SHAPES, HASH}
    rest = {k: v for k, v in metrics.items() if k not in known and v is not None}
    return ReportRow(
        name=text(NAME), duration_us=number(DURATION), percent=number(PERCENT),
        count=count if isinstance(count, int) else None, device=text(DEVICE),
        shapes=text(SHAPES), hash=text(HASH),
        layouts={k: v for k, v in rest.items() if is_layout(k) and isinstance(v, str)},
        attrs={k: v for k, v in rest.items() if not is_layout(k) and isinstance(v, str)},
        metrics={k: float(v) for k, v in rest.items() if isinstance(v, (int, float))},
        line=line)


def _where(row: ReportRow, what: str) -> str:
    return f"line {row.line}" if row.line else what


MAX_US = 1e15  # 31 years: a saved profile holds durations under 1e18 ns


def check_calls(calls: list[ReportRow], source: str, what: str = "call") -> None:
    """Every call row carries a finite, non-negative duration and a positive count."""
    for i, row in enumerate(calls):
        where = _where(row, f"{what} {i}")
        if row.duration_us is None:
            raise InputError(f"{source}: {where}: no '{DURATION}' for '{row.name}'")
        if row.duration_us < 0:
            raise InputError(f"{source}: {where}: negative duration {row.duration_us} us")
        if not math.isfinite(row.duration_us) or row.duration_us >= MAX_US:
            raise InputError(f"{source}: {where}: duration {row.duration_us:g} us is not a "
                             "time one run could take (under 1e15 us)")
        if row.count is not None and not 1 <= row.count <= MAX_CALLS:
            raise InputError(f"{source}: {where}: Count {row.count} is not a number of calls "
                             f"(1 to {MAX_CALLS:,})")
    if sum(r.count or 1 for r in calls) > MAX_CALLS:
        raise InputError(f"{source}: more than {MAX_CALLS:,} calls: not one profiled run")


def check_numbers(report: TvmReport, source: str) -> None:
    """The Sum and Total rows, and every row's Percent and metrics, hold numbers a profile can
    keep (finite, within 1e15; counts not negative): checked once, when read, so an accepted
    report survives its own re-save."""
    rows = [(r, _where(r, f"call {i}")) for i, r in enumerate(report.calls)]
    rows += [(report.sum, _where(report.sum, "the Sum row"))] if report.sum is not None else []
    rows += [(t, _where(t, f"Total row {i}")) for i, t in enumerate(report.totals)]
    for row, where in rows:
        values = [("duration", row.duration_us), ("Percent", row.percent),
                  *row.metrics.items()]
        for what, v in values:
            if v is not None and not (math.isfinite(v) and abs(v) < MAX_US):
                raise InputError(f"{source}: {where}: {what} {v:g} is not a number a report "
                                 "holds (finite, under 1e15)")
        if row.count is not None and row.count < 0:
            raise InputError(f"{source}: {where}: Count {row.count} is negative")


def consistency_notes(report: TvmReport) -> list[str]:
    """What does not add up: the rows against the Sum row, Percent against the Total."""
    notes = []
    calls = report.calls
    if report.sum is not None and report.sum.duration_us is not None:
        rows_us = sum(r.duration_us or 0.0 for r in calls)
        slack = 0.006 * (len(calls) + 1) + 1e-6 * abs(report.sum.duration_us)  # 2-decimal cells
        if abs(rows_us - report.sum.duration_us) > slack:
            notes.append(f"the rows add up to {rows_us:,.2f} us but the Sum row says "
                         f"{report.sum.duration_us:,.2f} us: rows missing or edited?")
        n = sum(r.count or 1 for r in calls)
        if report.sum.count is not None and report.sum.count != n:
            notes.append(f"the rows count {n} calls but the Sum row says {report.sum.count}")
    total = max((t.duration_us or 0.0 for t in report.totals), default=0.0)
    if total > 0 and not report.total_derived:
        off = [r for r in calls if r.percent is not None and r.duration_us is not None
               and abs(100 * r.duration_us / total - r.percent) > 0.02 + 1e-4 * r.percent]
        if off:
            notes.append(f"{len(off)} rows' Percent disagrees with Duration / Total (first: "
                         f"'{off[0].name}' {off[0].percent:.2f}% vs "
                         f"{100 * (off[0].duration_us or 0) / total:.2f}%)")
    return notes
