"""How far a ladder's processes can be trusted, in a line each: the samples a neighbour
disturbed and left out (diagnose/disturbed.py), the processes whose main thread queued behind a
pinned pool worker (diagnose/placement.py), and whether the machine's speed probe explains
how differently fast the processes ran. Counterpart: none in TVM."""
from __future__ import annotations

import numpy as np

from ..analysis.diagnosis import placement_judged
from ..results.attribution import Attribution
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


def placement_line(att: Attribution | None, diag: Diagnosis | None = None) -> str:
    """In how many processes per rung the main thread queued behind a pinned pool worker,
    what that added to a first run where it happened, and the experiment that confirms it;
    that it was not judged when others took CPU during the ladder (diagnose/placement.py)."""
    if att is not None and diag is not None and not placement_judged(diag):
        return ("thread placement: not judged: other processes took CPU during the ladder, so "
                "a main thread that waited on a pool worker's CPU may have waited for them")
    if att is None or not att.placed_processes:
        return ""
    seen = ", ".join(f"{r} {k}/{n}" for r, (k, n) in att.placed_processes.items())
    cost, first = att.placement_total, att.placed_processes.get("a")
    added = ("" if cost is None or first is None else
             f"; it added {cost.median_ns / 1e6:.2f} [{cost.lo_ns / 1e6:.2f}, "
             f"{cost.hi_ns / 1e6:.2f}] ms to the {first[0]} of {first[1]} first runs it "
             "happened in (rung a), beside the typical first run's excess below")
    return (f"thread placement: the main thread ran on a CPU TVM had pinned a pool worker to, "
            f"and the two took turns on it while another CPU idled, in processes by rung: "
            f"{seen}. TVM pins its workers, not the main thread; those samples are set apart "
            f"(the rungs read the other processes){added}. To confirm: rerun with "
            f"TVM_BIND_THREADS=0 (no pinning), or pin the main thread to a CPU of its own")
