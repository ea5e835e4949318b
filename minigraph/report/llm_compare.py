"""A Comparison of two LLM profiles (its phase view, analysis/phases.py) as text: the verdict,
the headline figures of each side, each phase's move and the ops that moved most."""
from __future__ import annotations

import math

from ..analysis.comparison import Comparison
from ..results.llm import Figures
from .units import dur


def format_llm_comparison(c: Comparison) -> str:
    a, b, v = c.a, c.b, c.phases
    fa, fb = Figures.of(a), Figures.of(b)
    lines = [f"A: {a.model}, {a.threads} thread(s) on {a.cpu}",
             f"B: {b.model}, {b.threads} thread(s) on {b.cpu}",
             f"verdict: {v.verdict} — {v.because}",
             f"  time to first token {fa.ttft_ms:.1f} -> {fb.ttft_ms:.1f} ms; prefill "
             f"{fa.prefill_tok_s:.1f} -> {fb.prefill_tok_s:.1f} tokens/s; decode "
             f"{fa.decode_ms:.2f} -> {fb.decode_ms:.2f} ms/token"]
    for m in v.phases:
        lines.append(f"{m.name}: {dur(m.a_ns)} -> {dur(m.b_ns)} ({m.ratio:.2f}x, p={m.p_value:.2g}"
                     f"{', real' if m.real else ', within noise'})")
        for name, x, y in m.ops:
            lines.append(f"  {name[:56]:<56} {dur(x):>9} -> {dur(y):>9} "
                         f"({y / x if x > 0 else math.nan:.2f}x)")
    for cls, what in v.differ.items():
        if cls != v.verdict:
            lines.append(f"also differs ({cls}): {what}")
    return "\n".join(lines)
