"""The user's cache of facts measured once per machine: ``$XDG_CACHE_HOME/minigraph/NAME``
(default ~/.cache/minigraph), one JSON document per kind of fact, its entries keyed by what
they hold for (e.g. the CPU model, the LLVM CPU and the TVM version).

A cache is data from disk, not trusted: an unreadable, oversized or non-strict JSON file reads
as empty, and each caller checks an entry before using it; writing is best effort (an
unwritable cache only costs measuring again next time) and atomic, so two processes never
leave half a file. Counterpart: none in TVM (its tophub cache, ~/.tvm/tophub, holds tuning
logs, not facts of the machine).
"""
from __future__ import annotations

import os
from pathlib import Path

from . import write_atomic
from .bounded import read_bounded
from .jsontext import document_text, loads_strict

LIMIT = 1 << 20  # bytes: a cache file larger than this is not one of ours


def cache_path(name: str) -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "minigraph" / name


def read_entries(name: str) -> dict:
    """The cache's entries by key; {} when absent, unreadable or not a strict JSON object."""
    try:
        doc = loads_strict(read_bounded(cache_path(name), LIMIT, f"{name} cache"))
    except Exception:  # noqa: BLE001 - a broken cache is only a re-measurement
        return {}
    return doc if isinstance(doc, dict) else {}


def store(name: str, key: str, entry: object) -> None:
    """Adds (or replaces) one entry, keeping the others; never raises."""
    path = cache_path(name)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, document_text({**read_entries(name), key: entry}, indent=1))
    except Exception:  # noqa: BLE001 - InputError or OSError: the cache is optional
        pass
