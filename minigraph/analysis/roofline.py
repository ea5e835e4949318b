"""A profile's roofline read: achieved GFLOP/s per op, its share of the machine's peak, and the
kernels far below their neighbours.

The FLOPs, the peak and the op times are what the profile recorded (profile/roofline.py). A
kernel is flagged when it does real arithmetic (>= ``ROOFLINE_HEAVY`` FLOPs per byte it
touches, so memory-bound ops such as pooling or a batch-1 dense are not) and its GFLOP/s is
below ``ROOFLINE_FLAG_FRACTION`` of the median of its arithmetic-heavy neighbours
(``ROOFLINE_WINDOW`` ops each side; all three in thresholds.py): the bad kernel among good ones, without a bandwidth model. It is not flagged when another op
of the same shape (the same argument shapes and FLOPs: the same computation) ran at its
neighbours' speed in the same run: then its schedule is not what made it slow, and the
report says so instead (``twin``). Counterpart: none in TVM (its profiling ``Report`` has no
rates).
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

from ..artifacts.dlpack import entry_nbytes
from ..profile.roofline import time_mode, timed_ops, usable_peak
from ..results.profile import Profile
from .thresholds import ROOFLINE_FLAG_FRACTION, ROOFLINE_HEAVY, ROOFLINE_WINDOW



@dataclass(frozen=True)
class OpRoofline:
    index: int
    name: str
    flops: float
    ns: float
    gflops: float
    pct_peak: float | None
    intensity: float     # FLOPs per byte of the op's arguments
    flagged: bool
    neighbours_gflops: float | None
    # a same-shape op that ran at its neighbours' speed while this one was below it: (index,
    # GFLOP/s); the reason a slow op is not flagged
    twin: tuple[int, float] | None = None


@dataclass(frozen=True)
class Roofline:
    """A profile's roofline: the ops with a FLOP count and a time, in profile order."""

    mode: str | None                 # whose medians: in-run, else warm (profile/roofline.py)
    ops: tuple[OpRoofline, ...]


def _nbytes(op: dict) -> int | None:
    """Bytes of the op's arguments; None when a dtype is not one minigraph knows (no
    intensity then, rather than a guessed size)."""
    try:
        return max(sum(entry_nbytes(tuple(shape), dtype) for dtype, shape in
                       op.get("shapes", [])), 1)
    except KeyError:
        return None


def roofline(profile: Profile) -> Roofline:
    """One entry per op with a FLOP count and a time."""
    peak = usable_peak(profile)
    base = []
    for op, ns in timed_ops(profile):
        gflops, nbytes = op["flops"] / ns, _nbytes(op)
        base.append((op, ns, gflops, op["flops"] / nbytes if nbytes else 0.0))
    heavy = [i for i, b in enumerate(base) if b[3] >= ROOFLINE_HEAVY]
    out = []
    for i, (op, ns, gflops, intensity) in enumerate(base):
        near = [base[j][2] for j in heavy if j != i and abs(j - i) <= ROOFLINE_WINDOW]
        ref = statistics.median(near) if near else None
        slow = bool(intensity >= ROOFLINE_HEAVY and ref and gflops < ROOFLINE_FLAG_FRACTION * ref)
        twin = _fast_twin(base, i, ROOFLINE_FLAG_FRACTION * ref) if slow and ref else None
        out.append(OpRoofline(op["index"], op["name"], op["flops"], ns, gflops,
                              100 * gflops / peak if peak else None, intensity,
                              slow and twin is None, ref, twin))
    return Roofline(time_mode(profile), tuple(out))


def _shape(op: dict) -> tuple:
    return (op.get("flops"), tuple((d, tuple(s)) for d, s in op.get("shapes", [])))


def _fast_twin(base: list[tuple[dict, float, float, float]], i: int, normal: float
               ) -> tuple[int, float] | None:
    """The fastest other op of op ``i``'s shape when it ran at ``normal`` GFLOP/s or more."""
    twins = [(b[2], b[0]["index"]) for j, b in enumerate(base)
             if j != i and _shape(b[0]) == _shape(base[i][0])]
    best = max(twins, default=None)
    return (best[1], best[0]) if best and best[0] >= normal else None
