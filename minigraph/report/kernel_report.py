"""A Comparison's kernel view (analysis/kernels.py) as text (``minigraph compare``) and as JSON
(``compare --json``), with the verdict's findings of why the two differ."""
from __future__ import annotations

from ..analysis.comparison import Comparison
from ..analysis.kernels import KernelsView, Side, times
from ..analysis.matching import EXECUTOR_KINDS, Kernel, family
from ..fileio.printable import one_line
from ..measure.significance import Pair
from ..results.comparison import KERNEL_FORMAT as FORMAT
from . import findings
from ..results.modes import ModeName
from .units import format_table, us

SHOWN = 10   # kernels listed in the text (all of them go to --json)


def _name(k: Kernel) -> str:
    return " / ".join(map(one_line, k.names)) if k.names and any(k.names) else "(names differ)"


def _short(name: str, width: int = 48) -> str:
    """Without the module prefix, and cut in the middle: the numbered end tells kernels apart."""
    name = family(name)
    return name if len(name) <= width else name[:width // 2 - 1] + "..." + \
        name[-(width - width // 2 - 2):]


def _out_shape(k: Kernel) -> str:
    """The last argument's shape (the output, in TVM's argument order)."""
    return k.shapes.rsplit("], ", 1)[-1] if k.shapes else "(no shapes)"


def _kernel_dict(k: Kernel) -> dict:
    return {"names": list(k.names), "hash": k.hash, "shapes": k.shapes, "kind": k.kind,
            "calls": k.calls, "us": k.total_ns / 1e3}


def _pair_dict(p: Pair, how: str) -> dict:
    return {"hash": p.a.hash or p.b.hash, "shapes": p.a.shapes, "name_a": _name(p.a),
            "name_b": _name(p.b), "a_us": p.a.total_ns / 1e3, "b_us": p.b.total_ns / 1e3,
            "calls_a": p.a.calls, "calls_b": p.b.calls, "a_us_per_call": p.a.per_call_ns / 1e3,
            "b_us_per_call": p.b.per_call_ns / 1e3,
            "ratio": p.ratio if p.ratio != float("inf") else None,
            "gap_us": p.gap_ns / 1e3, "matched_by": how}


def to_dict(comparison: Comparison) -> dict:
    """Every matched pair and the summary, for ``compare --json``, with the verdict's
    findings as ``cause``/``findings``."""
    c = comparison.kernels
    m, found = c.matching, c.findings
    return {"format": FORMAT, "matched_by": m.level, "why": m.why,
            "a": {**c.a.__dict__, "outside_us": c.a.outside_us},
            "b": {**c.b.__dict__, "outside_us": c.b.outside_us},
            "pairs": [_pair_dict(p, m.level) for p in m.pairs],
            "only_a": [_kernel_dict(k) for k in m.only_a],
            "only_b": [_kernel_dict(k) for k in m.only_b],
            "same_name_different_kernel": [{"name": n, "a": _kernel_dict(ka),
                                            "b": _kernel_dict(kb)}
                                           for n, ka, kb in m.same_name_other_kernel],
            "summary": {"ratio": c.ratio_stats, "gap_us": c.gap_us,
                        "renamed": m.renamed,
                        "top": [_pair_dict(p, m.level) for p in c.top],
                        "top_share": c.top_share, "verdict": c.verdict.kind,
                        "verdict_text": c.verdict.text},
            **({"cause": found[0].cls, "findings": [f.__dict__ for f in found]}
               if found else {})}


def _side_line(s: Side) -> str:
    calls = f"{s.calls} calls" + (f" in {s.rows} rows" if s.rows is not None else "")
    if s.executor_calls:
        calls += f" ({s.executor_calls} of them executor instructions)"
    mode = f"{s.mode} samples" if s.mode else "no per-op samples"
    return f"  {s.label} = {s.file}: {s.what}; {mode}; {calls}"


def _outside(s: Side) -> str:
    if s.what == "minigraph profile":
        e2e = f", end-to-end run {us(s.total_us * 1e3)} us" if s.total_us else ""
        return (f"  {s.label}: sum of {s.mode} medians {us(s.kernel_us * 1e3)} us{e2e} "
                "(minigraph measures its executor's overhead on its own: `minigraph show`)")
    if s.outside_us is None or not s.total_us:
        return f"  {s.label}: no Total to set the per-op sum against"
    return (f"  {s.label}: Sum {us(s.sum_us * 1e3)} us, Total {us(s.total_us * 1e3)} us: "
            f"{us(s.outside_us * 1e3)} us ({100 * s.outside_us / s.total_us:.1f}%) outside "
            "the timed calls (the executor's own work and the profiler's)")


def _carriers_table(c: KernelsView) -> str:
    gap = c.gap_us * 1e3
    rows = sorted(c.matching.pairs, key=lambda p: -abs(p.gap_ns))[:SHOWN]
    body = [[_short(_name(p.a)), _short(_name(p.b)) if _name(p.b) != _name(p.a) else "(same)",
             p.a.hash[:16], str(p.a.calls), us(p.a.total_ns), us(p.b.total_ns),
             times(p.ratio) if p.ratio != float("inf") else "-",
             f"{100 * p.gap_ns / gap:+.0f}%" if gap else "-"] for p in rows]
    head = ["Name in A", "Name in B", "Hash", "Count", "A (us)", "B (us)", "B/A", "of gap"]
    return format_table(head, body, right={3, 4, 5, 6, 7}) + \
        "\n  (names without their module prefix tvmgen_default_ / vm_mod_)"


def _unmatched(c: KernelsView) -> list[str]:
    """Kernels and executor instructions (VM::*, vm.builtin.*) on one side only."""
    lines = []
    for label, ks, sign in (("A", c.matching.only_a, -1), ("B", c.matching.only_b, 1)):
        for what, group in (("executor instructions", [k for k in ks if k.kind in
                                                       EXECUTOR_KINDS]),
                            ("kernels", [k for k in ks if k.kind not in EXECUTOR_KINDS])):
            if not group:
                continue
            ns = sum(k.total_ns for k in group)
            share = f", {100 * sign * ns / (c.gap_us * 1e3):+.0f}% of the gap" if c.gap_us else ""
            few = ", ".join(f"{_name(k)} x{k.calls}" for k in
                            sorted(group, key=lambda k: -k.total_ns)[:3])
            lines.append(f"  {what} only in {label}: {len(group)}, {us(ns)} us{share} "
                         f"(largest: {few})")
    return lines


def _calls(c: KernelsView) -> str:
    """Kernel calls on each side (a minigraph profile's ops are the model's graph.json ops)."""
    ka, kb = (s.calls - s.executor_calls for s in (c.a, c.b))
    line = f"Kernel calls: A {ka}, B {kb}"
    line += ": the same number" if ka == kb else \
        f": {abs(ka - kb)} more in {'A' if ka > kb else 'B'} (fused differently, or cut short?)"
    differ = [p for p in c.matching.pairs if p.a.calls != p.b.calls]
    if differ:
        line += f"; {len(differ)} matched kernels are called a different number of times " \
                "(ratios are per call)"
    return line


def _names(c: KernelsView) -> list[str]:
    m = c.matching
    if m.level != "hash+shapes":
        return ["  (names can only be checked against hashes: the pairs above are matched by "
                "name, so a name that denotes another kernel on the other side goes unseen)"]
    lines = [f"  {len(m.same_name_other_kernel)} names denote a different kernel in A than in B"
             " (TVM numbers fused functions per build); "
             f"{m.renamed} matched kernels carry different names in A and B"]
    for name, ka, kb in m.same_name_other_kernel[:5]:
        lines.append(f"    {name}: in A {ka.hash} -> {_out_shape(ka)}, in B {kb.hash} -> "
                     f"{_out_shape(kb)}")
    return lines


def evidence(c: KernelsView) -> str:
    """What the matching can and cannot tell, and the checks that can."""
    first = ("A matching Hash is TVM's structural hash of the fused Relay function (LabelOps): "
             "a pair is the same computation on the same shapes. It is not the compiled "
             "schedule: two builds can hash equal and run different code (a tuned config in one "
             "build and a fallback schedule in the other, another -mcpu or TVM version)."
             if c.matching.level == "hash+shapes" else
             "Without a common hash the pairs are matched by name (module prefix and the "
             "build's _N numbering removed) and shapes: treat them as candidates; two kernels "
             "with one name and shapes can still differ in attributes (strides, padding).")
    one_pass = [s.label for s in (c.a, c.b) if s.mode == ModeName.ONE_PASS]
    noise = (f" {' and '.join(one_pass)} timed each call once (one pass): a single sample per "
             "call, so ratios within ~20% are within one-pass noise." if one_pass else "")
    names = [family(p.a.names[0]) for p in c.top[:2] if p.a.names and p.a.names[0]]
    sym = names[0] if names else "<kernel>"
    return "\n".join([
        "What this can and cannot tell:", f"  {first}{noise}",
        "  To tell 'measured differently' from 'compiled differently' for the kernels above:",
        "  1. time both builds' kernels side by side on one machine: `minigraph profile` each "
        "library, then `minigraph compare A.json B.json --by-kernel` (same code timed the same "
        "way gives the same time);",
        f"  2. compare the machine code: `nm -S --size-sort lib.so | grep {sym}` in both "
        "libraries (different sizes: different code);",
        "  3. run `minigraph diagnose` on the model: it runs the debug executor's and the VM "
        "profiler's protocols side by side on the same kernels, so a protocol effect (warm-ups, "
        "thread-pool wake-up, the first op's cost) shows there."] + _data_check(c))


def _data_check(c: KernelsView) -> list[str]:
    """The data as a third explanation, where the gap has its shape: a few kernels tens of
    times off while the rest agree is what subnormal operands do on many x86 CPUs."""
    if c.verdict.kind != "concentrated" or "different data" not in c.verdict.text:
        return []
    return ["  4. the data: a profiler whose params were never set (debug_executor.create "
            "without load_params, as TVM's own test_runtime_profiling did) times kernels on "
            "whatever the allocator left, and freed memory read as float32 is mostly subnormal: "
            "the first conv and the kernels that read its output run tens of times slower, "
            "the rest agree. To tell it apart: profile the model with its params and with "
            "`--fill uninitialized` (`minigraph profile DIR --fill uninitialized` on a copy "
            "without model.params); the Data section names every op that read subnormal "
            "values and what they cost, and `minigraph diagnose` runs the debug executor "
            "without params beside the others."]


def render(comparison: Comparison) -> str:
    """The comparison kernel by kernel as text, the verdict's findings its last lines."""
    c = comparison.kernels
    m, st = c.matching, c.ratio_stats
    lines = ["Kernel comparison", _side_line(c.a), _side_line(c.b),
             f"Matched by {m.why}: {len(m.pairs)} kernels in both, {len(m.only_a)} only in A, "
             f"{len(m.only_b)} only in B"]
    lines += _names(c)
    lines.append(_calls(c))
    if st:
        lines.append(f"Per-kernel ratio B/A (per call): median {st['median']:.2f}, middle half "
                     f"{st['p25']:.2f}-{st['p75']:.2f}, 10-90% {st['p10']:.2f}-{st['p90']:.2f};"
                     f" {st['within_10pct']} of {st['n']} within 10%")
    pct = f" ({100 * c.gap_us / c.a.kernel_us:+.0f}%)" if c.a.kernel_us else ""
    lines.append(f"Per-op time: A {us(c.a.kernel_us * 1e3)} us, B {us(c.b.kernel_us * 1e3)} us: "
                 f"gap {us(c.gap_us * 1e3)} us{pct}")
    parts = ["\n".join(lines)]
    if m.pairs:
        parts.append("Kernels by their part of the gap:\n" + _carriers_table(c) +
                     ("\n" + "\n".join(_unmatched(c)) if _unmatched(c) else ""))
    parts.append("Sum vs Total:\n" + _outside(c.a) + "\n" + _outside(c.b))
    parts.append("Verdict: " + c.verdict.text)
    parts.append(evidence(c))
    if c.findings:
        parts.append("\n".join(findings.render(c.findings)).replace("Verdict:", "Cause:", 1))
    return "\n\n".join(parts)
