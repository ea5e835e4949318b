"""Roofline numbers per op: achieved GFLOP/s and the share of the machine's peak.

FLOPs per kernel come from build.json (TVM's ``estimate_tir_flops`` at build time), the peak
from measure/peak.py; both are stored in the Profile (``op["flops"]``, ``env["peak"]``) so a
saved profile renders the same numbers later. Time is the op's in-run median (the cache state
of a real run) or, without in-run, its warm median.

A kernel is flagged when it does real arithmetic (>= ``HEAVY`` FLOPs per byte it touches, so
memory-bound ops such as pooling or a batch-1 dense are not) and its GFLOP/s is below
``FLAG_FRACTION`` of the median of its arithmetic-heavy neighbours (``WINDOW`` ops each side):
the bad kernel among good ones, without a bandwidth model. It is not flagged when another op
of the same shape (the same argument shapes and FLOPs: the same computation) ran at its
neighbours' speed in the same run: then its schedule is not what made it slow, and the
report says so instead (``twin``).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from ..artifacts.dlpack import entry_nbytes
from ..results.modes import ModeName
from ..results.profile import Profile
from ..results.profile_schema import MAX_FLOPS

HEAVY = 8.0          # FLOPs per byte of arguments: above it, a kernel should be compute-bound
FLAG_FRACTION = 0.33
WINDOW = 5


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


def attach(profile: Profile, build_info: dict, peak: dict | None) -> None:
    """Adds ``flops`` to each op (build.json's count of its kernel; where it has none, the
    count its argument shapes give for a conv2d or a matmul, ``flops_from = "shapes"``)
    and the peak to env."""
    kernels = build_info.get("kernels", {}) if isinstance(build_info, dict) else {}
    for op in profile.ops:
        flops = kernels.get(op["func_name"], {}).get("flops")
        if type(flops) in (int, float) and 0 <= flops < MAX_FLOPS:  # else the saved profile
            op["flops"] = float(flops)                                # could not be read back
        elif (counted := shape_flops(op)) is not None:
            op["flops"], op["flops_from"] = counted, "shapes"
    if peak:
        profile.env["peak"] = dict(peak)


def shape_flops(op: dict) -> float | None:
    """2 x multiply-adds of a conv2d or matmul from its argument shapes (inputs, then the
    output), where they say it without doubt; None otherwise (another kind, a packed or
    ambiguous layout). A Relax VM export carries no build.json and no TIR: this is what its
    shapes can tell. Bias adds and epilogues are not counted (under 1% of a conv's)."""
    shapes = [tuple(s) for _, s in op.get("shapes", [])]
    if len(shapes) < 3:
        return None
    data, weight, out = shapes[0], shapes[1], shapes[-1]
    if op.get("kind") == "dense/matmul" and len(data) >= 2 and len(out) == len(data) and \
            out[:-1] == data[:-1] and len(weight) == 2 and data[-1] in weight:
        return 2.0 * math.prod(out) * data[-1]  # x[..., K] @ w[K, N] or w[N, K]^T
    if op.get("kind") == "conv2d" and len(data) == len(weight) == len(out) == 4:
        nchw = out[1] == weight[0] and data[1] % weight[1] == 0  # NCHW data, OIHW weight
        nhwc = out[3] == weight[3] and data[3] % weight[2] == 0  # NHWC data, HWIO weight
        if nchw != nhwc:  # exactly one layout fits
            return 2.0 * math.prod(out) * math.prod(weight) / (weight[0] if nchw else weight[3])
    return None


def _usable_peak(profile: Profile) -> float | None:
    """The peak GFLOP/s shares are taken of; None when unknown or when ops ran above it
    even after a fresh measurement (``below_rates``: the peak, not the op, is wrong)."""
    peak = profile.env.get("peak") or {}
    return None if peak.get("below_rates") else peak.get("gflops")


def above_peak(profile: Profile) -> float:
    """The highest rate any op (or all ops together) reached, over the peak; > 1 means the
    peak measurement was disturbed (a loaded machine when it was taken) and is wrong."""
    rows, peak = rooflines(profile), _usable_peak(profile)
    if not rows or not peak:
        return 0.0
    overall = sum(r.flops for r in rows) / (sum(r.ns for r in rows) or 1.0)
    return max(max(r.gflops for r in rows), overall) / peak


def time_mode(profile: Profile) -> str | None:
    return next((m for m in (ModeName.IN_RUN, ModeName.WARM) if profile.samples.get(m)), None)


def _nbytes(op: dict) -> int | None:
    """Bytes of the op's arguments; None when a dtype is not one minigraph knows (no
    intensity then, rather than a guessed size)."""
    try:
        return max(sum(entry_nbytes(tuple(shape), dtype) for dtype, shape in
                       op.get("shapes", [])), 1)
    except KeyError:
        return None


def rooflines(profile: Profile) -> list[OpRoofline]:
    """One entry per op with a FLOP count and a time."""
    mode = time_mode(profile)
    if mode is None:
        return []
    peak = _usable_peak(profile)
    base = []
    for op in profile.ops:
        ns = profile.median(mode, op["index"])
        if op.get("flops") is None or not ns:
            continue
        gflops, nbytes = op["flops"] / ns, _nbytes(op)
        base.append((op, ns, gflops, op["flops"] / nbytes if nbytes else 0.0))
    heavy = [i for i, b in enumerate(base) if b[3] >= HEAVY]
    out = []
    for i, (op, ns, gflops, intensity) in enumerate(base):
        near = [base[j][2] for j in heavy if j != i and abs(j - i) <= WINDOW]
        ref = statistics.median(near) if near else None
        slow = bool(intensity >= HEAVY and ref and gflops < FLAG_FRACTION * ref)
        twin = _fast_twin(base, i, FLAG_FRACTION * ref) if slow and ref else None
        out.append(OpRoofline(op["index"], op["name"], op["flops"], ns, gflops,
                              100 * gflops / peak if peak else None, intensity,
                              slow and twin is None, ref, twin))
    return out


def _shape(op: dict) -> tuple:
    return (op.get("flops"), tuple((d, tuple(s)) for d, s in op.get("shapes", [])))


def _fast_twin(base: list[tuple[dict, float, float, float]], i: int, normal: float
               ) -> tuple[int, float] | None:
    """The fastest other op of op ``i``'s shape when it ran at ``normal`` GFLOP/s or more."""
    twins = [(b[2], b[0]["index"]) for j, b in enumerate(base)
             if j != i and _shape(b[0]) == _shape(base[i][0])]
    best = max(twins, default=None)
    return (best[1], best[0]) if best and best[0] >= normal else None
