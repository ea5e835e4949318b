"""Was the measurement disturbed? The one rule every cause sentence of a profile goes through.

A cause sentence reads a difference between two of a profile's numbers as a property of the
model: "ops timed alone keep their own data in cache" (e2e against the sum of warm medians),
"a poorly scheduled kernel?" (an op far below its neighbours). Each pair was measured at
different times, so on a machine that was busy or changed speed in between, the same
difference may be the machine's. (What counters saw, e.g. which op created TVM's thread pool,
is a fact on any machine and is said as one.) The rule: when others or the hypervisor took CPU during the measurement
(measure/contention.py), the speed probes fell in more than one state (measure/speed.py), or
in-run and e2e disagree because the machine moved (analysis/agreement.py), a report says what
was measured and that the cause cannot be told, with the figures, never a cause, unless the
difference is larger than what the disturbance could make (a 19% gap on a machine whose
speed moved 2%). Pure.
Counterpart: none in TVM (its profilers state no cause and record no machine state).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..measure import contention
from ..results.profile import Profile
from .agreement import agreement_of


@dataclass(frozen=True)
class Disturbance:
    """What disturbed a measurement, one figure per piece of evidence, and how large a
    relative difference it could make (``reach``: 0.38 for a machine that ran up to 1.38x
    slower; inf for CPU time others took, which can stall a thread for any share of a
    window)."""

    figures: tuple[str, ...]
    reach: float

    def describe(self) -> str:
        return "; ".join(self.figures)

    def could_make(self, effect: float) -> bool:
        """Whether this disturbance could make a relative difference of ``effect``."""
        return abs(effect) <= self.reach


def disturbance(profile: Profile) -> Disturbance | None:
    """The evidence that the profile's measurement was disturbed; None: it was not (or the
    profile recorded nothing that could tell)."""
    found: list[tuple[str, float]] = []
    c = contention.saved(profile.contention)
    if c is not None and c.busy:
        found.append((f"others took {c.others_cpus:.2f} CPUs and the hypervisor "
                      f"{c.steal_cpus:.2f} over {c.wall_s:.1f} s", math.inf))
    speed = profile.speed_states()
    if speed is not None and len(speed.levels) > 1:
        found.append((f"the machine ran in {len(speed.levels)} speed states, up to "
                      f"{max(speed.levels):.2f}x slower", max(speed.levels) - 1))
    agreement = agreement_of(profile)
    if agreement is not None and agreement.verdict == "disturbed":
        found.append((f"in-run and e2e {agreement.gap:+.1%} apart as the machine changed "
                      "speed (in-run vs e2e, below)", max(abs(agreement.gap), agreement.drift)))
    if not found:
        return None
    return Disturbance(tuple(f for f, _ in found), max(r for _, r in found))


def cause(measured: str, why: str, disturbed: Disturbance | None, effect: float) -> str:
    """``measured``, then its cause ``why``; when the measurement was disturbed enough to make
    a difference of ``effect`` (relative: 0.19 for e2e 19% above the sum of per-op medians),
    that the cause cannot be told and what disturbed it instead. A difference beyond what
    the disturbance could make keeps its cause."""
    if disturbed is None or not disturbed.could_make(effect):
        return f"{measured}: {why}"
    return f"{measured}; cannot tell the cause: the machine was disturbed ({disturbed.describe()})"
