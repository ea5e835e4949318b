"""Why two profiles differ: one verdict, its evidence, and the experiment that would confirm it.

``compare`` used to end with a list of candidates ("machine, threads, clock, contention or
build"). The documents can tell those apart: each profile saves its thread placement, the
build it ran (build.json's target and schedule, the library's digest), the data it computed on,
the contention during it and a probe of the machine's speed (measure/speed.py). Here each class
of cause is one rule, read alone and tested alone: a rule looks at the ``Evidence`` and, when
its class holds, returns a ``Finding`` with the share of the gap it explains, the evidence that
decided it and one experiment to confirm it. Findings are ranked by class first (a difference
the user made — data, build, threads, protocol — explains what it can before anything the
machine did) and then by share; the first is the verdict. With no finding and no op changed,
the verdict is "no real difference".
Counterpart: none in TVM (its profilers never compared two runs).
"""
from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..measure.contention import BUSY_CPUS
from ..measure.significance import Comparison
from ..measure.speed import identity, speed_ratio
from ..profile.matching import Matched, setting_differences
from ..results.profile import Profile

# which class each recorded setting belongs to (labels of profile/matching.py SETTINGS)
SETTING_CLASS = {
    "threads": "threads", "requested affinity": "threads", "requested CPUs": "threads",
    "main thread pinned to": "threads", "main thread affinity": "threads",
    "TVM_NUM_THREADS": "threads", "TVM_THREAD_POOL_SPIN_COUNT": "threads",
    "warm repeats per batch": "protocol", "warm CV target": "protocol",
    "warm precision target": "protocol", "warm budget (ms)": "protocol",
    "one-pass warm-ups": "protocol", "cold flush": "protocol", "mode compared": "protocol",
    "TVM version": "build", "model.so sha256": "build", "graph.json sha256": "build",
    "CPU": "machine speed", "microarchitecture": "machine speed",
    "logical CPUs": "machine speed", "host": "machine speed",
    "params sha256": "data", "kernel machine code": "build",
}
BUILD_KEYS = ("target", "schedule_policy", "tvm_version")  # what build.json says of the code
SAME = 0.05   # a whole-run ratio within 5% of 1 is no move


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
        return abs(math.log(self.whole)) > math.log1p(SAME) if self.whole > 0 else False


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


def _code_items(a: Profile, b: Profile, matched: Matched) -> list[tuple[str, Any, Any]]:
    """How many matched kernels have other machine code (profile ops' ``code``): a size
    change is other code; a digest change alone may be the same code moved in the file."""
    both = [(a.ops[i].get("code"), b.ops[j].get("code")) for i, j in matched.pairs]
    both = [(x, y) for x, y in both if x and y]
    other = [(x, y) for x, y in both if x["sha256"] != y["sha256"]]
    if not other:
        return []
    sized = sum(x["nbytes"] != y["nbytes"] for x, y in other)
    return [("kernel machine code", None,
             f"{len(other)} of {len(both)} matched kernels differ ({sized} in size: other "
             f"instructions; {len(other) - sized} in bytes only: other code or the same moved)")]


def short_value(v: Any) -> str:
    """A setting's value for one line: a sha256 shortened to 16 hex digits."""
    text = str(v)
    return text[:16] if len(text) == 64 and all(c in "0123456789abcdef" for c in text) else text


def _moved_by(e: Evidence) -> str:
    return f"the whole run moved {e.whole:.2f}x" if e.moved else \
        f"the whole run moved only {e.whole:.2f}x (within {SAME:.0%})"


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
    took a worker's CPU stalls a parallel kernel at its barrier: one op 150x, the rest not)."""
    a, b = e.busy
    if max(a, b) <= BUSY_CPUS or (abs(a - b) <= BUSY_CPUS and not e.changed):
        return None
    side, cpus = ("B", b) if b > a else ("A", a)
    if abs(a - b) <= BUSY_CPUS:
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
    if e.probe is None or abs(math.log(e.probe)) <= math.log1p(SAME):
        return None
    share = _share_of_move(e, e.probe)
    said = ("the machine changed speed between the two, not the model" if share >= 0.8 else
            f"the machine's speed accounts for {share:.0%} of that move")
    return Finding("machine speed", share,
                   f"the machine's speed probe ran {e.probe:.2f}x in B against A and "
                   f"{_moved_by(e)}: {said}",
                   "profile A and B again, alternating, and check that the probe stays put")


def kernels_rule(e: Evidence) -> Finding | None:
    if not e.changed or len(e.changed) > max(1, e.n_ops // 3):
        return None
    gap = sum(g for _, _, g in e.changed)
    share = max(0.0, min(1.0, gap / e.gap_ns)) if e.gap_ns and gap * e.gap_ns > 0 else 0.0
    names = ", ".join(f"{n} {r:.2f}x" for n, r, _ in e.changed[:3])
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
        found = [Finding("no real difference", 1.0, f"{_moved_by(e)} and no op changed beyond "
                         "the run-to-run noise", "nothing to confirm")]
    return found


def _build_items(a: Profile, b: Profile) -> list[tuple[str, Any, Any]]:
    """What build.json says differs: the target by its fields (mcpu), the rest whole."""
    ba, bb = a.env.get("build") or {}, b.env.get("build") or {}
    out = []
    for k in BUILD_KEYS:
        if k not in ba or k not in bb or ba[k] == bb[k]:
            continue
        ta, tb = _fields(ba[k]), _fields(bb[k])
        if k == "target" and ta and tb:
            out += [(f"build target {f}", ta.get(f, "-"), tb.get(f, "-"))
                    for f in sorted(set(ta) | set(tb)) if ta.get(f) != tb.get(f)]
        else:
            out.append((f"build {k}", ba[k], bb[k]))
    return out


def _fields(target: Any) -> dict:
    """A target saved as a dict or its JSON text, as a dict ({} for anything else)."""
    if isinstance(target, str):
        try:
            target = json.loads(target)
        except ValueError:
            return {}
    return target if isinstance(target, dict) else {}


def _data_state(p: Profile) -> tuple:
    report = p.data_report()
    if report is None:
        return ()
    totals = [sum(getattr(c, k) for c in report.values.values()) for k in ("subnormal", "nan",
                                                                              "inf")]
    return (*totals, report.fill)


def _data_items(a: Profile, b: Profile) -> list[tuple[str, Any, Any]]:
    sa, sb = _data_state(a), _data_state(b)
    if not sa or not sb or sa == sb:
        return []
    names = ("subnormal values", "NaN values", "Inf values", "--fill")
    return [(n, x, y) for n, x, y in zip(names, sa, sb) if x != y]


def _special_readers(p: Profile) -> frozenset[int]:
    """The ops that read subnormal/NaN/Inf operands (the data section parsed once)."""
    report = p.data_report()
    return frozenset(o.index for o in report.ops if any(r.counts.special for r in o.reads())) \
        if report else frozenset()


def evidence(a: Profile, b: Profile, cmp: Comparison, matched: Matched,
             divided: float = 1.0, modes: tuple[str, str] = ("warm", "warm")) -> Evidence:
    """The Evidence of two profiles and their comparison; ``divided``: the factor B's samples
    were divided by before comparing (the speed probe's ratio), multiplied back for the
    whole run's move; ``modes``: the modes compared (A's, B's)."""
    differ: dict[str, list] = {}
    compared = [("mode compared", *modes)] if modes[0] != modes[1] else []
    for label, va, vb in (compared + setting_differences(a, b) + _build_items(a, b)
                          + _code_items(a, b, matched) + _data_items(a, b)):
        cls = SETTING_CLASS.get(label, "build" if label.startswith("build ") else "data"
                                if label in ("subnormal values", "NaN values", "Inf values",
                                             "--fill") else None)
        if cls is not None:
            differ.setdefault(cls, []).append((label, va, vb))
    said = [x for x in differ.get("build", []) if x[0].startswith("build ") or
            x[0] == "kernel machine code"]
    if said:  # what build.json says differs; the files' hashes differ as a consequence
        differ["build"] = said
    if "data" in differ and all(w == "params sha256" for w, _, _ in differ["data"]) and \
            _data_state(a) == _data_state(b) and _data_state(a):
        differ.pop("data")  # other weights, same kind of values: not a cause of their own
    gaps = [d.b.median_ns * divided - d.a.median_ns for d in cmp.deltas]
    ra, rb = _special_readers(a), _special_readers(b)
    data_gap = sum(g for g, (i, j) in zip(gaps, matched.pairs) if (i in ra) != (j in rb))
    changed = tuple((d.name, d.ratio / cmp.shift, g) for d, g in zip(cmp.deltas, gaps)
                    if d.verdict in ("slower", "faster"))
    ratios = [d.ratio for d in cmp.deltas if d.ratio == d.ratio and d.ratio > 0]
    return Evidence(whole=statistics.median(ratios) * divided if ratios else 1.0,
                    probe=probe_ratio(a, b) if probe_moved(a, b) else None, changed=changed, gap_ns=sum(gaps),
                    n_ops=len(cmp.deltas), differ={k: tuple(v) for k, v in differ.items()},
                    busy=(_busy(a), _busy(b)), data_ops_gap_ns=data_gap)


def _busy(p: Profile) -> float:
    c = p.contention or {}
    return float(c.get("others_cpus") or 0.0) + float(c.get("steal_cpus") or 0.0)


def probe_ratio(a: Profile, b: Profile) -> float | None:
    """B/A of the speed probe, when both ran the same probe on the same interpreter."""
    pa, pb = a.speed.get("probe"), b.speed.get("probe")
    if not pa or pa != pb or pa.get("version") != identity()["version"]:
        return None
    return speed_ratio(a.speed.get("samples", []), b.speed.get("samples", []))


SEPARATED = 0.9  # share of (A probe, B probe) pairs that must be ordered one way


def probe_moved(a: Profile, b: Profile) -> bool:
    """Whether the machine's speed moved between A and B: the probes' ratio is beyond
    ``SAME`` and the two sides' probes barely overlap. One process's probes spread by ~10% on
    a quiet 2-vCPU guest (where its arrays landed); a ratio inside that spread is no move."""
    ratio = probe_ratio(a, b)
    if ratio is None or abs(math.log(ratio)) <= math.log1p(SAME):
        return False
    xa, xb = ([p["compute_ns"] for p in d.speed.get("samples", []) if p.get("compute_ns")]
              for d in (a, b))
    slower, faster = (xb, xa) if ratio > 1 else (xa, xb)
    ordered = sum(s > f for s in slower for f in faster)
    return ordered >= SEPARATED * len(xa) * len(xb)


def render(found: Sequence[Finding]) -> list[str]:
    """The verdict line, its evidence and confirmation, then the other classes that hold."""
    first, rest = found[0], found[1:]
    lines = [f"Verdict: {first.cls} ({first.share:.0%} of the difference): {first.evidence}",
             f"  to confirm: {first.confirm}"]
    lines += [f"  also: {f.cls} ({f.share:.0%}): {f.evidence}" for f in rest]
    return lines


def to_dict(found: Sequence[Finding]) -> dict:
    return {"verdict": found[0].cls, "findings": [f.__dict__ for f in found]}
