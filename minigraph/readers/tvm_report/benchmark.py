"""``print(module.benchmark(...))``: TVM's ``BenchmarkResult``, printed or repr'd.

Counterpart: ``BenchmarkResult`` in python/tvm/runtime/module.py (TVM 0.8-0.23):
- ``__str__``: "Execution time summary:", a header "mean (ms)  median (ms)  max (ms)  min (ms)
  std (ms)" centred in 12-character fields, then the five values ``{:^12.4f}`` in ms;
- ``__repr__``: ``BenchmarkResult(min=..., mean=..., median=..., max=..., std=...,
  results=...)`` in seconds, ``results`` the raw repeats (a tuple, list or numpy array).
Only the repr carries the raw samples; the summary alone keeps only its five statistics.
"""
from __future__ import annotations

import math
import re

from ...errors import InputError
from .rows import TvmReport

_SUMMARY = re.compile(rb"Execution time summary:")
_REPR = re.compile(rb"BenchmarkResult\(")
_STAT = re.compile(r"(min|mean|median|max|std)=(?:np\.float\d+\()?([-+]?[0-9.]+(?:[eE][-+]?\d+)?"
                   r"|nan|inf)")
_FLOAT = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
STATS = ("mean", "median", "max", "min", "std")


def is_benchmark(data: bytes) -> bool:
    return bool(_SUMMARY.search(data) or _REPR.search(data))


def _finite(values: dict[str, float], where: str) -> dict[str, float]:
    for k, v in values.items():
        if not math.isfinite(v) or not 0 <= v < 1e9:
            raise InputError(f"{where}: {k} {v} is not a duration")
    return values


def _from_summary(text: str, source: str) -> dict[str, float]:
    lines = text.splitlines()
    at = next(i for i, ln in enumerate(lines) if "Execution time summary:" in ln)
    if at + 2 >= len(lines):
        raise InputError(f"{source}: line {at + 1}: the benchmark summary is truncated")
    names = re.findall(r"(\w+) \(ms\)", lines[at + 1])
    values = lines[at + 2].split()
    if not names or set(names) - set(STATS) or len(values) != len(names):
        raise InputError(f"{source}: line {at + 3}: expected {len(names) or 5} values under "
                         f"'{lines[at + 1].strip()}'")
    try:
        stats = {f"{n}_ms": float(v) for n, v in zip(names, values)}
    except ValueError:
        raise InputError(f"{source}: line {at + 3}: not numbers: '{lines[at + 2].strip()}'") \
            from None
    return _finite(stats, f"{source}: line {at + 3}")


def _from_repr(text: str, source: str) -> tuple[dict[str, float], list[float], bool]:
    body = text[text.index("BenchmarkResult("):]
    try:
        stats = {f"{k}_ms": 1e3 * float(v)
                 for k, v in _STAT.findall(body.split("results=")[0])}
    except ValueError:
        stats = {}
    if len(stats) < 3:
        raise InputError(f"{source}: a BenchmarkResult(...) without readable min, mean and "
                         "median")
    raw: list[float] = []
    complete = False
    if "results=" in body:
        inner = body.split("results=", 1)[1]
        inner = re.sub(r"np\.float\d+\(|array\(|dtype=\w+", " ", inner)
        complete = "..." not in inner   # numpy elides long arrays
        try:
            raw = [float(x) for x in _FLOAT.findall(inner)]
        except ValueError:   # _FLOAT only finds floats; kept for safety on odd text
            raw, complete = [], False
    return _finite(stats, source), raw, complete and bool(raw)


def read_benchmark(data: bytes, source: str) -> TvmReport:
    """The one BenchmarkResult in ``data``: its statistics, and its raw repeats when the
    repr was printed (seconds each)."""
    text = data.decode("utf-8", "replace")
    n = len(_SUMMARY.findall(data)) + len(_REPR.findall(data))
    if n != 1:
        raise InputError(f"{source}: {n} benchmark results; keep one per file")
    notes: list[str] = []
    raw: list[float] = []
    if "BenchmarkResult(" in text:
        stats, raw, complete = _from_repr(text, source)
        if raw and not complete:
            notes.append("the printed results were elided ('...'): only the statistics are "
                         "kept")
            raw = []
        if any(not math.isfinite(x) or not 0 <= x < 1e6 for x in raw):
            raise InputError(f"{source}: results: not durations in seconds")
    else:
        stats = _from_summary(text, source)
        notes.append("the printed summary keeps no raw samples: only its statistics")
    return TvmReport("benchmark", (), notes=tuple(notes),
                     benchmark={**stats, "results_s": raw})
