"""A Comparison's op view (analysis/comparison.py) as text, or as a JSON document: which
per-op differences between two profiles are real, and why the two differ.

Rendering only: the matching, the noise test, the verdict and its evidence are the analysis'
(one ``Comparison``, computed once); ``render_comparison`` draws any ``Significance`` (a table
row per item, the summary line, how the verdicts were reached).
"""
from __future__ import annotations

from typing import Sequence

from ..analysis.comparison import Comparison
from ..analysis.contention import warning
from ..analysis.verdict import short_value
from ..fileio.printable import one_line
from ..measure.significance import Delta, Significance
from ..results.comparison import FORMAT
from ..results.profile import Profile
from . import findings
from .units import dur, format_table, pct, wrap


def _p(p: float | None) -> str:
    return "-" if p is None else f"{p:.2g}"


def _ratio(d: Delta) -> str:
    return "-" if d.ratio != d.ratio else f"{d.ratio:.2f}x"


def _row(d: Delta) -> list[str]:
    noise = "-" if d.noise != d.noise else ">999%" if d.noise > 9.99 else "±" + pct(d.noise, 0)
    return [d.name, dur(d.a.median_ns), dur(d.b.median_ns), _ratio(d), noise, _p(d.p),
            f"{d.a.n}/{d.b.n}", d.verdict]


def summary_line(cmp: Significance, what: str = "ops") -> str:
    """pyperf compare_to style: 'K of N ops differ (...); geometric mean of B/A: 1.02x'."""
    geo = "-" if cmp.geomean != cmp.geomean else f"{cmp.geomean:.3f}x"
    beyond = "" if cmp.shift == 1.0 else f" beyond the whole-run shift {cmp.shift:.2f}x"
    return (f"{len(cmp.differ)} of {len(cmp.deltas)} {what} differ{beyond} "
            f"({cmp.count('slower')} slower, {cmp.count('faster')} faster); geometric mean of "
            f"B/A: {geo}; run-to-run noise estimated from the data: {pct(cmp.run_to_run)} "
            f"(spread of B/A across {what})")


def shift_line(cmp: Significance, what: str = "ops") -> str:
    """The whole-run shift, said apart from the per-item verdicts (empty when below the
    floor): it cannot be told from process-to-process variation with one profile a side."""
    if cmp.shift != cmp.shift or abs(cmp.shift - 1) < cmp.floor:
        return ""
    way, one = ("slower" if cmp.shift > 1 else "faster"), what[:-1]
    return (f"Whole run: B is {max(cmp.shift, 1 / cmp.shift):.2f}x {way} than A, every "
            f"{one} alike (median B/A {cmp.shift:.3f}x); verdicts above are each {one}'s move "
            "beyond that. A shift shared by every op is what two processes of one machine "
            "often show (clock speed, memory placement, the host): profile A and B again, "
            "alternating, before calling it a change.")


def render_comparison(cmp: Significance, *, header: Sequence[str] = (),
                      footer: Sequence[str] = (), width: int | None = None,
                      only_changed: bool = False) -> str:
    """A noise test as text: header lines, one row per item (and the e2e row), the summary
    line, how verdicts were reached, footer lines; fitted to ``width``."""
    head = ["Name", "A", "B", "B/A", "noise", "p", "n A/B", "verdict"]
    rows = [d for d in cmp.deltas if d.verdict in ("slower", "faster") or not only_changed]
    body = [_row(d) for d in rows]
    if cmp.e2e is not None:
        body.append(["e2e (whole run)"] + _row(cmp.e2e)[1:])
    table = format_table(head, body, set(range(1, 7)), width=width, shrink=(0,), min_shrink=24,
                         optional=(6, 5))
    how = (f"A change is real when |ln(B/A) - ln(whole-run shift)| exceeds {cmp.z:g} run-to-run "
           f"deviations (the "
           f"noise column: across-op noise combined with the op's own spread, at least "
           f"{pct(cmp.floor, 0)}) and, with several samples per side, Mann-Whitney p < "
           f"{cmp.alpha:g}.")
    shift = shift_line(cmp)
    lines = [*header, table, "", summary_line(cmp), *([shift] if shift else []), how,
             *cmp.notes, *footer]
    return wrap("\n".join(lines), width)


def _differences(c: Comparison) -> list[str]:
    if not c.ops.settings_differ:
        return ["Settings: the same in A and B (threads, affinity, modes, TVM, machine, "
                "model files)"]
    return ["Settings that differ:"] + [
        f"  {label}: {short_value(va)} (A) vs {short_value(vb)} (B)"
        for label, va, vb in c.ops.settings_differ]


def _busy(a: Profile, b: Profile) -> list[str]:
    out = []
    for name, p in (("A", a), ("B", b)):
        line = warning(p.contention, f"{name}'s measurements")
        if line:
            out.append(line + "; differences may be the neighbour, not a change")
    return out


def _measured(c: Comparison) -> list[str]:
    out = []
    for name, p, path in (("A", c.a, c.paths[0]), ("B", c.b, c.paths[1])):
        when = p.provenance.get("created", "time not recorded")
        out.append(f"{name}: {path} ({when}{', PARTIAL' if p.partial else ''})")
    return out


def data_explanations(c: Comparison) -> list[str]:
    """For every op that differs, the data first: when one side read subnormal operands and
    the other did not, the same kernel ran on different data (results/data.py)."""
    out = [f"the data: {one_line(r.name)} is {r.ratio:.2f}x in B, and in {r.side} it read "
           f"subnormal values ({r.what}), in {'B' if r.side == 'A' else 'A'} it did not: the "
           "same kernel on different data (were the params set on both sides?) before any "
           "difference of measurement" for r in c.ops.data_reads]
    return out + [""] * bool(out)


def mode_label(c: Comparison) -> str:
    """'mode warm', or 'modes warm (A) vs one-pass (B)'."""
    ma, mb = c.modes
    return f"mode {ma}" if ma == mb else f"modes {ma} (A) vs {mb} (B)"


def compare(c: Comparison, *, width: int | None = None, only_changed: bool = False) -> str:
    """The whole comparison of two profiles as text."""
    matched = c.ops.matched
    header = _measured(c) + [f"{mode_label(c)}; ops matched by {matched.by}" + (
        f"; {len(matched.only_a)} ops only in A, {len(matched.only_b)} only in B"
        if matched.only_a or matched.only_b else ""), ""] + data_explanations(c)
    footer = _differences(c) + _busy(c.a, c.b) + [""] + findings.render(c.ops.findings)
    return render_comparison(c.ops.tested, header=header, footer=footer, width=width,
                             only_changed=only_changed)


def to_dict(c: Comparison) -> dict:
    """The comparison as a JSON-ready document (``compare --json``; docs/compare-schema.md)."""
    a, b, ops = c.a, c.b, c.ops
    ma, mb = c.modes
    return {"format": FORMAT, "a": c.paths[0], "b": c.paths[1], "mode": ma,
            "mode_a": ma, "mode_b": mb,
            "matched_by": ops.matched.by,
            "only_a": [a.ops[i]["name"] for i in ops.matched.only_a],
            "only_b": [b.ops[j]["name"] for j in ops.matched.only_b], **ops.tested.to_dict(),
            "settings_differ": [{"setting": s, "a": va, "b": vb}
                                for s, va, vb in ops.settings_differ],
            "busy": _busy(a, b), "speed_divided": ops.divided,
            **findings.to_dict(ops.findings),
            "provenance": {"a": a.provenance, "b": b.provenance}}
