"""The evidence of why two documents differ, gathered from what they saved (analysis/verdict.py
judges it).

Two profiles (or a profile and a TVM report) say what ran: thread placement, the modes
compared, build.json's target and schedule, each kernel's machine code, the data computed
on, the contention during each and the machine's speed probe. Here those are reduced to one
``Evidence``: each difference labelled with the class of cause it belongs to, the whole run's
move, the ops that changed beyond the noise; and, op by op, which changed op read subnormal
operands on one side only (``data_reads``). Counterpart: none in TVM.
"""
from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from typing import Any, Sequence

from ..measure.significance import Significance
from ..measure.speed import identity, speed_ratio
from ..results.data import DataReport
from ..results.modes import ModeName
from ..results.profile import Profile
from .kernels import KernelsView
from .matching import Matched
from .settings import setting_differences
from .thresholds import FLOOR, SEPARATED
from .verdict import Evidence

# which class each recorded setting belongs to (labels of analysis/settings.py SETTINGS)
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
_DATA_LABELS = ("subnormal values", "NaN values", "Inf values", "--fill")


def _code_items(codes: Sequence[tuple[dict | None, dict | None]]
                ) -> list[tuple[str, Any, Any]]:
    """How many matched kernels have other machine code (profile ops' ``code``): a size
    change is other code. A digest change alone is no evidence of a build difference: the
    same code moved in another library has other rip-relative offsets (ResNet-50's and
    ResNet-18's 7x7 conv, one computation, differ in every digest and in no size)."""
    both = [(x, y) for x, y in codes if x and y]
    other = [(x, y) for x, y in both if x["sha256"] != y["sha256"]]
    sized = sum(x["nbytes"] != y["nbytes"] for x, y in other)
    if not sized:
        return []
    return [("kernel machine code", None,
             f"{sized} of {len(both)} matched kernels have code of another size (other "
             f"instructions; {len(other) - sized} more differ in bytes only: other code or the "
             "same moved)")]


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
    return [(n, x, y) for n, x, y in zip(_DATA_LABELS, sa, sb) if x != y]


def _special_readers(p: Profile) -> frozenset[int]:
    """The ops that read subnormal/NaN/Inf operands (the data section parsed once)."""
    report = p.data_report()
    return frozenset(o.index for o in report.ops if any(r.counts.special for r in o.reads())) \
        if report else frozenset()


def differences(a: Profile, b: Profile, modes: tuple[str, str],
                codes: Sequence[tuple[dict | None, dict | None]] = ()
                ) -> dict[str, tuple[tuple[str, Any, Any], ...]]:
    """class -> (what, A's, B's) for everything the two documents say differs: the modes
    compared, recorded settings, build.json, the kernels' machine code (``codes``: the
    matched kernels' ``code`` entries) and the data."""
    differ: dict[str, list] = {}
    compared = [("mode compared", *modes)] if modes[0] != modes[1] else []
    for label, va, vb in (compared + setting_differences(a, b) + _build_items(a, b)
                          + _code_items(codes) + _data_items(a, b)):
        cls = SETTING_CLASS.get(label, "build" if label.startswith("build ") else "data"
                                if label in _DATA_LABELS else None)
        if cls is not None:
            differ.setdefault(cls, []).append((label, va, vb))
    said = [x for x in differ.get("build", []) if x[0].startswith("build ") or
            x[0] == "kernel machine code"]
    if said:  # what build.json says differs; the files' hashes differ as a consequence
        differ["build"] = said
    if "data" in differ and all(w == "params sha256" for w, _, _ in differ["data"]) and \
            _data_state(a) == _data_state(b) and _data_state(a):
        differ.pop("data")  # other weights, same kind of values: not a cause of their own
    return {k: tuple(v) for k, v in differ.items()}


def evidence(a: Profile, b: Profile, cmp: Significance, matched: Matched,
             divided: float = 1.0,
             modes: tuple[str, str] = (ModeName.WARM, ModeName.WARM)) -> Evidence:
    """The Evidence of two profiles and their op-level comparison; ``divided``: the factor
    B's samples were divided by before comparing (the speed probe's ratio), multiplied back
    for the whole run's move; ``modes``: the modes compared (A's, B's)."""
    codes = [(a.ops[i].get("code"), b.ops[j].get("code")) for i, j in matched.pairs]
    gaps = [d.b.median_ns * divided - d.a.median_ns for d in cmp.deltas]
    ra, rb = _special_readers(a), _special_readers(b)
    data_gap = sum(g for g, (i, j) in zip(gaps, matched.pairs) if (i in ra) != (j in rb))
    changed = tuple((d.name, d.ratio / cmp.shift, g) for d, g in zip(cmp.deltas, gaps)
                    if d.verdict in ("slower", "faster"))
    ratios = [d.ratio for d in cmp.deltas if d.ratio == d.ratio and d.ratio > 0]
    return Evidence(whole=statistics.median(ratios) * divided if ratios else 1.0,
                    probe=divided if divided != 1.0 else None, changed=changed,
                    gap_ns=sum(gaps), n_ops=len(cmp.deltas),
                    differ=differences(a, b, modes, codes), busy=(_busy(a), _busy(b)),
                    data_ops_gap_ns=data_gap)


def _protocol(p: Profile, mode: str | None) -> str:
    """What measured a side: a TVM report's protocol (from its labels), or minigraph's mode."""
    if p.imported:
        return f"TVM report: {(p.source.get('protocol') or {}).get('key', 'unknown protocol')}"
    return f"minigraph {mode or 'e2e only'}"


def kernel_evidence(a: Profile, b: Profile, kc: KernelsView) -> Evidence:
    """The Evidence of a kernel-by-kernel comparison (TVM reports, --by-kernel): the whole
    run's move is the median per-call ratio, a kernel changed when it carries the gap off
    that median (kernel_compare's carriers), the protocols are each side's."""
    stats = kc.ratio_stats
    med = stats["median"] if stats else 1.0
    pairs = kc.matching.pairs
    codes = [(a.ops[p.a.first_index].get("code"), b.ops[p.b.first_index].get("code"))
             for p in pairs]
    modes = (_protocol(a, kc.a.mode), _protocol(b, kc.b.mode))
    changed = tuple((p.a.names[0], p.ratio / med if med else p.ratio, p.gap_ns)
                    for p in kc.top)
    return Evidence(whole=med, probe=probe_ratio(a, b) if probe_moved(a, b) else None,
                    changed=changed, gap_ns=kc.gap_us * 1e3, n_ops=len(pairs),
                    differ=_of_kernels(differences(a, b, modes, codes)),
                    busy=(_busy(a), _busy(b)), data_ops_gap_ns=0.0)


WHOLE_FILES = ("model.so sha256", "graph.json sha256")


def _of_kernels(differ: dict[str, tuple]) -> dict[str, tuple]:
    """A kernel-by-kernel comparison pairs kernels of two files by design (two builds, two
    models, two reports): that the files differ says nothing of the matched kernels, whose
    own code and build.json's target and schedule say whether they were built differently."""
    out = {k: v for k, v in differ.items() if k != "build"}
    build = tuple(x for x in differ.get("build", ()) if x[0] not in WHOLE_FILES)
    if build:
        out["build"] = build
    return out


def _busy(p: Profile) -> float:
    c = p.contention or {}
    return float(c.get("others_cpus") or 0.0) + float(c.get("steal_cpus") or 0.0)


def probe_ratio(a: Profile, b: Profile) -> float | None:
    """B/A of the speed probe, when both ran the same probe on the same interpreter."""
    pa, pb = a.speed.get("probe"), b.speed.get("probe")
    if not pa or pa != pb or pa.get("version") != identity()["version"]:
        return None
    return speed_ratio(a.speed.get("samples", []), b.speed.get("samples", []))


def probe_moved(a: Profile, b: Profile) -> bool:
    """Whether the machine's speed moved between A and B: the probes' ratio is beyond
    ``FLOOR`` and the two sides' probes barely overlap (SEPARATED of their pairs ordered one
    way: analysis/thresholds.py)."""
    ratio = probe_ratio(a, b)
    if ratio is None or abs(math.log(ratio)) <= math.log1p(FLOOR):
        return False
    xa, xb = ([p["compute_ns"] for p in d.speed.get("samples", []) if p.get("compute_ns")]
              for d in (a, b))
    slower, faster = (xb, xa) if ratio > 1 else (xa, xb)
    ordered = sum(s > f for s in slower for f in faster)
    return ordered >= SEPARATED * len(xa) * len(xb)


@dataclass(frozen=True)
class DataRead:
    """An op that changed and read subnormal operands on one side only: the same kernel on
    different data (results/data.py), before any difference of measurement."""

    name: str
    ratio: float     # B/A
    side: str        # "A" | "B": the side that read them
    what: str        # how many of its operand values were subnormal


def _subnormal_reads(report: DataReport | None, index: int) -> str | None:
    """What of op ``index``'s operands were subnormal in a profile's parsed data ``report``
    (None: none, or no data section)."""
    o = report.op(index) if report else None
    reads = [a for a in o.reads() if a.counts.subnormal] if o else []
    if not reads:
        return None
    n = sum(a.counts.n for a in o.reads()) or 1
    return f"{100 * sum(a.counts.subnormal for a in reads) / n:.3g}% of its operand values"


def data_reads(a: Profile, b: Profile, cmp: Significance, matched: Matched
               ) -> tuple[DataRead, ...]:
    """For every op that differs, whether one side read subnormal operands and the other not."""
    out, ra, rb = [], a.data_report(), b.data_report()  # each data section parsed once
    for d, (i, j) in zip(cmp.deltas, matched.pairs):
        if d.verdict not in ("slower", "faster"):
            continue
        sa, sb = _subnormal_reads(ra, i), _subnormal_reads(rb, j)
        if bool(sa) != bool(sb):
            out.append(DataRead(d.name, d.ratio, "A" if sa else "B", sa or sb or ""))
    return tuple(out)
