"""A comparison's phase view: why two LLM profiles differ, per phase: one verdict, its
evidence, the ops that moved (rendered by report/llm_compare.py).

Each phase (prefill, decode) is compared on its end-to-end samples (Mann-Whitney against the
comparison's alpha, beyond its floor: analysis/thresholds.py) and op by op on the in-run
medians. The causes the documents can tell apart are rules, ranked as analysis/verdict.py
ranks them for graph profiles: what the user changed first (the request: prompt length or
cache depth; the build: config, kernels or their schedules; the thread count), then the
machine (another CPU), then "a few ops" when nothing the documents record explains the move,
and "no real difference" when no phase moved.
For threads, the evidence is where the time moved: the parallel kernels (the linear layers,
the GEMMs and GEMVs on TVM's pool) against every other op (the attention builtin, the norms,
the VM builtins).
Counterpart: none in TVM (its profilers never compared two runs; MLC-LLM's bench prints one).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from ..measure.contention import saved
from ..measure.significance import Cutoffs, mann_whitney_p
from ..results.llm import LLMProfile, OpRow, PhaseResult

TOP = 5  # ops listed per phase


@dataclass(frozen=True)
class PhaseMove:
    name: str
    a_ns: float
    b_ns: float
    p_value: float
    ops: tuple[tuple[str, float, float], ...]   # (op, A in-run, B in-run), most moved first
    real: bool          # p under the cut-offs' alpha and a move beyond their floor

    @property
    def ratio(self) -> float:
        return self.b_ns / self.a_ns if self.a_ns > 0 else math.nan


def _parallel(o: OpRow) -> bool:
    """A kernel minigraph scheduled on the thread pool (the build recorded its FLOPs)."""
    return o.kind == "kernel" and o.flops is not None


def _moves(a: PhaseResult, b: PhaseResult, cut: Cutoffs) -> PhaseMove:
    bops = {(o.function, o.name): o for o in b.ops}
    pairs = [(o.label, o.inrun_median, bops[(o.function, o.name)].inrun_median)
             for o in a.ops if (o.function, o.name) in bops]
    pairs.sort(key=lambda t: -abs(t[2] - t[1]))
    a_ns, b_ns = a.e2e_median(), b.e2e_median()
    p = min(_p(a.e2e_ns, b.e2e_ns), _p(_sums(a), _sums(b)))
    ratio = b_ns / a_ns if a_ns > 0 else math.nan
    real = p < cut.alpha and abs(math.log(ratio)) > math.log1p(cut.floor)
    return PhaseMove(a.name, a_ns, b_ns, p, tuple(pairs[:TOP]), real)


def _sums(ph: PhaseResult) -> list[int]:
    """The phase's in-run total per replay (minigraph's loop: no VM work between calls)."""
    return [sum(o.inrun_ns[i] for o in ph.ops) for i in range(len(ph.e2e_ns))]


def _p(a: Sequence[float], b: Sequence[float]) -> float:
    """Mann-Whitney's p of the two sample sets (1 when either has fewer than two)."""
    return mann_whitney_p(a, b) if len(a) > 1 and len(b) > 1 else 1.0


def _group_ratio(a: PhaseResult, b: PhaseResult, parallel: bool) -> float:
    bops = {(o.function, o.name): o for o in b.ops}
    sa = sum(o.inrun_median for o in a.ops if _parallel(o) == parallel
             and (o.function, o.name) in bops)
    sb = sum(bops[(o.function, o.name)].inrun_median for o in a.ops
             if _parallel(o) == parallel and (o.function, o.name) in bops)
    return sb / sa if sa > 0 else math.nan


def _differ(a: LLMProfile, b: LLMProfile) -> dict[str, str]:
    """Class -> what differs between the documents (A -> B)."""
    out: dict[str, str] = {}
    if (a.prompt_len, a.phase("decode").depth) != (b.prompt_len, b.phase("decode").depth):
        out["request"] = (f"prompt {a.prompt_len} -> {b.prompt_len} tokens, decode depth "
                          f"{a.phase('decode').depth} -> {b.phase('decode').depth}")
    kernels = lambda p: {o.name for ph in p.phases for o in ph.ops}  # noqa: E731
    if a.config != b.config or a.model != b.model or kernels(a) != kernels(b):
        out["build"] = f"{a.model} -> {b.model}" + (
            "" if a.config == b.config else " (configs differ)") + (
            "" if kernels(a) == kernels(b) else " (kernels differ)")
    if a.threads != b.threads:
        out["threads"] = f"{a.threads} -> {b.threads} thread(s)"
    if a.cpu != b.cpu:
        out["machine"] = f"{a.cpu} -> {b.cpu}"
    busy = [f"{side}: {c.describe()}" for side, c in (("A", saved(a.contention)),
                                                       ("B", saved(b.contention))) if c and c.busy]
    if busy:
        out["contention"] = "; ".join(busy)
    return out


@dataclass(frozen=True)
class PhasesView:
    """Two LLM profiles phase by phase: the verdict (a class of cause), why, each phase's
    move, and what differs between the documents (class -> what)."""

    verdict: str
    because: str
    phases: tuple[PhaseMove, ...]
    differ: dict[str, str]


def _threads_evidence(a: LLMProfile, b: LLMProfile) -> str:
    said = []
    for pa, pb in zip(a.phases, b.phases):
        par, ser = _group_ratio(pa, pb, True), _group_ratio(pa, pb, False)
        said.append(f"{pa.name}: the linear layers {par:.2f}x, the other ops (attention, "
                    f"norms, VM builtins) {ser:.2f}x")
    return "; ".join(said)


def _against_threads(a: LLMProfile, b: LLMProfile, moved: list[PhaseMove]) -> bool:
    """Every phase that moved went the way more threads cannot explain: the side with more
    threads was the slower one."""
    more_b = b.threads > a.threads
    return all((m.ratio > 1) == more_b for m in moved)


def phases_view(a: LLMProfile, b: LLMProfile, cut: Cutoffs) -> PhasesView:
    """The phases of A against B's, and the verdict."""
    phases = tuple(_moves(pa, b.phase(pa.name), cut) for pa in a.phases)
    differ = _differ(a, b)
    moved = [m for m in phases if m.real]
    if not moved and "contention" in differ:
        return PhasesView("contention", "no phase's move is resolved out of the noise on a "
                             f"busy machine ({differ['contention']}): rerun on a quiet one",
                             phases, differ)
    if not moved:
        return PhasesView("no real difference", "no phase moved beyond the run-to-run "
                             f"noise (p >= {cut.alpha} or within {cut.floor:.0%})", phases, differ)
    for cls in ("request", "build", "threads", "machine", "contention"):
        if cls == "threads" and cls in differ and "contention" in differ and \
                _against_threads(a, b, moved):
            continue  # more threads and slower on a busy machine: the neighbours, not the pool
        if cls in differ:
            why = differ[cls]
            if cls == "threads":
                why += ": " + _threads_evidence(a, b)
            return PhasesView(cls, why, phases, differ)
    top = ", ".join(f"{m.ops[0][0]} ({m.name})" for m in moved if m.ops)
    return PhasesView("a few ops", f"nothing the documents record differs; most moved: {top}",
                         phases, differ)
