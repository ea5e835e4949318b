"""Why TVM's protocols disagree: each one's total against one steady-state reference.

The reference must survive one noisy stretch of a shared machine. ``benchmark_e2e`` (25 runs
back to back, about a second) does not: on a 2-core machine with a busy neighbour it read
15-35% above everything else. The ladder's steady state does: rung f is one timed iteration
after k full runs in each of N fresh processes, interleaved with the other rungs over the whole
ladder, and each op's time is its median over those processes, so a stretch that slows one
process moves it little; it comes with a bootstrap interval. That is the reference whenever
rung f was measured; otherwise the median repeat of ``benchmark_e2e`` (not its mean), said so.
Counterpart: none in TVM; its profilers never compared themselves with each other.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..results.attribution import Attribution, Interval
from ..results.diagnosis import Diagnosis
from ..results.protocols import KEYS, NO_PARAMS, ProtocolResult
from ..results.rungs import label
from .protocols import format_protocols
from .units import interval, ms, us

NOISE_FLOOR_NS = 2_000.0  # an op's difference below this is not worth a sentence

REASONS = {
    "debug_executor.profile": "pool reset, 3 warm-ups, then ONE op-by-op pass: one sample per op",
    "vm_profiler": "pool reset, 1 warm-up, then one op-by-op pass",
    "run_individual": "each op alone under time_evaluator: its data stays cache-hot across "
                      "repeats and no executor runs between ops",
    "benchmark_e2e": "whole runs back to back, inputs copied in and outputs out each run; the "
                     "mean of its repeats, all taken within about a second, so one noisy "
                     "stretch moves it",
    "relax_vm_e2e": "the same kernels under TVM's Relax VM: VM vs minigraph dispatch, plus noise",
    "relax_vm_instrument": "per call through a Python instrument callback, whose own cost is "
                           "included",
    "debug_executor.no_params": "the forum thread's own protocol: the debug executor created "
                                "from graph.json and the library but never given its params, "
                                "so it ran on whatever the allocator left in the weights",
}


@dataclass(frozen=True)
class Reference:
    """The steady state every protocol is compared with, and where it came from."""

    name: str
    what: str                 # how it was measured, for the heading
    total: Interval           # ns, with the interval a protocol must fall outside to disagree


def resolved(x: Interval) -> bool:
    """True if the interval excludes zero: the sign (and so the cost) is known."""
    return x.lo_ns > 0 or x.hi_ns < 0


def reference(results: Sequence[ProtocolResult], att: Attribution | None) -> Reference | None:
    """Rung f's steady state when measured, else benchmark_e2e's median repeat, else None."""
    if att is not None and "f" in att.rung_total:
        return Reference("the ladder's steady state (rung f)",
                         f"one timed iteration after k full runs, per-op medians over "
                         f"{att.processes['f']} fresh processes spread over the whole ladder, "
                         "summed; 90% bootstrap interval", att.rung_total["f"])
    bench = next((r for r in results if r.key == "benchmark_e2e" and not r.skipped), None)
    if bench is None:
        return None
    xs = sorted(bench.samples_ns)
    return Reference("benchmark_e2e's median repeat",
                     f"rung f was not measured; median of its {len(xs)} repeats, [min, max]",
                     Interval(xs[(len(xs) - 1) // 2], xs[0], xs[-1]))


def _worst_op(r: ProtocolResult, steady: tuple[Interval, ...] | None) -> str:
    """The op where a per-op protocol sits furthest above the ladder's steady state."""
    if r.per_op_ns is None or steady is None:
        return ""
    diffs = [(v - s.median_ns, i) for i, (v, s) in enumerate(zip(r.per_op_ns, steady))
             if v is not None]
    if not diffs:
        return ""
    d, i = max(diffs)
    return f"; furthest above steady on op {i} ({us(d)} us more)" if d > NOISE_FLOOR_NS else ""


def excess_phrase(att: Attribution | None) -> str:
    """'the first-run excess of X ms (largest resolved part: ...)', from the ladder."""
    if att is None or not att.component_total:
        return ""
    excess = interval(att.excess_total.median_ns, att.excess_total.lo_ns,
                      att.excess_total.hi_ns, ms)
    key = att.dominant()
    if key is None:
        return f"the first-run excess of {excess} ms (no part of it resolved out of the noise)"
    return (f"the first-run excess of {excess} ms (largest resolved part: {label(key)}, "
            f"{ms(att.component_total[key].median_ns)} ms)")


def _spread(r: ProtocolResult) -> str:
    xs = sorted(r.samples_ns)
    if len(xs) < 2:
        return ""
    return f"; its {len(xs)} repeats spread {(xs[-1] - xs[0]) / xs[(len(xs) - 1) // 2]:.0%}"


def protocol_explanations(diag: Diagnosis, results: Sequence[ProtocolResult],
                          att: Attribution | None) -> str:
    """Each protocol's total against the reference, with the reason it differs; a total inside
    the reference's interval agrees with it."""
    ref = reference(results, att)
    if ref is None:
        return ""
    t = ref.total
    lines = [f"Why they disagree (reference: {ref.name}, {interval(t.median_ns, t.lo_ns, t.hi_ns, ms)}"
             f" ms: {ref.what}; a total inside that interval agrees with it):"]
    removed = excess_phrase(att)
    if removed and att is not None and att.rungs[0] == "a":
        lines.append(f"  a one-pass profile with no warm-up, in a fresh process (rung a): "
                     f"{interval(*_ns(att.rung_total['a']), ms)} ms: steady state plus {removed}")
    steady = att.rung_ns["f"] if att is not None and "f" in att.rung_ns else None
    for r in results:
        if r.skipped:
            continue
        delta = r.total_ns - t.median_ns
        verdict = ("inside the reference's interval: agrees" if t.lo_ns <= r.total_ns <= t.hi_ns
                   else f"{delta / 1e6:+,.2f} ms, {100 * delta / t.median_ns:+.1f}%")
        warmed = (f"; its warm-ups removed {removed}" if removed and r.key in
                  ("debug_executor.profile", "vm_profiler") else "")
        lines.append(f"  {r.key}: {ms(r.total_ns)} ms ({verdict}{_spread(r)}): "
                     f"{REASONS.get(r.key, r.description)}{warmed}{_worst_op(r, steady)}"
                     + _no_params(r, results))
    return "\n".join(lines)


def _no_params(r: ProtocolResult, results: Sequence[ProtocolResult]) -> str:
    """For the debug executor without params: per op against the same protocol with them,
    the ops the unset data slowed, and what its weights held."""
    if r.key != NO_PARAMS:
        return ""
    given = next((x for x in results if x.key == KEYS[0] and x.per_op_ns), None)
    held = next((n for n in r.notes if n.startswith("its ")), "")
    if given is None or r.per_op_ns is None:
        return f"; {held}" if held else ""
    ratios = sorted(((a / b, i) for i, (a, b) in enumerate(zip(r.per_op_ns, given.per_op_ns))
                     if a and b and a - b > NOISE_FLOOR_NS), reverse=True)
    slowed = ", ".join(f"op {i} {x:.1f}x" for x, i in ratios[:3] if x >= 1.5)
    told = (f"; against debug_executor.profile with the params set: {slowed}" if slowed else
            "; no op is 1.5x slower than with the params set (on this CPU the data cost "
            "nothing measurable)")
    return told + (f"; {held}" if held else "")


def _ns(x: Interval) -> tuple[float, float, float]:
    return x.median_ns, x.lo_ns, x.hi_ns


def protocols_section(diag: Diagnosis, results: Sequence[ProtocolResult],
                      att: Attribution | None, top: int = 10, width: int | None = None) -> str:
    """TVM's protocols side by side (fitted to ``width``), then why each disagrees with the
    steady state."""
    return "\n\n".join(["TVM's protocols side by side, same kernels:",
                         format_protocols(results, [o["name"] for o in diag.ops], top, width),
                         protocol_explanations(diag, results, att)])
