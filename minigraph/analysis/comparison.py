"""Two documents compared: the one class that models a comparison pair, and its views.

A ``Comparison`` is A (the baseline) and B with how they are compared (the mode, the cut-offs,
the files' names). What it says is computed once, on first use, as views: ``ops`` (two
profiles of one model, op by op against run-to-run noise, with the verdict of why they
differ), ``kernels`` (kernel by kernel: TVM reports, ``--by-kernel``, two builds that number
their functions differently: analysis/kernels.py) and ``phases`` (two LLM profiles, phase by
phase: analysis/phases.py). A fleet's devices compared are such pairs (analysis/fleet.py).
report/ renders a Comparison and computes nothing.
Counterpart: pyperf's ``compare_to``; none in TVM (its profilers never compared two runs).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from ..measure.significance import Cutoffs, Pair, Significance, compare_pairs
from ..results.llm import LLMProfile
from ..results.modes import ModeName
from ..results.profile import Profile
from . import evidence
from .kernels import KernelsView, kernel_view
from .matching import Matched, match_ops, pairs_for, sides
from .phases import PhasesView, phases_view
from .settings import setting_differences
from .thresholds import ALPHA, FLOOR, cutoffs
from .verdict import Finding, findings


@dataclass(frozen=True)
class OpsView:
    """Two profiles of one model op by op: the op matching, each op's verdict against
    run-to-run noise (``tested``: B divided by ``divided``, the machine speed probe's B/A,
    when both sides ran the probe and it moved), the verdict's findings of why they differ,
    the recorded settings that differ and the changed ops that read subnormal operands on
    one side only."""

    tested: Significance
    matched: Matched
    divided: float
    findings: tuple[Finding, ...]
    settings_differ: tuple[tuple[str, Any, Any], ...]
    data_reads: tuple[evidence.DataRead, ...]


@dataclass(frozen=True, eq=False)
class Comparison:
    """A against B (two profiles, a profile and a TVM report, or two LLM profiles): ``mode``,
    one per-op mode for both or (A's, B's); ``alpha`` and ``floor``, the noise test's cut-offs
    (``compare --alpha``, ``--noise-floor``); ``paths``, what the two are called."""

    a: Profile | LLMProfile
    b: Profile | LLMProfile
    mode: str | tuple[str, str] = ModeName.WARM
    alpha: float = ALPHA
    floor: float = FLOOR
    paths: tuple[str, str] = ("A", "B")

    @property
    def modes(self) -> tuple[str, str]:
        """(A's mode, B's mode)."""
        return sides(self.mode)

    @property
    def cutoffs(self) -> Cutoffs:
        return cutoffs(self.alpha, self.floor)

    @cached_property
    def ops(self) -> OpsView:
        """Op by op (InputError for different models or a mode either side lacks)."""
        return _ops_view(self.a, self.b, self.mode, self.cutoffs)

    @cached_property
    def kernels(self) -> KernelsView:
        """Kernel by kernel, with the verdict's findings of why they differ."""
        view = kernel_view(self.a, self.b, self.paths, self.mode)
        found = findings(evidence.kernel_evidence(self.a, self.b, view))
        return replace(view, findings=tuple(found))

    @cached_property
    def phases(self) -> PhasesView:
        """Two LLM profiles phase by phase, with one verdict."""
        return phases_view(self.a, self.b, self.cutoffs)


def _scaled(pairs: list[Pair], factor: float) -> list[Pair]:
    return [replace(p, b_ns=[x / factor for x in p.b_ns]) for p in pairs]


def _ops_view(a: Profile, b: Profile, mode: str | tuple[str, str], cut: Cutoffs) -> OpsView:
    """Match, divide the machine's speed out (when its probe moved: analysis/evidence.py
    probe_moved), test, judge."""
    matched = match_ops(a, b)
    divided = evidence.probe_ratio(a, b) if evidence.probe_moved(a, b) else 1.0
    e2e = Pair(ModeName.E2E, a.e2e_ns, b.e2e_ns) if a.e2e_ns and b.e2e_ns else None
    tested = compare_pairs(_scaled(pairs_for(a, b, mode, matched), divided), cut,
                           e2e=_scaled([e2e], divided)[0] if e2e else None)
    if divided != 1.0:
        tested = replace(tested, notes=(
            *tested.notes, f"B's times were divided by {divided:.2f}, the ratio of the machine "
            "speed probes (B/A), before judging each op: the verdicts are each op's move "
            "beyond the machine's"))
    found = findings(evidence.evidence(a, b, tested, matched, divided, sides(mode)))
    return OpsView(tested, matched, divided, tuple(found), tuple(setting_differences(a, b)),
                   evidence.data_reads(a, b, tested, matched))
