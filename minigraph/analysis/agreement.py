"""Does in-run agree with e2e? Judged by their own spread, with the machine as the suspect.

In-run's passes and e2e's runs are taken in the same rounds (profile/steady.py), so on a
machine that keeps its speed, the sum of the in-run medians (less what in-run's own clock
stamps add to a pass) matches the e2e median to within what the two sets of samples say about
their own medians. A gap beyond that has a cause, and on a shared VM it is usually the machine
changing speed during the measurement; the evidence for it is here: the drift of the e2e
samples over the rounds (first third against last third), the CPU time other processes and the
hypervisor took, round by round, and whether the rounds agree with each other pair by pair
(when every round's e2e run matches its own in-run pass but the medians do not, each op's
median came from rounds that ran at different speeds). Pure: reads a Profile, returns figures.
Counterpart: none in TVM (the debug executor's per-op sum and ``benchmark()`` were never put
side by side).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from ..measure import contention
from ..measure.contention import BUSY_CPUS
from ..measure.significance import median_precision
from ..results.modes import ModeName
from .thresholds import AGREEMENT_DRIFT, AGREEMENT_FLOOR
from ..results.profile import Profile

VERDICTS = ("agree", "disturbed", "differ")


@dataclass(frozen=True)
class Agreement:
    rounds: int
    e2e_ns: float           # the e2e median
    inrun_ns: float         # sum of in-run medians, less the stamps' cost per pass
    stamp_ns: float         # what in-run's clock stamps add to one pass (median over rounds)
    bound: float            # relative gap their own spread allows (90%, at least AGREEMENT_FLOOR)
    paired: float | None    # median over rounds of each round's own gap, relative to e2e
    thirds_ns: tuple[float, ...]  # e2e median of the first, middle and last third of rounds
    others_cpus: float | None     # other processes' CPUs over the rounds (average)
    steal_cpus: float | None      # the hypervisor's

    @property
    def gap_ns(self) -> float:
        return self.e2e_ns - self.inrun_ns

    @property
    def gap(self) -> float:
        """The gap relative to e2e (+0.05: e2e is 5% longer than the in-run sum)."""
        return self.gap_ns / self.e2e_ns if self.e2e_ns > 0 else math.nan

    @property
    def drift(self) -> float:
        """How far apart the e2e medians of the thirds are (0.3: the slowest third 1.3x the
        fastest): the machine's change of speed over the rounds."""
        xs = [x for x in self.thirds_ns if x > 0]
        return max(xs) / min(xs) - 1 if len(xs) > 1 else 0.0

    @property
    def verdict(self) -> str:
        """One of VERDICTS. "agree": within their spread on a machine that kept its speed (or
        within AGREEMENT_FLOOR); "disturbed": the machine changed speed (e2e drifted by more
        than AGREEMENT_DRIFT, or others or the hypervisor took CPU) and the gap is beyond
        AGREEMENT_FLOOR, or the gap is beyond the spread with any evidence; "differ": beyond
        the spread, nothing to blame."""
        gap = abs(self.gap)
        if gap <= AGREEMENT_FLOOR:
            return "agree"
        if gap <= self.bound:
            return "disturbed" if self._machine_moved() else "agree"
        return "disturbed" if self.evidence() else "differ"

    @property
    def agrees(self) -> bool:
        return self.verdict == "agree"

    def _machine_moved(self) -> bool:
        taken = (self.others_cpus or 0) + (self.steal_cpus or 0)
        return self.drift > AGREEMENT_DRIFT or taken > BUSY_CPUS

    def evidence(self) -> list[str]:
        """What says the machine changed speed during the rounds (empty: nothing does)."""
        out = []
        if self.drift > min(self.bound, AGREEMENT_DRIFT):
            out.append(f"e2e drifted by {self.drift:.0%} over the {self.rounds} rounds (median "
                       "of each third: " + _thirds(self.thirds_ns) + ")")
        if (self.others_cpus or 0) + (self.steal_cpus or 0) > BUSY_CPUS:
            out.append(f"other processes used {self.others_cpus or 0:.2f} CPUs and the "
                       f"hypervisor stole {self.steal_cpus or 0:.2f} on average during them")
        if self.paired is not None and abs(self.paired) <= self.bound < abs(self.gap):
            out.append(f"round by round they agree (median gap {self.paired:+.1%}): each op's "
                       "median came from rounds that ran at different speeds")
        return out


def _thirds(xs_ns: tuple[float, ...]) -> str:
    """The thirds' medians in one unit that shows them apart (ms, or us below 1 ms)."""
    scale, unit = (1e6, "ms") if max(xs_ns, default=0) >= 1e6 else (1e3, "us")
    return ", ".join(f"{x / scale:.2f}" for x in xs_ns) + f" {unit}"


def agreement_of(profile: Profile) -> Agreement | None:
    """The judgment for a profile whose in-run and e2e were taken in the same rounds; None
    when either is missing or they were not (older files, imported reports)."""
    rows, e2e, rounds = profile.samples.get(ModeName.IN_RUN), profile.e2e_ns, profile.rounds
    if not rows or not e2e or not rounds or len(rounds) != len(e2e) or \
            any(len(r) != len(e2e) for r in rows):
        return None
    stamps = [float(r["stamp_ns"]) for r in rounds if r.get("stamp_ns") is not None]
    stamp = statistics.median(stamps) if stamps else 0.0
    passes = [sum(col) for col in zip(*rows)]
    inrun = sum(statistics.median(r) for r in rows) - stamp
    spread = math.hypot(_log_precision(e2e), _log_precision(passes))
    paired = [(e - (p - s)) for e, p, s in zip(e2e, passes, stamps or [0.0] * len(e2e))]
    e2e_med = statistics.median(e2e)
    k = max(1, len(e2e) // 3)
    return Agreement(len(e2e), e2e_med, inrun, stamp, max(AGREEMENT_FLOOR, math.expm1(spread)),
                     statistics.median(paired) / e2e_med if e2e_med > 0 else None,
                     tuple(statistics.median(e2e[a:a + k]) for a in (0, (len(e2e) - k) // 2,
                                                                     len(e2e) - k)),
                     *_contention(rounds))


def _log_precision(samples: list[float]) -> float:
    p = median_precision(samples)
    return math.log1p(p) if math.isfinite(p) else 0.0


def _contention(rounds: list[dict]) -> tuple[float | None, float | None]:
    """Others' and steal CPUs over the rounds, from the counters' cumulative readings (the
    first and last round's, as the two ends of one measure/contention.py window)."""
    ends = [r for r in rounds if r.get("since_s")]
    if len(ends) < 2:
        return None, None
    a, b = ((r["since_s"], r["busy_s"], r["steal_s"], r["own_s"], r.get("cpus") or 0.0)
            for r in (ends[0], ends[-1]))
    c = contention.between(a, b)
    return (None, None) if c is None else (c.others_cpus, c.steal_cpus)
