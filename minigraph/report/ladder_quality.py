"""How far a ladder's processes can be trusted, in a line each: the samples a neighbour
disturbed and left out (diagnose/disturbed.py), and whether the machine's speed probe explains
how differently fast the processes ran. Counterpart: none in TVM."""
from __future__ import annotations

import numpy as np

from ..diagnose.attribution import Attribution
from ..results.diagnosis import Diagnosis


def spread_line(diag: Diagnosis, att: Attribution | None) -> str:
    """Whether the machine explains how differently fast the processes ran: their spread in
    speed (90th over 10th percentile, every process of every rung) by the speed probe and by
    their own steady passes (the attribution's speeds, stalled passes replaced)."""
    probes = [p["compute_ns"] for r in diag.runs for p in diag.probes.get(r, [])]
    if att is None or not att.speeds or len(probes) < 3:
        return ""
    probe, steady = (float(np.percentile(x, 90) / np.percentile(x, 10)) for x in
                     (np.asarray(probes), np.concatenate([list(v) for v in att.speeds.values()])))
    why = ("the machine's speed moved as much: the processes' speeds were divided out"
           if probe >= 0.8 * steady else "the machine's speed moved less: the rest is each "
           "process's own (placement of its buffers, its code, a neighbour on its workers)")
    return (f"process speeds: the model's steady passes spread {steady:.2f}x across processes "
            f"(90th/10th percentile), the machine speed probe {probe:.2f}x: {why}")


def left_out_line(att: Attribution | None) -> str:
    """How many first-iteration samples a neighbour disturbed (diagnose/disturbed.py)."""
    if att is None or not att.left_out:
        return ""
    n = sum(att.left_out.values())
    rungs = ", ".join(f"{r} {k}" for r, k in att.left_out.items())
    return (f"left out: {n} op samples whose extra time the threads spent waiting for a CPU "
            f"(a neighbour's, not the op's) by rung: {rungs}")
