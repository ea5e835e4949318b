"""Saved comparisons: ``compare --json`` of two profiles (``minigraph-compare/1``,
docs/compare-schema.md) and of two reports kernel by kernel (``minigraph-kernel-compare/1``).

They are written by report/compare.py and report/kernel_report.py from what analysis/
computes (one ``Comparison``); here they are read back and checked field by field (``show``
prints them again), so a writer and its reader cannot drift apart unnoticed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import InputError
from .display import Displayable

FORMAT = "minigraph-compare/1"
KERNEL_FORMAT = "minigraph-kernel-compare/1"
VERDICTS = ("slower", "faster", "same", "n/a")
_STATS = ("n", "median_ns", "iqr_ns", "cv", "min_ns")


@dataclass(frozen=True)
class SavedComparison(Displayable):
    """A saved comparison, checked; ``doc`` is the document as saved."""

    format: str
    doc: dict

    @property
    def kernel(self) -> bool:
        return self.format == KERNEL_FORMAT


class _Bad(ValueError):
    pass


def _num(x: object, path: str, null: bool = False) -> None:
    if x is None and null:
        return
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        raise _Bad(f"{path} must be a finite number" + (" or null" if null else ""))


def _typed(doc: dict, key: str, kind: type | tuple, path: str = "") -> object:
    if key not in doc or not isinstance(doc[key], kind) or isinstance(doc[key], bool) \
            and kind is not bool:
        raise _Bad(f"{path}{key} is missing or not a {getattr(kind, '__name__', kind)}")
    return doc[key]


def _item(d: object, path: str) -> None:
    if not isinstance(d, dict):
        raise _Bad(f"{path} must be an object")
    _typed(d, "name", str, path + ".")
    if d.get("verdict") not in VERDICTS:
        raise _Bad(f"{path}.verdict must be one of {', '.join(VERDICTS)}")
    for side in ("a", "b"):
        stats = _typed(d, side, dict, path + ".")
        for key in _STATS:
            _num(stats.get(key), f"{path}.{side}.{key}", null=key != "n")
    for key in ("ratio", "p", "noise"):
        _num(d.get(key), f"{path}.{key}", null=True)


def _check(doc: dict) -> None:
    for key in ("a", "b", "mode", "matched_by"):
        _typed(doc, key, str)
    for key in ("compared", "differ", "slower", "faster"):
        _typed(doc, key, int)
    for key in ("run_to_run", "alpha", "floor", "z"):
        _num(doc.get(key), key)
    _num(doc.get("geomean"), "geomean", null=True)
    _num(doc.get("shift"), "shift", null=True)
    items = _typed(doc, "items", list)
    if len(items) != doc["compared"]:
        raise _Bad(f"items holds {len(items)} entries, compared says {doc['compared']}")
    for i, it in enumerate(items):
        _item(it, f"items[{i}]")
    if doc.get("e2e") is not None:
        _item(doc["e2e"], "e2e")
    settings = doc.get("settings_differ", [])
    if not isinstance(settings, list) or not all(
            isinstance(x, dict) and isinstance(x.get("setting"), str) and "a" in x and "b" in x
            for x in settings):
        raise _Bad("settings_differ must be a list of {setting, a, b} objects")
    busy = doc.get("busy", [])
    if not isinstance(busy, list) or not all(isinstance(x, str) for x in busy):
        raise _Bad("busy must be a list of warnings (strings)")
    differ = sum(it["verdict"] in ("slower", "faster") for it in items)
    if differ != doc["differ"]:
        raise _Bad(f"differ is {doc['differ']} but {differ} items are slower or faster")


def _check_kernels(doc: dict) -> None:
    for key in ("matched_by", "why"):
        _typed(doc, key, str)
    for side in ("a", "b"):
        _typed(doc, side, dict)
    for i, p in enumerate(_typed(doc, "pairs", list)):
        if not isinstance(p, dict):
            raise _Bad(f"pairs[{i}] must be an object")
        for key in ("a_us", "b_us", "gap_us"):
            _num(p.get(key), f"pairs[{i}].{key}")
        _num(p.get("ratio"), f"pairs[{i}].ratio", null=True)
    for key in ("only_a", "only_b", "same_name_different_kernel"):
        _typed(doc, key, list)
    summary = _typed(doc, "summary", dict)
    _typed(summary, "verdict", str, "summary.")
    _typed(summary, "verdict_text", str, "summary.")


def _read(doc: object, source: str, fmt: str, check) -> SavedComparison:
    if not isinstance(doc, dict) or doc.get("format") != fmt:
        raise InputError(f"{source}: not a saved comparison (expected '{fmt}')")
    try:
        check(doc)
    except _Bad as err:
        raise InputError(f"{source}: corrupt comparison: {err}") from None
    return SavedComparison(fmt, doc)


def read(doc: object, source: str = "comparison") -> SavedComparison:
    """A saved ``compare --json`` document, checked; InputError if foreign or corrupt."""
    return _read(doc, source, FORMAT, _check)


def read_kernels(doc: object, source: str = "comparison") -> SavedComparison:
    """A saved kernel-by-kernel comparison, checked; InputError if foreign or corrupt."""
    return _read(doc, source, KERNEL_FORMAT, _check_kernels)
