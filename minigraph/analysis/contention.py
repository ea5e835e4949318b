"""A saved document's contention record, in a report's words: one warning line when the
machine was busy while it was measured.

measure/contention.py measures what other processes and the hypervisor took during a window
and keeps the threshold that makes it busy (``BUSY_CPUS``: the diagnose ladder sets samples
apart by it while it measures, so it stays beside the measurement); this only reads a saved
record back and phrases it. Counterpart: none in TVM (its profilers record no machine state).
"""
from __future__ import annotations

from ..measure.contention import saved


def warning(record: object, during: str) -> str:
    """One line for a report when the machine was busy during ``during``; "" when it was quiet
    or the saved record is absent (no /proc), older or corrupt."""
    c = saved(record)
    return (f"WARNING: busy machine during {during}: {c.describe()}; the timings include "
            "waiting for them (rerun on a quiet machine)") if c and c.busy else ""
