"""TVM's Report printing, re-implemented from its rules to make test fixtures (no copied text).

Follows src/runtime/profiling.cc (``ReportNode::AsTable``, ``AsCSV``, ``AsJSON``,
``print_metric``, ``AggregateMetric``) and python/tvm/runtime/module.py (``BenchmarkResult``)
at TVM 0.8-0.23: cells padded with std::setw (bytes), Name left-aligned, everything else
right-aligned, two spaces after every cell, Durations and Counts in the process's locale,
Percent always in the C locale. Metrics are typed with the small classes below.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Dur:
    us: float


@dataclass(frozen=True)
class Cnt:
    n: int


@dataclass(frozen=True)
class Pct:
    p: float


@dataclass(frozen=True)
class Ratio:
    r: float


@dataclass(frozen=True)
class Locale:
    """What std::locale("") gives a stream: thousands separator bytes, decimal point, and the
    glibc grouping (sizes from the right; the last one repeats)."""

    group: bytes = b""
    decimal: bytes = b"."
    grouping: tuple[int, ...] = ()


C = Locale()
EN_US = Locale(b",", b".", (3,))
DE_DE = Locale(b".", b",", (3,))
HI_IN = Locale(b",", b".", (3, 2))
FR_FR = Locale("\u202f".encode(), b",", (3,))        # GCC >= 13: U+202F kept whole
FR_FR_OLD_GCC = Locale(b"\xe2", b",", (3,))          # GCC < 13: first byte of U+202F
DE_CH = Locale(b"'", b".", (3,))
SV_SE = Locale(b" ", b",", (3,))


def _group(digits: str, loc: Locale) -> bytes:
    if not loc.group or not loc.grouping:
        return digits.encode()
    groups, rest, sizes = [], digits, list(loc.grouping)
    while rest:
        size = sizes.pop(0) if len(sizes) > 1 else sizes[0]
        groups.insert(0, rest[-size:])
        rest = rest[:-size]
    return loc.group.join(g.encode() for g in groups)


def fmt_count(n: int, loc: Locale) -> bytes:
    return (b"-" if n < 0 else b"") + _group(str(abs(n)), loc)


def fmt_duration(us: float, loc: Locale) -> bytes:
    if not math.isfinite(us):
        return str(us).encode()
    whole, frac = f"{abs(us):.2f}".split(".")
    return (b"-" if us < 0 else b"") + _group(whole, loc) + loc.decimal + frac.encode()


def fmt_metric(v, loc: Locale) -> bytes:
    if isinstance(v, Cnt):
        return fmt_count(v.n, loc)
    if isinstance(v, Dur):
        return fmt_duration(v.us, loc)
    if isinstance(v, Pct):
        return f"{v.p:.2f}".encode()
    if isinstance(v, Ratio):
        return f"{v.r:.2g}".replace(".", loc.decimal.decode()).encode()
    return v.encode() if isinstance(v, str) else bytes(v)


def _aggregate(values: list, legacy: bool):
    first = values[0]
    if isinstance(first, Dur):
        return Dur(sum(v.us for v in values))
    if isinstance(first, Cnt):
        return Cnt(sum(v.n for v in values))
    if isinstance(first, Pct):
        return Pct(sum(v.p for v in values))
    if isinstance(first, Ratio):
        return Ratio(sum(v.r for v in values) / len(values))
    return first if legacy or all(v == first for v in values) else ""


def aggregate(calls: list[dict], legacy: bool = False) -> list[dict]:
    """AsTable's aggregation: by Hash (else Name) + Argument Shapes + Device."""
    groups: dict[str, list[dict]] = {}
    for c in calls:
        key = c.get("Hash", c["Name"]) + c.get("Argument Shapes", "") + c.get("Device", "")
        groups.setdefault(key, []).append(c)
    out = []
    for members in groups.values():
        keys = {k for m in members for k in m}
        out.append({k: _aggregate([m[k] for m in members if k in m], legacy) for k in keys})
    return out


def col_sums(rows: list[dict]) -> dict:
    sums: dict = {}
    for r in rows:
        for k, v in r.items():
            if isinstance(v, (Dur, Cnt, Pct)):
                sums[k] = _aggregate([sums[k], v], False) if k in sums else v
    return {**sums, "Name": "Sum"}


FIXED = ["Name", "Duration (us)", "Percent", "Device", "Count", "Argument Shapes"]


def as_table(calls: list[dict], device_metrics: dict[str, dict], configuration: dict | None =
             None, *, sort: bool = True, aggregate_calls: bool = True, sums: bool = True,
             loc: Locale = C, legacy: bool = False) -> bytes:
    rows = aggregate(calls, legacy) if aggregate_calls else [dict(c) for c in calls]
    if sort:
        rows.sort(key=lambda r: -r["Duration (us)"].us)
    if sums:
        rows += [{"Name": "----------"}, col_sums(rows)]
    rows += [{**m, "Name": "Total"} for m in device_metrics.values()]
    headers = FIXED + sorted({k for r in rows for k in r} - set(FIXED))
    cols = [[h.encode()] + [fmt_metric(r[h], loc) if h in r else b"" for r in rows]
            for h in headers]
    widths = [max(len(x) for x in col) for col in cols]
    out = b""
    for i in range(len(rows) + 1):
        for c, col in enumerate(cols):
            cell = col[i]
            pad = b" " * (widths[c] - len(cell))
            out += (cell + pad if c == 0 else pad + cell) + b"  "
        out += b"\n"
    if configuration is not None:
        out += b"\nConfiguration\n-------------\n"
        for k, v in configuration.items():
            out += k.encode() + b": " + fmt_metric(v, loc) + b"\n"
    return out


def _csv_number(v) -> str:
    x = v.n if isinstance(v, Cnt) else v.us if isinstance(v, Dur) else \
        v.p if isinstance(v, Pct) else v.r
    return str(x) if isinstance(v, Cnt) else f"{x:g}"


def as_csv(calls: list[dict]) -> str:
    headers = sorted({k for c in calls for k in c})
    lines = [",".join(headers)]
    for c in calls:
        lines.append(",".join("" if h not in c else f'"{c[h]}"' if isinstance(c[h], str)
                              else _csv_number(c[h]) for h in headers))
    return "\n".join(lines) + "\n"


def _json_metric(v, legacy: bool) -> str:
    if isinstance(v, str):
        return '{"string":"' + v + '"}'
    if isinstance(v, Cnt):
        return '{"count":' + str(v.n) + "}"
    kind, x = ("microseconds", v.us) if isinstance(v, Dur) else \
        ("percent", v.p) if isinstance(v, Pct) else ("ratio", v.r)
    return '{"' + kind + '":' + (f"{x:f}" if legacy else f"{x:.17f}") + "}"


def _json_map(m: dict, legacy: bool) -> str:
    return "{" + ",".join(f'"{k}":' + _json_metric(v, legacy) for k, v in m.items()) + "}"


def as_json(calls: list[dict], device_metrics: dict[str, dict], configuration: dict | None =
            None, legacy: bool = False) -> str:
    out = '{"calls":[' + ",".join(_json_map(c, legacy) for c in calls) + "],"
    out += '"device_metrics":{' + ",".join(f'"{d}":' + _json_map(m, legacy)
                                           for d, m in device_metrics.items()) + "}"
    if configuration is not None and not legacy:
        out += ',"configuration":' + _json_map(configuration, legacy)
    return out + "}"


def benchmark_str(results_s: list[float]) -> str:
    import statistics
    ms = [x * 1000 for x in results_s]
    mean, med = statistics.fmean(ms), statistics.median(ms)
    std = statistics.pstdev(ms)
    return ("Execution time summary:\n"
            f"{'mean (ms)':^12} {'median (ms)':^12} {'max (ms)':^12} {'min (ms)':^12} "
            f"{'std (ms)':^12}\n"
            f"{mean:^12.4f} {med:^12.4f} {max(ms):^12.4f} {min(ms):^12.4f} {std:^12.4f}\n"
            "               ")


def benchmark_repr(results_s: list[float]) -> str:
    import statistics
    return (f"BenchmarkResult(min={min(results_s)}, mean={statistics.fmean(results_s)}, "
            f"median={statistics.median(results_s)}, max={max(results_s)}, "
            f"std={statistics.pstdev(results_s)}, results={tuple(results_s)})")


def profiled_run(calls: list[dict], total_us: float, device: str = "cpu0") -> tuple[list, dict]:
    """What Profiler::Report makes of a run: Count 1 and Percent of the Total for every call,
    and the Total row for the device."""
    out = [{"Count": Cnt(1), "Device": device, **c,
            "Percent": Pct(100 * c["Duration (us)"].us / total_us)} for c in calls]
    return out, {device: {"Name": "Total", "Duration (us)": Dur(total_us), "Count": Cnt(1),
                          "Device": device}}
