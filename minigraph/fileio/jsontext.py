"""JSON as the standard defines it, in both directions: what minigraph writes any strict parser
reads, and what it reads is what the file says.

- Reading (``loads_strict``): Python's ``json`` accepts ``NaN``, ``Infinity`` and
  ``-Infinity`` (not JSON) and lets the last of two equal keys win silently, so a second,
  bogus ``"heads"`` in a graph.json would replace the first unseen. Both are refused here.
- Writing (``document_text``): a value that is not a finite number (a NaN statistic, an
  infinite ratio) is written as ``null``, never as ``NaN``/``Infinity``, which strict parsers
  (JavaScript's ``JSON.parse``, jq, Go, Rust) reject. The rest of the document is kept.
Counterpart: TVM's dmlc JSON reader, which also refuses non-finite literals.
"""
from __future__ import annotations

import json
import math


class StrictJSONError(ValueError):
    """Valid for Python's json module, not for JSON: a non-finite literal or a duplicate key."""


def _no_constant(name: str) -> float:
    raise StrictJSONError(f"{name} is not a JSON number (JSON numbers are finite)")


def _unique(pairs: list[tuple[str, object]]) -> dict:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise StrictJSONError(f"duplicate key {json.dumps(dup)[:60]} in one object (which "
                              "one is meant?)")
    return obj


def loads_strict(data: str | bytes | bytearray) -> object:
    """``json.loads`` refusing NaN/Infinity and duplicate keys (StrictJSONError, a ValueError;
    malformed text raises json's own ValueError as usual)."""
    return json.loads(data, object_pairs_hook=_unique, parse_constant=_no_constant)


def finite(value: object) -> object:
    """``value`` with every float that is not finite replaced by None (containers copied only
    where they hold one)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def non_finite(doc: object, limit: int = 1 << 24) -> str | None:
    """The path (``ops[3].flops``) of the first float in ``doc`` that is not finite, or None;
    iterative (decoded documents may nest deep), at most ``limit`` values looked at."""
    todo: list[tuple[object, str]] = [(doc, "")]
    while todo and limit > 0:
        cur, path = todo.pop()
        limit -= 1
        if isinstance(cur, float) and not math.isfinite(cur):
            return path or "(the document)"
        if isinstance(cur, dict):
            todo.extend((v, f"{path}.{k}" if path else str(k)) for k, v in cur.items())
        elif isinstance(cur, list):
            todo.extend((v, f"{path}[{i}]") for i, v in enumerate(cur))
    return None


def document_text(doc: object, indent: int | None = None) -> str:
    """``doc`` as strict JSON text: NaN and infinities written as null (see the module)."""
    try:
        return json.dumps(doc, indent=indent, allow_nan=False)
    except ValueError:  # only when a non-finite float is in it: the rare path walks the doc
        return json.dumps(finite(doc), indent=indent, allow_nan=False)
