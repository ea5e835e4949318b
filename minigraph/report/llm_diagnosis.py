"""The text rendering of an LLM diagnosis: the first request at each rung, then what each
step of the warm-up ladder cost the first token, then the verdict."""
from __future__ import annotations

import statistics

from ..analysis.contention import warning
from ..results.llm_diagnosis import WHAT, LLMDiagnosis, steps
from .units import dur


def _median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def format_llm_diagnosis(d: LLMDiagnosis) -> str:
    n = len(d.records) // max(len(d.rungs), 1)
    lines = [w for w in [warning(d.contention, "this diagnosis")] if w]
    lines += [f"Why the first token is slow: {d.model}, prompt {d.prompt_len} tokens, "
              f"{d.threads} thread(s) on {d.cpu}; {n} fresh process(es) per rung",
              f"  {'rung':<5} {'warmed before the request':<28} {'first token':>12} "
              f"{'first decode':>13} {'faults':>8}"]
    for r in d.rungs:
        faults = _median([float(x["prefill"]["faults"]) for x in d.records if x["rung"] == r])
        lines.append(f"  {r:<5} {WHAT.get(r, r):<28} {dur(_median(d.of(r))):>12} "
                     f"{dur(_median(d.of(r, 'decode'))):>13} {faults:>8.0f}")
    found = steps(d)
    lines.append("what each step cost the first request (median difference, 90% interval):")
    for s in found:
        mark = "" if s.resolved else "  (not resolved out of the noise)"
        lines.append(f"  {s.what:<24} {dur(s.ttft_ns):>10} [{dur(s.lo_ns)}, {dur(s.hi_ns)}] "
                     f"to the first token, {dur(s.decode_ns)} to the first decode step, "
                     f"{s.faults:.0f} page faults; most in {s.top_op} "
                     f"({dur(s.top_op_ns)}){mark}")
    lines.append(_verdict(d, found))
    return "\n".join(lines)


def _verdict(d: LLMDiagnosis, found: list) -> str:
    first, last = d.rungs[0], d.rungs[-1]
    excess = _median(d.of(first)) - _median(d.of(last))
    resolved = [s for s in found if s.resolved and s.ttft_ns > 0]
    if not resolved:
        return (f"verdict: unresolved: the first token's excess over rung {last} is "
                f"{dur(excess)}, and no step is out of the noise (more processes: --processes)")
    top = max(resolved, key=lambda s: s.ttft_ns)
    return (f"verdict: {top.what} made the first token slow: {dur(top.ttft_ns)} of the "
            f"{dur(excess)} excess over rung {last} ({top.ttft_ns / excess:.0%}), most in "
            f"{top.top_op}")
