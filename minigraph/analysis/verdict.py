"""Why two profiles differ: one verdict, its evidence, and the experiment that would confirm it.

``compare`` used to end with a list of candidates ("machine, threads, clock, contention or
build"). The documents can tell those apart: each profile saves its thread placement, the
build it ran (build.json's target and schedule, the library's digest), the data it computed on,
the contention during it and a probe of the machine's speed (measure/speed.py), gathered into
one ``Evidence`` by analysis/evidence.py. Here each class of cause is one rule, read alone and
tested alone: a rule looks at the ``Evidence`` and, when its class holds, returns a ``Finding``
with the share of the gap it explains, the evidence that decided it and one experiment to
confirm it. Findings are ranked by class first (a difference
the user made — data, build, threads, protocol — explains what it can before anything the
machine did) and then by share; the first is the verdict. With no finding and no op changed,
the verdict is "no real difference". The text of the findings is report/findings.py's.
Counterpart: none in TVM (its profilers never compared two runs).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

from ..fileio.printable import one_line
from ..measure.contention import BUSY_CPUS
from .thresholds import FLOOR, KERNEL_MOVE


@dataclass(frozen=True)
class Evidence:
    """What the two documents say, reduced to what the rules read."""

    whole: float                      # median B/A over the ops (the whole run's move)
    probe: float | None               # B/A of the machine speed probe (None: not comparable)
    changed: tuple[tuple[str, float, float], ...]   # (op, B/A beyond the shift, B-A ns)
    gap_ns: float                     # sum of B's medians - sum of A's
    n_ops: int
    differ: dict[str, tuple[tuple[str, Any, Any], ...]]  # class -> (what, A, B)
    busy: tuple[float, float]         # others' + steal CPUs during A, during B
    data_ops_gap_ns: float            # B - A over the ops that read special values on one side

    @property
    def moved(self) -> bool:
        """The whole run moved: beyond FLOOR (the same floor an op's change must clear)."""
        return abs(math.log(self.whole)) > math.log1p(FLOOR) if self.whole > 0 else False


@dataclass(frozen=True)
class Finding:
    cls: str
    share: float        # of the whole-run move (or of the gap), 0..1
    evidence: str
    confirm: str


Rule = Callable[[Evidence], Finding | None]


def _share_of_move(e: Evidence, ratio: float | None) -> float:
    """How much of the whole-run move (in log terms) a ratio accounts for, 0..1."""
    if ratio is None or not e.moved or ratio <= 0:
        return 0.0
    return max(0.0, min(1.0, math.log(ratio) / math.log(e.whole)))


def _residual(e: Evidence) -> float:
    """The part of the difference the speed probe leaves unexplained: of the whole-run move
    when the run moved, else all of the changed ops' gap (a setting that moved only some ops
    explains them), else nothing."""
    if e.moved:
        return 1.0 - _share_of_move(e, e.probe)
    return 1.0 if e.changed else 0.0


def _listed(items: Sequence[tuple[str, Any, Any]]) -> str:
    return "; ".join(f"{w}: {b}" if a is None else
                     f"{w}: {short_value(a)} (A) vs {short_value(b)} (B)" for w, a, b in items)


def short_value(v: Any) -> str:
    """A setting's value for one line: a sha256 shortened to 16 hex digits."""
    text = str(v)
    return text[:16] if len(text) == 64 and all(c in "0123456789abcdef" for c in text) else text


def _moved_by(e: Evidence) -> str:
    return f"the whole run moved {e.whole:.2f}x" if e.moved else \
        f"the whole run moved only {e.whole:.2f}x (within {FLOOR:.0%})"


def data_rule(e: Evidence) -> Finding | None:
    items = e.differ.get("data")
    if not items:
        return None
    share = max(0.0, min(1.0, e.data_ops_gap_ns / e.gap_ns)) if e.gap_ns and \
        e.data_ops_gap_ns * e.gap_ns > 0 else 0.0
    cost = (f"the ops reading them account for {share:.0%} of the gap" if share else
            "it cost nothing measurable on this CPU; CPUs that take a microcode assist per "
            "subnormal operand (most Intel cores, older AMD) would pay tens of cycles each")
    return Finding("data", share, f"the data differ: {_listed(items)}; {cost}",
                   "profile both sides on the same params file (--params) and compare again")


def _setting_rule(cls: str, confirm: str) -> Rule:
    def rule(e: Evidence) -> Finding | None:
        items = e.differ.get(cls)
        if not items:
            return None
        return Finding(cls, _residual(e), f"{_listed(items)}; {_moved_by(e)}", confirm)
    rule.__name__ = f"{cls.replace(' ', '_')}_rule"
    return rule


build_rule = _setting_rule("build", "profile both builds back to back in one session, "
                                    "alternating A B A B, and compare each pair")
threads_rule = _setting_rule("threads", "profile again with the other side's --threads / "
                                        "--affinity (or TVM_NUM_THREADS) and compare")
protocol_rule = _setting_rule("protocol", "compare the same mode on both sides (profile both "
                                          "with the same --mode and settings)")


def contention_rule(e: Evidence) -> Finding | None:
    """One side busier than the other; or both busy and some ops changed (a neighbour that
    took a worker's CPU stalls a parallel kernel at its barrier: one op 150x, the rest not),
    on whichever side: beside one spinner A's max_pool2d stalled (B 0.00x its time) while the
    busier side was B."""
    a, b = e.busy
    if max(a, b) <= BUSY_CPUS or (abs(a - b) <= BUSY_CPUS and not e.changed):
        return None
    side, cpus = ("B", b) if b > a else ("A", a)
    if abs(a - b) <= BUSY_CPUS or (min(a, b) > BUSY_CPUS and e.changed):
        return Finding("contention", _residual(e),
                       f"other processes (and the hypervisor) took {a:.2f} CPUs during A and "
                       f"{b:.2f} during B: the ops that changed may have waited for the "
                       f"neighbour, not run slower; {_moved_by(e)}",
                       "profile both again on a quiet machine (nothing else running)")
    slower = "B" if e.whole > 1 else "A"
    share = (_share_of_move(e, e.probe) or _residual(e)) if side == slower else 0.0
    return Finding("contention", share,
                   f"other processes (and the hypervisor) took {cpus:.2f} CPUs during {side}, "
                   f"{min(a, b):.2f} during the other; {_moved_by(e)}",
                   f"profile {side} again on a quiet machine (nothing else running)")


def speed_rule(e: Evidence) -> Finding | None:
    machines = e.differ.get("machine speed")
    if machines:
        return Finding("machine speed", 1.0 if e.moved else 0.0,
                       f"another machine: {_listed(machines)}; {_moved_by(e)}",
                       "profile both on one machine")
    if e.probe is None or abs(math.log(e.probe)) <= math.log1p(FLOOR):
        return None
    share = _share_of_move(e, e.probe) if e.moved else _felt(e)
    if not share:  # the model did not move with the probe: nothing of it to explain
        return None
    said = ("the machine changed speed between the two, not the model" if share >= 0.8 else
            f"the machine's speed accounts for {share:.0%} of that move")
    return Finding("machine speed", share,
                   f"the machine's speed probe ran {e.probe:.2f}x in B against A and "
                   f"{_moved_by(e)}: {said}",
                   "profile A and B again, alternating, and check that the probe stays put")


def _felt(e: Evidence) -> float:
    """A probe move the whole run followed by less than FLOOR (back-to-back ResNet-18 profiles:
    probe 0.94x, the run 0.96x): the machine's, all of it, when the run moved its way by at
    least half the floor; else 0: the model did not feel it (or the probe's own noise)."""
    if e.whole <= 0 or abs(math.log(e.whole)) < math.log1p(FLOOR / 2):
        return 0.0
    return 1.0 if (e.whole > 1) == (e.probe > 1) else 0.0


def _moved_ops(e: Evidence) -> tuple[tuple[str, float, float], ...]:
    return tuple(c for c in e.changed
                 if c[1] > 0 and abs(math.log(c[1])) >= math.log(KERNEL_MOVE))


def kernels_rule(e: Evidence) -> Finding | None:
    changed = _moved_ops(e)
    if not changed or len(e.changed) > max(1, e.n_ops // 3):
        return None
    e = replace(e, changed=changed)
    gap = sum(g for _, _, g in e.changed)
    share = max(0.0, min(1.0, gap / e.gap_ns)) if e.gap_ns and gap * e.gap_ns > 0 else 0.0
    names = ", ".join(f"{one_line(n)} {r:.2f}x" for n, r, _ in e.changed[:3])
    more = f" and {len(e.changed) - 3} more" if len(e.changed) > 3 else ""
    return Finding("a few kernels", share,
                   f"{len(e.changed)} of {e.n_ops} ops changed beyond the noise ({names}{more}); "
                   "the rest stayed within it", "profile the changed ops alone again (warm) "
                   "on both builds or inputs")


# the rules, in the order their classes lead: differences the user made, then the machine
RULES: tuple[tuple[str, Rule], ...] = (
    ("data", data_rule), ("build", build_rule), ("threads", threads_rule),
    ("protocol", protocol_rule), ("contention", contention_rule),
    ("machine speed", speed_rule), ("a few kernels", kernels_rule))
_MADE = ("data", "build", "threads", "protocol")  # classes a difference of settings makes


def findings(e: Evidence) -> list[Finding]:
    """Every class that holds, verdict first: a setting the user changed leads; among the
    machine's classes the larger share leads; "no real difference" when nothing holds."""
    order = {cls: k for k, (cls, _) in enumerate(RULES)}
    found = [f for _, rule in RULES if (f := rule(e)) is not None]
    found.sort(key=lambda f: (f.cls not in _MADE, -round(f.share, 2), order[f.cls]))
    if not found:
        small = len(e.changed) - len(_moved_ops(e))
        said = (f"no op moved {KERNEL_MOVE - 1:.0%} beyond the whole run ({small} passed the "
                "noise test by less: what two processes of one build show)" if small else
                "no op changed beyond the run-to-run noise")
        found = [Finding("no real difference", 1.0, f"{_moved_by(e)} and {said}",
                         "nothing to confirm")]
    return found
