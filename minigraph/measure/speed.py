"""The machine's speed reference: a short fixed probe timed beside every measurement.

A shared VM runs in speed states (on one EPYC guest every kernel at 1.0x or 1.38x, switching
between runs and sometimes inside one). Two profiles taken minutes apart then differ on every
op and nothing in either says why. The probe is a piece of work that never changes between
minigraph versions (``PROBE_VERSION`` names it; change it only with the code) timed between
the rounds of a measurement, so a document says what speed the machine ran at:

- compute: ``COMPUTE_PASSES`` square roots over a fixed 128 KiB float32 array (numpy's SIMD
  sqrt loop on data that stays in L2: the core's clock and vector unit, no memory traffic);
- memory: one copy of a 16 MiB buffer into another (numpy's memcpy: memory bandwidth and TLB;
  16 MiB is past the L2 of every x86 core, and inside most L3s).

Why numpy and not a Python loop: a pure-Python loop's time moved by 7% from one process to the
next on one idle machine (where the interpreter's code and data landed), the sqrt loop by under
1%; numpy's version is part of the probe's identity, so probes of two numpy builds are never
divided into each other.
Each part is timed ``REPEATS`` times and its minimum kept (the least-disturbed run). What it
cannot see: a slowdown only the model's own traffic feels (a neighbour thrashing the LLC the
model needs, a NUMA placement of the model's pools), or one shorter than the gap between two
probes. Counterpart: none in TVM; pyperf's ``system tune`` checks the machine before, never
during, a benchmark.
"""
from __future__ import annotations

import math
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

PROBE_VERSION = 1
COMPUTE_NBYTES = 128 << 10   # the sqrt probe's array: inside every x86 core's L2
COMPUTE_PASSES = 80          # sqrt passes over it per timed repeat (~0.5 ms on a 2020s core)
MEMORY_NBYTES = 16 << 20     # bytes copied per memory probe
REPEATS = 4
SETTLE_S = 0.03             # s before a probe, for TVM's spinning workers to go to sleep
STATE_GAP = 0.08             # speeds more than 8% apart are two states of the machine
_buffers: list = []          # the probe's arrays, made (and first touched) once per process


def _arrays() -> list:
    if not _buffers:
        x = np.linspace(1.0, 2.0, COMPUTE_NBYTES // 4, dtype=np.float32)
        _buffers.extend((x, np.empty_like(x), np.ones(MEMORY_NBYTES, np.uint8),
                         np.empty(MEMORY_NBYTES, np.uint8)))
        np.copyto(_buffers[3], _buffers[2])  # first touch outside the timed copies
    return _buffers


def _compute() -> None:
    x, y = _arrays()[:2]
    for _ in range(COMPUTE_PASSES):
        np.sqrt(x, out=y)


def _memory() -> None:
    src, dst = _arrays()[2:]
    np.copyto(dst, src)


def _best(fn: Callable[[], object], clock: Callable[[], int]) -> float:
    best = math.inf
    for _ in range(REPEATS):
        t0 = clock()
        fn()
        best = min(best, float(clock() - t0))
    return best


def probe(where: str, clock: Callable[[], int] = time.perf_counter_ns) -> dict:
    """One probe: {"where", "compute_ns", "memory_ns"}, as a document saves it."""
    return {"where": where, "compute_ns": _best(_compute, clock),
            "memory_ns": _best(_memory, clock)}


SPEED_NUMBERS = ("compute_ns", "memory_ns")  # what each saved probe holds besides ``where``


def record(into: dict, where: str, clock: Callable[[], int] = time.perf_counter_ns,
           settle: Callable[[float], None] = time.sleep) -> None:
    """Appends one probe to a document's ``speed`` section ({"probe": identity, "samples"}),
    after ``SETTLE_S``: right after a parallel kernel TVM's idle workers spin on the other
    cores, and the probe then read 12-15% slow (measured on a 2-vCPU guest; 20 ms after, not)."""
    into.setdefault("probe", identity())
    into.setdefault("samples", []).append(settled_probe(where, clock, settle))


def settled_probe(where: str, clock: Callable[[], int] = time.perf_counter_ns,
                  settle: Callable[[float], None] = time.sleep) -> dict:
    """``probe`` after SETTLE_S, for TVM's spinning workers to go to sleep (``record``)."""
    settle(SETTLE_S)
    return probe(where, clock)


def identity() -> dict:
    """What makes two probes comparable: the same probe code, numpy and interpreter."""
    return {"version": PROBE_VERSION, "numpy": np.__version__,
            "python": ".".join(map(str, sys.version_info[:3]))}


@dataclass(frozen=True)
class SpeedStates:
    """Probe times grouped into the machine's speed states, relative to the fastest state:
    ``levels`` e.g. (1.0, 1.37), ``counts`` how many probes fell in each, ``outliers`` probes
    in no state (a group too small to be one: a single interrupted probe is not a state)."""

    levels: tuple[float, ...]
    counts: tuple[int, ...]
    outliers: int = 0

    def describe(self) -> str:
        n = sum(self.counts) + self.outliers
        odd = f"; {self.outliers} outlying" if self.outliers else ""
        if len(self.levels) <= 1:
            return f"the machine ran at one speed ({n} probes within {STATE_GAP:.0%}{odd})"
        lv = ", ".join(f"{x:.2f}x" for x in self.levels)
        return (f"the machine ran in {len(self.levels)} speed states: {lv} (probe time over the "
                f"fastest); {self.counts[0]} of {n} probes in the fast one{odd}")


def states(times_ns: Sequence[float], gap: float = STATE_GAP) -> SpeedStates | None:
    """Group probe times: sorted, a new group starts where one time is more than ``gap``
    above the previous one; a group is a state when it holds at least 2 probes and a tenth
    of them. None for no probe."""
    xs = sorted(t for t in times_ns if t > 0)
    if not xs:
        return None
    groups: list[list[float]] = [[xs[0]]]
    for x in xs[1:]:
        (groups[-1].append(x) if x <= groups[-1][-1] * (1 + gap) else groups.append([x]))
    least = max(2, len(xs) // 10) if len(xs) >= 4 else 1
    kept = [g for g in groups if len(g) >= least] or [max(groups, key=len)]
    fast = statistics.median(kept[0])
    return SpeedStates(tuple(round(statistics.median(g) / fast, 3) for g in kept),
                       tuple(len(g) for g in kept), len(xs) - sum(len(g) for g in kept))


def speed_ratio(a: Sequence[dict], b: Sequence[dict], part: str = "compute_ns"
                ) -> float | None:
    """B's median probe time over A's (1.3: B's machine ran 1.3x slower); None without probes."""
    xa = [p[part] for p in a if p.get(part)]
    xb = [p[part] for p in b if p.get(part)]
    if not xa or not xb:
        return None
    return statistics.median(xb) / statistics.median(xa)
