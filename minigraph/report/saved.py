"""``minigraph show`` of the documents that are results of other results: a saved comparison
(``compare --json``, per op or kernel by kernel) and saved protocol results, as text again."""
from __future__ import annotations

from typing import Sequence

from ..results.comparison import SavedComparison
from ..results.protocols import ProtocolResult
from .units import dur, format_table, ms, pct, wrap


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}x"


def _op_comparison(doc: dict, width: int | None) -> str:
    body = [[it["name"], dur(it["a"].get("median_ns")), dur(it["b"].get("median_ns")),
             _ratio(it.get("ratio")), it["verdict"]] for it in doc["items"]]
    if doc.get("e2e"):
        e = doc["e2e"]
        body.append(["(e2e run)", dur(e["a"].get("median_ns")), dur(e["b"].get("median_ns")),
                     _ratio(e.get("ratio")), e["verdict"]])
    shift = doc.get("shift")
    beyond = "" if shift in (None, 1.0) else f" beyond the whole-run shift {shift:.2f}x"
    geo = "-" if doc.get("geomean") is None else f"{doc['geomean']:.3f}x"
    lines = [f"saved comparison ({doc['mode']} samples, matched by {doc['matched_by']}):",
             f"  A = {doc['a']}", f"  B = {doc['b']}",
             format_table(["op", "A median", "B median", "B/A", "verdict"], body, width=width),
             f"{doc['differ']} of {doc['compared']} ops differ{beyond} ({doc['slower']} slower, "
             f"{doc['faster']} faster); geometric mean of B/A: {geo}; run-to-run noise "
             f"estimated from the data: {pct(doc['run_to_run'])}"]
    lines += [f"setting that differs: {s['setting']}: A {s['a']}, B {s['b']}"
              for s in doc.get("settings_differ", []) if isinstance(s, dict)]
    lines += [f"warning: {w}" for w in doc.get("busy", []) if isinstance(w, str)]
    return "\n".join(wrap(ln, width) if not ln.startswith(("op", " ")) else ln for ln in lines)


def _kernel_comparison(doc: dict, width: int | None) -> str:
    pairs = sorted(doc["pairs"], key=lambda p: -abs(p["gap_us"]))
    body = [[str(p.get("name_a", "")), str(p.get("name_b", "")), f"{p['a_us']:,.1f}",
             f"{p['b_us']:,.1f}", _ratio(p.get("ratio"))] for p in pairs[:20]]
    summary = doc["summary"]
    lines = [f"saved kernel comparison, matched by {doc['matched_by']}: {len(doc['pairs'])} "
             f"kernels in both, {len(doc['only_a'])} only in A, {len(doc['only_b'])} only in B",
             format_table(["name in A", "name in B", "A (us)", "B (us)", "B/A"], body,
                          width=width),
             wrap(f"Verdict ({summary['verdict']}): {summary['verdict_text']}", width)]
    return "\n".join(lines)


def render_comparison(saved: SavedComparison, width: int | None = None) -> str:
    """A saved comparison as text: its per-op (or per-kernel) table and its summary."""
    if saved.kernel:
        return _kernel_comparison(saved.doc, width)
    return _op_comparison(saved.doc, width)


def render_protocols(results: Sequence[ProtocolResult], width: int | None = None) -> str:
    """Saved protocol results: each protocol's total, samples and description."""
    body = [[r.key, ms(r.total_ns, 3), str(len(r.samples_ns)), r.description]
            for r in results]
    notes = [f"{r.key}: {n}" for r in results for n in r.notes]
    return "\n".join([format_table(["protocol", "total ms", "samples", "how"], body,
                                   width=width)] + [wrap(n, width) for n in notes])
