"""The Attribution of a diagnosis's first-run excess: per rung and per component (the step
between two neighbouring rungs), each op's share with its bootstrap interval, and the queries a
report asks of it (ranked ops, the dominant cause, the share resolved causes explain).

diagnose/attribution.py computes it from a Diagnosis's raw records (the ladder decides its
rounds on it while it measures); report/ renders it; ``diagnose --json`` writes ``to_dict``
beside the diagnosis. Counterpart: none in TVM (its profilers attribute no time to a cause).
"""
from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace

import numpy as np

from .rungs import BY_KEY, KEYS

LEVEL = 0.90  # the bootstrap intervals' coverage


@dataclass(frozen=True)
class Interval:
    median_ns: float
    lo_ns: float
    hi_ns: float

    @property
    def unread(self) -> bool:
        """No interval could be had (-inf to inf): an op's component next to a rung a neighbour
        left no sample of, a gap share with fewer than two clean pairs. Unresolved; its median
        is what the carried rungs give, and may hold the op's cost of two steps."""
        return self.lo_ns == -np.inf and self.hi_ns == np.inf

    def as_unread(self) -> Interval:
        """The same median with no interval (``unread``)."""
        return replace(self, lo_ns=-np.inf, hi_ns=np.inf)

    def to_dict(self) -> dict:
        return {"median_ns": self.median_ns, "lo_ns": self.lo_ns, "hi_ns": self.hi_ns}


@dataclass(frozen=True)
class Attribution:
    rungs: tuple[str, ...]                        # rungs measured, in ladder order
    processes: dict[str, int]                     # rung -> processes measured
    rung_ns: dict[str, tuple[Interval, ...]]      # rung -> per-op time
    rung_total: dict[str, Interval]               # rung -> the model's (sum of op medians)
    components: dict[str, tuple[Interval, ...]]  # component key -> per-op share of the excess
    component_total: dict[str, Interval]
    excess: tuple[Interval, ...]                  # per op: first rung - last rung
    excess_total: Interval
    wakeup_gap: tuple[Interval, ...] | None       # per op: after an idle gap - awake
    wakeup_gap_total: Interval | None
    # rung -> each process's speed (its steady passes' time over the median process's), which
    # every time of that process was divided by; None: not measured (older files), not divided
    speeds: dict[str, tuple[float, ...]] | None = None
    # rung -> first-iteration samples left out because a neighbour took their CPU
    # (disturbed.py); None: none was
    left_out: dict[str, int] | None = None
    # rung -> samples whose main thread queued behind a pinned worker (placement.py), left out
    # of the rungs; and (processes with one, processes); None: none was
    placed: dict[str, int] | None = None
    placed_processes: dict[str, tuple[int, int]] | None = None
    # on rung a: what queueing added to a first run where it happened, per op and the model's
    # (the median over those runs; NaN-free intervals only where one was seen); not a component
    placement: tuple[Interval, ...] | None = None
    placement_total: Interval | None = None
    # step key -> why it cannot exist for this model (no thread created: no pool), its rung's
    # difference counted with the next step's; None: every step applies
    omitted: dict[str, str] | None = None

    def to_dict(self) -> dict:
        ivs = lambda xs: None if xs is None else [x.to_dict() for x in xs]  # noqa: E731
        return {"rungs": list(self.rungs), "processes": self.processes,
                "rung_ns": {r: ivs(v) for r, v in self.rung_ns.items()},
                "rung_total": {r: v.to_dict() for r, v in self.rung_total.items()},
                "components": {k: ivs(v) for k, v in self.components.items()},
                "component_total": {k: v.to_dict() for k, v in self.component_total.items()},
                "excess": ivs(self.excess), "excess_total": self.excess_total.to_dict(),
                "wakeup_gap": ivs(self.wakeup_gap),
                "wakeup_gap_total": self.wakeup_gap_total and self.wakeup_gap_total.to_dict(),
                "estimate": "median over processes", "interval": f"{LEVEL:.0%} bootstrap",
                "speeds": None if self.speeds is None else
                {r: list(v) for r, v in self.speeds.items()}, "left_out": self.left_out,
                "placed": self.placed, "placed_processes": self.placed_processes,
                "placement": ivs(self.placement),
                "placement_total": self.placement_total and self.placement_total.to_dict(),
                "omitted": self.omitted,
                "explained": self.explained(), "explained_per_op": self.explained_per_op()}

    def ranked(self) -> list[int]:
        """Op indices by excess, largest first."""
        return sorted(range(len(self.excess)), key=lambda i: -self.excess[i].median_ns)

    def explained(self, op: int | None = None) -> float | None:
        """The share of the first-run excess (the model's, or op ``op``'s) that resolved causes
        explain: the medians of the components whose interval lies above 0, over the excess's
        median. None when there is no excess to explain."""
        comps = self.component_total if op is None else {k: v[op] for k, v in
                                                          self.components.items()}
        excess = (self.excess_total if op is None else self.excess[op]).median_ns
        if excess <= 0:
            return None
        return sum(x.median_ns for x in comps.values() if x.lo_ns > 0) / excess

    def explained_per_op(self) -> float | None:
        """Op by op: the resolved components of every op, summed, over the ops' excesses
        summed (the ops with an excess): how much of the excess the per-op view explains."""
        ops = [i for i, x in enumerate(self.excess) if x.median_ns > 0]
        total = sum(self.excess[i].median_ns for i in ops)
        if total <= 0:
            return None
        return sum(v[i].median_ns for v in self.components.values() for i in ops
                   if v[i].lo_ns > 0) / total

    def dominant(self, op: int | None = None) -> str | None:
        """The largest component (of op ``op``, or the model's) whose interval lies above
        zero; None if no component is resolved out of the noise, or if one that could not be
        read (``Interval.unread``) carries more: the largest cause is then unknown."""
        comps = self.component_total if op is None else {k: v[op] for k, v in
                                                          self.components.items()}
        resolved = [k for k, iv in comps.items() if iv.lo_ns > 0]
        top = max(resolved, key=lambda k: comps[k].median_ns, default=None)
        if top is not None and any(iv.unread and iv.median_ns > comps[top].median_ns
                                   for iv in comps.values()):
            return None
        return top


def component_keys(rungs: tuple[str, ...], omitted: Collection[str] = ()
                   ) -> list[tuple[str, tuple[str, str]]]:
    """(key, (from rung, to rung)) for every pair of neighbouring measured rungs; a step over
    unmeasured rungs is one joint component (keys joined with '+'). A rung whose step is in
    ``omitted`` (it cannot exist for this model) is stepped over the same way, and its key
    left out of the joint one."""
    rungs = tuple(r for i, r in enumerate(rungs) if i == 0 or BY_KEY[r].step not in omitted)
    out = []
    for r1, r2 in zip(rungs, rungs[1:]):
        skipped_to = KEYS[KEYS.index(r1) + 1:KEYS.index(r2) + 1]
        keys = [str(BY_KEY[r].step) for r in skipped_to if BY_KEY[r].step not in omitted]
        out.append(("+".join(keys), (r1, r2)))
    return out
