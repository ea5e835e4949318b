"""Validation of ``Profile.source``: where samples minigraph did not measure came from.

An imported TVM report (readers/tvm_report/) records its form, profiler, rows, Sum, Totals and
configuration there; a re-loaded one is checked here before report/tvm_report.py and the kernel
comparison read those fields. A minigraph profile has no source (an empty object).
"""
from __future__ import annotations


def _number(x: object) -> bool:
    return type(x) in (int, float) and -1e18 < x < 1e18  # type: ignore[operator]


def _row_problem(row: object, path: str) -> str | None:
    if not isinstance(row, dict):
        return f"{path}: must be an object"
    if not isinstance(row.get("name", ""), str):
        return f"{path}.name: must be a string"
    for key in ("duration_us", "percent"):
        if row.get(key) is not None and not _number(row[key]):
            return f"{path}.{key}: must be a number or null"
    if row.get("count") is not None and (type(row["count"]) is not int or row["count"] < 0):
        return f"{path}.count: must be a count or null"
    return None


def source_problem(source: object) -> str | None:
    """None if ``source`` is fit to render, else "field.path: what is wrong"."""
    if not isinstance(source, dict):
        return "source: must be an object"
    if source.get("kind", "tvm-report") != "tvm-report" or not source:
        return None
    for key in ("protocol", "configuration", "numbers", "totals"):
        if not isinstance(source.get(key, {}), dict):
            return f"source.{key}: must be an object"
    for key in ("format", "file", "order"):
        if not isinstance(source.get(key, ""), str):
            return f"source.{key}: must be a string"
    if not all(isinstance(v, (str, int, float)) for v in source.get("configuration", {}).values()):
        return "source.configuration: values must be strings or numbers"
    notes = source.get("notes", [])
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        return "source.notes: must be a list of strings"
    rows = source.get("rows", [])
    if not isinstance(rows, list):
        return "source.rows: must be a list"
    checks = [(r, f"source.rows[{i}]") for i, r in enumerate(rows)]
    checks += [(source["sum"], "source.sum")] if source.get("sum") is not None else []
    checks += [(t, f"source.totals.{d}") for d, t in source.get("totals", {}).items()]
    for row, path in checks:
        problem = _row_problem(row, path)
        if problem:
            return problem
    bench = source.get("benchmark")
    if bench is not None and (not isinstance(bench, dict) or
                              not all(_number(v) for v in bench.values())):
        return "source.benchmark: must be an object of numbers"
    return None
