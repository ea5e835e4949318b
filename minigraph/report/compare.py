"""Two saved profiles -> which per-op differences are real, as text or a JSON document.

Three separate steps, so that other sources of paired timings (e.g. TVM profiler reports
matched by kernel) can reuse the last two: matching (profile/matching.py), statistics
(measure/significance.py: verdicts against run-to-run noise estimated from the data) and
rendering (here: ``render_comparison`` takes any Comparison).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

from ..analysis.matching import Matched, match_ops, pairs_for, sides
from ..analysis.settings import setting_differences
from ..analysis.thresholds import ALPHA, CUTOFFS, FLOOR, Z
from ..fileio.printable import one_line
from ..measure.contention import warning
from ..measure.significance import Delta, Pair, Significance as Comparison, compare_pairs
from ..results.comparison import FORMAT
from ..results.profile import Profile
from . import evidence, verdict
from .units import dur, format_table, pct, wrap


def _p(p: float | None) -> str:
    return "-" if p is None else f"{p:.2g}"


def _ratio(d: Delta) -> str:
    return "-" if d.ratio != d.ratio else f"{d.ratio:.2f}x"


def _row(d: Delta) -> list[str]:
    noise = "-" if d.noise != d.noise else ">999%" if d.noise > 9.99 else "±" + pct(d.noise, 0)
    return [d.name, dur(d.a.median_ns), dur(d.b.median_ns), _ratio(d), noise, _p(d.p),
            f"{d.a.n}/{d.b.n}", d.verdict]


def summary_line(cmp: Comparison, what: str = "ops") -> str:
    """pyperf compare_to style: 'K of N ops differ (...); geometric mean of B/A: 1.02x'."""
    geo = "-" if cmp.geomean != cmp.geomean else f"{cmp.geomean:.3f}x"
    beyond = "" if cmp.shift == 1.0 else f" beyond the whole-run shift {cmp.shift:.2f}x"
    return (f"{len(cmp.differ)} of {len(cmp.deltas)} {what} differ{beyond} "
            f"({cmp.count('slower')} slower, {cmp.count('faster')} faster); geometric mean of "
            f"B/A: {geo}; run-to-run noise estimated from the data: {pct(cmp.run_to_run)} "
            f"(spread of B/A across {what})")


def shift_line(cmp: Comparison, what: str = "ops") -> str:
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


def render_comparison(cmp: Comparison, *, header: Sequence[str] = (), footer: Sequence[str] = (),
                      width: int | None = None, only_changed: bool = False) -> str:
    """The comparison as text: header lines, one row per item (and the e2e row), the summary
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


def _differences(a: Profile, b: Profile) -> list[str]:
    diff = setting_differences(a, b)
    if not diff:
        return ["Settings: the same in A and B (threads, affinity, modes, TVM, machine, "
                "model files)"]
    short = verdict.short_value
    return ["Settings that differ:"] + [f"  {label}: {short(va)} (A) vs {short(vb)} (B)"
                                        for label, va, vb in diff]


def _busy(a: Profile, b: Profile) -> list[str]:
    out = []
    for name, p in (("A", a), ("B", b)):
        line = warning(p.contention, f"{name}'s measurements")
        if line:
            out.append(line + "; differences may be the neighbour, not a change")
    return out


def _measured(a: Profile, b: Profile, paths: tuple[str, str]) -> list[str]:
    out = []
    for name, p, path in (("A", a, paths[0]), ("B", b, paths[1])):
        when = p.provenance.get("created", "time not recorded")
        out.append(f"{name}: {path} ({when}{', PARTIAL' if p.partial else ''})")
    return out


@dataclass(frozen=True)
class Compared:
    """Two profiles compared: the per-op Comparison (B divided by ``divided``, the machine
    speed probe's B/A, when both sides ran the probe and it moved), the op matching, and the
    verdict's findings (report/verdict.py)."""

    cmp: Comparison
    matched: Matched
    divided: float
    findings: tuple[verdict.Finding, ...]


def _scaled(pairs: list[Pair], factor: float) -> list[Pair]:
    return [replace(p, b_ns=[x / factor for x in p.b_ns]) for p in pairs]


def comparison_of(a: Profile, b: Profile, mode: str | tuple[str, str] = "warm", *, alpha: float = ALPHA,
                  floor: float = FLOOR, z: float = Z) -> tuple[Comparison, Matched]:
    """Match, then test (the machine's speed divided out): InputError for different models
    or a mode either side lacks."""
    c = judged(a, b, mode, alpha=alpha, floor=floor, z=z)
    return c.cmp, c.matched


def judged(a: Profile, b: Profile, mode: str | tuple[str, str] = "warm", *,
           alpha: float = ALPHA, floor: float = FLOOR, z: float = Z) -> Compared:
    """Match, divide the machine's speed out (when its probe moved: report/evidence.py
    probe_moved), test, judge; ``mode``: one mode, or (A's, B's)."""
    matched = match_ops(a, b)
    probe = evidence.probe_ratio(a, b)
    divided = probe if evidence.probe_moved(a, b) else 1.0
    e2e = Pair("e2e", a.e2e_ns, b.e2e_ns) if a.e2e_ns and b.e2e_ns else None
    cmp = compare_pairs(_scaled(pairs_for(a, b, mode, matched), divided),
                        replace(CUTOFFS, alpha=alpha, floor=floor, z=z),
                        e2e=_scaled([e2e], divided)[0] if e2e else None)
    if divided != 1.0:
        cmp = replace(cmp, notes=(*cmp.notes, f"B's times were divided by {divided:.2f}, the "
                                  "ratio of the machine speed probes (B/A), before judging "
                                  "each op: the verdicts are each op's move beyond the "
                                  "machine's"))
    found = verdict.findings(evidence.evidence(a, b, cmp, matched, divided, sides(mode)))
    return Compared(cmp, matched, divided, tuple(found))


def _subnormal_reads(p: Profile, index: int) -> str | None:
    """What of op ``index``'s operands were subnormal in profile ``p`` (None: none)."""
    report = p.data_report()
    o = report.op(index) if report else None
    reads = [a for a in o.reads() if a.counts.subnormal] if o else []
    if not reads:
        return None
    n = sum(a.counts.n for a in o.reads()) or 1
    return f"{100 * sum(a.counts.subnormal for a in reads) / n:.3g}% of its operand values"


def data_explanations(a: Profile, b: Profile, cmp: Comparison, matched: Matched) -> list[str]:
    """For every op that differs, the data first: when one side read subnormal operands and
    the other did not, the same kernel ran on different data (results/data.py)."""
    out = []
    for d, (i, j) in zip(cmp.deltas, matched.pairs):
        if d.verdict not in ("slower", "faster"):
            continue
        sa, sb = _subnormal_reads(a, i), _subnormal_reads(b, j)
        if bool(sa) == bool(sb):
            continue
        side, what, other = ("A", sa, "B") if sa else ("B", sb, "A")
        out.append(f"the data: {one_line(d.name)} is {d.ratio:.2f}x in B, and in {side} it read "
                   f"subnormal values ({what}), in {other} it did not: the same kernel on "
                   "different data (were the params set on both sides?) before any "
                   "difference of measurement")
    return out + [""] * bool(out)


def mode_label(mode: str | tuple[str, str]) -> str:
    """'mode warm', or 'modes warm (A) vs one-pass (B)'."""
    ma, mb = sides(mode)
    return f"mode {ma}" if ma == mb else f"modes {ma} (A) vs {mb} (B)"


def compare(a: Profile, b: Profile, mode: str | tuple[str, str] = "warm", alpha: float = ALPHA,
            noise_floor: float = FLOOR, *, paths: tuple[str, str] = ("A", "B"),
            width: int | None = None, only_changed: bool = False) -> str:
    """The whole comparison of two profiles as text."""
    c = judged(a, b, mode, alpha=alpha, floor=noise_floor)
    cmp, matched = c.cmp, c.matched
    header = _measured(a, b, paths) + [f"{mode_label(mode)}; ops matched by {matched.by}" + (
        f"; {len(matched.only_a)} ops only in A, {len(matched.only_b)} only in B"
        if matched.only_a or matched.only_b else ""), ""] + \
        data_explanations(a, b, cmp, matched)
    footer = _differences(a, b) + _busy(a, b) + [""] + verdict.render(c.findings)
    return render_comparison(cmp, header=header, footer=footer, width=width,
                             only_changed=only_changed)


def to_dict(a: Profile, b: Profile, mode: str | tuple[str, str] = "warm", alpha: float = ALPHA,
            noise_floor: float = FLOOR, *, paths: tuple[str, str] = ("A", "B")) -> dict:
    """The comparison as a JSON-ready document (``compare --json``; docs/compare-schema.md)."""
    c = judged(a, b, mode, alpha=alpha, floor=noise_floor)
    cmp, matched = c.cmp, c.matched
    ma, mb = sides(mode)
    return {"format": FORMAT, "a": paths[0], "b": paths[1], "mode": ma,
            "mode_a": ma, "mode_b": mb,
            "matched_by": matched.by, "only_a": [a.ops[i]["name"] for i in matched.only_a],
            "only_b": [b.ops[j]["name"] for j in matched.only_b], **cmp.to_dict(),
            "settings_differ": [{"setting": s, "a": va, "b": vb}
                                for s, va, vb in setting_differences(a, b)],
            "busy": _busy(a, b), "speed_divided": c.divided, **verdict.to_dict(c.findings),
            "provenance": {"a": a.provenance, "b": b.provenance}}
