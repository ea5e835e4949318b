"""What a profile records for its roofline: FLOPs per op and the machine's peak, and whether
an op ran above that peak (then the peak was taken on a busy machine: measured again).

FLOPs per kernel come from build.json (TVM's ``estimate_tir_flops`` at build time), the peak
from measure/peak.py; both are stored in the Profile (``op["flops"]``, ``env["peak"]``) so a
saved profile renders the same numbers later. Time is the op's in-run median (the cache state
of a real run) or, without in-run, its warm median. What they say of each op (GFLOP/s, the
share of the peak, the kernel far below its neighbours) is analysis/roofline.py's.
"""
from __future__ import annotations

import math

from ..results.modes import ModeName
from ..results.profile import Profile
from ..results.profile_schema import MAX_FLOPS


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


def usable_peak(profile: Profile) -> float | None:
    """The peak GFLOP/s shares are taken of; None when unknown or when ops ran above it
    even after a fresh measurement (``below_rates``: the peak, not the op, is wrong)."""
    peak = profile.env.get("peak") or {}
    return None if peak.get("below_rates") else peak.get("gflops")


def time_mode(profile: Profile) -> str | None:
    """The mode whose medians a roofline reads: in-run (the cache state of a real run), else
    warm; None without either."""
    return next((m for m in (ModeName.IN_RUN, ModeName.WARM) if profile.samples.get(m)), None)


def timed_ops(profile: Profile) -> list[tuple[dict, float]]:
    """(op, its ``time_mode`` median in ns) for every op with a FLOP count and a time."""
    mode = time_mode(profile)
    if mode is None:
        return []
    timed = [(op, profile.median(mode, op["index"])) for op in profile.ops]
    return [(op, ns) for op, ns in timed if op.get("flops") is not None and ns]


def above_peak(profile: Profile) -> float:
    """The highest rate any op (or all ops together) reached, over the peak; > 1 means the
    peak measurement was disturbed (a loaded machine when it was taken) and is wrong."""
    rows, peak = timed_ops(profile), usable_peak(profile)
    if not rows or not peak:
        return 0.0
    overall = sum(op["flops"] for op, _ in rows) / (sum(ns for _, ns in rows) or 1.0)
    return max(max(op["flops"] / ns for op, ns in rows), overall) / peak
