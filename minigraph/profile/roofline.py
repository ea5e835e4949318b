"""Roofline numbers per op: achieved GFLOP/s and the share of the machine's peak.

FLOPs per kernel come from build.json (TVM's ``estimate_tir_flops`` at build time), the peak
from measure/peak.py; both are stored in the Profile (``op["flops"]``, ``env["peak"]``) so a
saved profile renders the same numbers later. Time is the op's in-run median (the cache state
of a real run) or, without in-run, its warm median.

A kernel is flagged when it does real arithmetic (>= ``HEAVY`` FLOPs per byte it touches, so
memory-bound ops such as pooling or a batch-1 dense are not) and its GFLOP/s is below
``FLAG_FRACTION`` of the median of its arithmetic-heavy neighbours (``WINDOW`` ops each side):
the bad kernel among good ones, without a bandwidth model.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

from ..results.profile import Profile

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


def attach(profile: Profile, build_info: dict, peak: dict | None) -> None:
    """Adds ``flops`` to each op (when build.json knows its kernel) and the peak to env."""
    kernels = build_info.get("kernels", {}) if isinstance(build_info, dict) else {}
    for op in profile.ops:
        flops = kernels.get(op["func_name"], {}).get("flops")
        if isinstance(flops, (int, float)) and flops >= 0:
            op["flops"] = float(flops)
    if peak:
        profile.env["peak"] = dict(peak)


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
    return next((m for m in ("in-run", "warm") if profile.samples.get(m)), None)


def _nbytes(op: dict) -> int:
    size = {"float32": 4, "float16": 2, "float64": 8, "int8": 1, "uint8": 1, "int32": 4,
            "int64": 8, "bool": 1}
    total = 0
    for dtype, shape in op.get("shapes", []):
        n = 1
        for d in shape:
            n *= d
        total += n * size.get(dtype, 4)
    return max(total, 1)


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
        gflops = op["flops"] / ns
        base.append((op, ns, gflops, op["flops"] / _nbytes(op)))
    heavy = [i for i, b in enumerate(base) if b[3] >= HEAVY]
    out = []
    for i, (op, ns, gflops, intensity) in enumerate(base):
        near = [base[j][2] for j in heavy if j != i and abs(j - i) <= WINDOW]
        ref = statistics.median(near) if near else None
        flagged = bool(intensity >= HEAVY and ref and gflops < FLAG_FRACTION * ref)
        out.append(OpRoofline(op["index"], op["name"], op["flops"], ns, gflops,
                              100 * gflops / peak if peak else None, intensity, flagged, ref))
    return out
