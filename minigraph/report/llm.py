"""The text rendering of an LLM profile: the LLM user's figures first, then one table per
phase (prefill, decode) with every kernel and KV-cache builtin, then the depth sweep.

Computes nothing it could not read off the document: medians, shares and the figures
(results/llm.py ``Figures``) are the document's own; only the layout is decided here.
"""
from __future__ import annotations

import math

from ..analysis.contention import warning
from ..results.llm import DepthPoint, Figures, LLMProfile, PhaseResult
from ..results.modes import ModeName
from .units import dur as fmt_time

TOP = 12  # rows per phase table before the rest are summed into one


def _ms(ns: float | None) -> str:
    return "-" if ns is None or (isinstance(ns, float) and math.isnan(ns)) else fmt_time(ns)


def _summary(p: LLMProfile) -> list[str]:
    f = Figures.of(p)
    pre, dec = p.phase("prefill"), p.phase("decode")
    busy = warning(p.contention, "this profile")
    lines = [busy] if busy else []
    lines += [
        f"{p.model}: {p.threads} thread(s) on {p.cpu}; prompt {p.prompt_len} tokens, "
        f"{p.decode_steps} decode steps",
        f"  time to first token (first request, fresh process): {f.ttft_ms:.1f} ms",
        f"  prefill: {f.prefill_tok_s:.1f} tokens/s (pp{pre.tokens}: "
        f"{fmt_time(pre.e2e_median())})" + _roof(f.prefill_gflops, p.peaks.get("gflops"),
                                                  "GFLOP/s", "FMA peak"),
        f"  decode: {f.decode_ms:.2f} ms/token, {f.decode_tok_s:.1f} tokens/s at depth "
        f"{dec.depth}" + _roof(f.decode_gbps, p.peaks.get("gbps"), "GB/s", "read bandwidth"),
        f"  inter-token latency over {len(p.itl_ns)} steps: p50 {f.itl_p50_ms:.2f} ms, "
        f"p99 {f.itl_p99_ms:.2f} ms",
    ]
    return lines


def _roof(value: float | None, peak: float | None, unit: str, what: str) -> str:
    if value is None:
        return ""
    share = f", {value / peak:.0%} of the measured {what} {peak:.1f} {unit}" if peak else ""
    return f"; {value:.1f} {unit}{share}"


def _bound(p: LLMProfile, flops: int | None, nbytes: int | None, ns: float) -> str:
    """memory or compute: the op's FLOPs per byte against the machine's balance point."""
    gflops, gbps = p.peaks.get("gflops"), p.peaks.get("gbps")
    if not (flops and nbytes and gflops and gbps):
        return ""
    return "memory" if flops / nbytes < gflops / gbps else "compute"


def phase_table(p: LLMProfile, ph: PhaseResult) -> list[str]:
    per = ph.tokens
    head = (f"{ph.name} ({ph.tokens} token{'s' if per > 1 else ''} at depth {ph.depth}): "
            f"e2e {fmt_time(ph.e2e_median())} through TVM's VM")
    cols = (f"  {'Name':<56} {'calls/tok':>9} {ModeName.IN_RUN:>9} {ModeName.WARM:>9} "
            f"{'first':>9} {'%':>6}  bound")
    rows = sorted(ph.ops, key=lambda o: -o.inrun_median)
    total = ph.inrun_sum() or 1.0
    out = [head, cols]
    for o in rows[:TOP]:
        warm = o.warm_ns * o.calls if o.warm_ns is not None else None
        out.append(f"  {o.label[:56]:<56} {o.calls / per:>9.3g} {_ms(o.inrun_median):>9} "
                   f"{_ms(warm):>9} {_ms(o.first_ns):>9} {100 * o.inrun_median / total:>6.2f}"
                   f"  {_bound(p, o.flops, o.bytes, o.inrun_median)}")
    rest = rows[TOP:]
    if rest:
        out.append(f"  {f'({len(rest)} more ops)':<56} {'':>9} "
                   f"{_ms(sum(o.inrun_median for o in rest)):>9}")
    out += _inside(ph)
    over = ph.overhead_median()
    gap = ph.e2e_median() - total - over
    out.append(f"  sum of in-run {fmt_time(total)} + minigraph's loop {fmt_time(over)} = "
               f"{fmt_time(total + over)}; e2e - that = {fmt_time(gap)} "
               f"({gap / ph.e2e_median():+.1%} of e2e); the VM's own work between calls, "
               f"measured once with set_instrument: {fmt_time(ph.vm_between_ns)}")
    return out


def _inside(ph: PhaseResult) -> list[str]:
    """The attention builtin's own kernels (the KV cache calls them from C++)."""
    if not ph.inside_ns:
        return []
    med = ph.inside_medians()
    out = ["  inside the attention builtin (the KV cache's kernels, timed on their arguments):"]
    for name in sorted(med, key=lambda n: -med[n]):
        out.append(f"    {name[:54]:<54} {ph.inside_calls.get(name, 0) / ph.tokens:>9.3g} "
                   f"{_ms(med[name]):>9}")
    return out


def sweep_table(points: tuple[DepthPoint, ...]) -> list[str]:
    """Per op, decode time at each depth and its fitted slope (ns per token of context)."""
    if not points:
        return []
    names = sorted(points[-1].op_ns, key=lambda n: -points[-1].op_ns[n])[:8]
    depths = [pt.depth for pt in points]
    out = ["decode against KV-cache depth (in-run per step):",
           "  " + f"{'Name':<56}" + "".join(f"{'d=' + str(d):>10}" for d in depths)
           + f"{'slope/1k tok':>14}"]
    for n in names:
        ys = [pt.op_ns.get(n, math.nan) for pt in points]
        out.append("  " + f"{n[:56]:<56}" + "".join(f"{_ms(y):>10}" for y in ys)
                   + f"{_ms(_slope(depths, ys) * 1000):>14}")
    out.append("  " + f"{ModeName.E2E:<56}" + "".join(f"{_ms(pt.e2e_ns):>10}" for pt in points))
    attn = [sum(v for k, v in pt.op_ns.items() if "attention" in k) / pt.e2e_ns for pt in points]
    out.append("  attention's share of the step: " +
               ", ".join(f"{a:.0%} at {d}" for a, d in zip(attn, depths)))
    return out


def _slope(xs: list[int], ys: list[float]) -> float:
    """Least-squares slope of ys against xs (ns per token); NaN with fewer than 2 points."""
    pts = [(x, y) for x, y in zip(xs, ys) if not math.isnan(y)]
    if len(pts) < 2:
        return math.nan
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    den = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / den if den else math.nan


def format_llm_profile(p: LLMProfile) -> str:
    lines = _summary(p)
    for ph in p.phases:
        lines += [""] + phase_table(p, ph)
    if p.sweep:
        lines += [""] + sweep_table(p.sweep)
    return "\n".join(lines)
