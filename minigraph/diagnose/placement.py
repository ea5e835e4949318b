"""The main thread queued behind its own pool worker: which samples, and what it cost (pure).

TVM pins every pool worker to one CPU but leaves the main thread free to run anywhere
(threading_backend.cc, ``SetAffinity`` with ``exclude_worker0``). Early in a process the
scheduler sometimes runs the main thread on a worker's CPU, and the two then take turns on one
CPU while the other idles: on a 2-vCPU guest, ResNet-50's first run took 40-53 ms instead of
40 ms in 5 of 8 fresh processes, every op of the first 10-40 waiting 0.3-2.5 ms for its CPU
with no other process running, until the balancer moved the main thread away. With
``TVM_BIND_THREADS=0`` (no pinning) no process did. It happens in some processes and not others
(a mixture), so a median over processes jumps between its two modes from one diagnosis to the
next; and it is not what any rung's warm-up removes (rungs a and b both show it).

So it is measured apart: the worker records, per op, the CPU the main thread ended on and its
threads' wait; a sample whose main thread waited on a pinned worker's CPU is ``placed``. Those
samples are left out of every rung, so the ladder reads the typical first run (the processes
whose threads were apart, as in most), and on rung a, a user's first inference, what queueing
added where it happened is given beside it: in how many first runs, and the median over them of
each one's time over the clean estimate. On a machine where other processes took CPU during
the ladder (measure/contention.py), a main thread that waited on a worker's CPU may have
waited for the neighbour: nothing is set apart then (beside one spinning process, every
process's main thread waited half of every op, and setting apart those that ended on the
worker's CPU left a rung's median to its one stalled process). Counterpart: none in TVM.
"""
from __future__ import annotations

import math

import numpy as np

from ..measure import contention
from ..results.diagnosis import Diagnosis
from ..results.rungs import PLACEMENT

KEY = PLACEMENT.key   # its estimate's key in the attribution


def judged(diag: Diagnosis) -> dict[str, np.ndarray] | None:
    """The diagnosis's placed samples (Diagnosis.placed), or None when others took CPU during
    the ladder: then a wait on a worker's CPU cannot be told from the neighbour's (module doc)."""
    busy = contention.saved(diag.contention)
    return None if busy is not None and busy.busy else diag.placed()


def slowed(times: np.ndarray, placed: np.ndarray, floor_ns: float) -> np.ndarray:
    """[processes, ops] bool: the placed samples that queueing slowed, more than ``floor_ns``
    (disturbed.py's FLOOR_NS) over the rung's fastest (the scheduler books a wait when the
    thread next runs, so a 13 us op can carry a 173 us wait that began before it; an op below
    the floor is left as it is)."""
    return placed & (times - np.min(times, axis=0, keepdims=True) > floor_ns)


def split(times: np.ndarray, placed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
    """[processes, ops + 1] (the last column the model's) -> (the samples with the placed ones
    NaN, a process's model column too when any of its ops was placed; the placed samples alone,
    NaN elsewhere, or None when none was)."""
    if placed is None or not placed.any():
        return times, None
    mask = np.concatenate([placed, placed.any(axis=1, keepdims=True)], axis=1)
    return np.where(mask, np.nan, times), np.where(mask, times, np.nan)


def cost(placed: np.ndarray, steady: np.ndarray | None, ref: np.ndarray | None,
         clean: np.ndarray, median) -> np.ndarray:
    """Per column, what queueing added to a first run where it happened: the median over the
    placed samples of each one's time over the clean estimate ``clean`` (NaN where none was),
    paired with its process's own steady time as the rung's estimate is (``ref`` + the pair),
    so a slow process's speed is not counted as placement. Arrays are [..., processes, ops + 1]
    (``clean``: [..., ops + 1]); ``median`` takes the median over processes, NaN left out."""
    own = placed if steady is None or ref is None else ref[..., None, :] + placed - steady
    return median(own - clean[..., None, :])


def counted(placed: dict[str, np.ndarray] | None) -> dict[str, int]:
    """rung -> samples placed (ops, not the model's column)."""
    return {r: int(m.sum()) for r, m in (placed or {}).items() if m.any()}


def processes(placed: dict[str, np.ndarray] | None) -> dict[str, tuple[int, int]]:
    """rung -> (processes with a placed sample, processes)."""
    return {r: (int(m.any(axis=1).sum()), len(m)) for r, m in (placed or {}).items()
            if m.any()}


def seen_only(ivs: tuple, zero) -> tuple:
    """Intervals with a column no placed sample reached (NaN) read as ``zero``: nothing
    was added there."""
    return tuple(zero if math.isnan(x.median_ns) else x for x in ivs)
