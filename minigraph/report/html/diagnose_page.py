"""Diagnosis + Attribution -> the diagnosis's HTML report: the warm-up ladder as a waterfall,
each top op's first-run excess split into causes, the counters, TVM's protocols side by side.

Drawn from the Attribution the text report prints (same intervals, same ranking) and from the
text report's own sentences, so ``minigraph show diag.json --html`` re-draws a saved diagnosis
exactly as ``diagnose --html`` did (the bootstrap has a fixed seed).
"""
from __future__ import annotations

from ...results.attribution import Attribution, Interval, component_keys
from ...results.diagnosis import Diagnosis
from ...results.protocols import ProtocolResult
from ...results.rungs import BY_KEY, POOL_SPLIT, label
from ..diagnosis import COUNTERS, explanations, gap_section, op_counters
from ..disagreement import protocol_explanations, resolved
from . import causes, palette, protocols
from .charts import Step, legend, waterfall
from .data import data_section_html
from .environment import busy, machine, settings
from .page import cards, document, lines, section, table, warnings
from .svg import duration, esc, unit_for

RUNG_COLOUR = "#6b7785"


def _iv(x: Interval) -> str:
    return f"{duration(x.median_ns)} [{duration(x.lo_ns)}, {duration(x.hi_ns)}]"


def ladder_steps(att: Attribution) -> list[Step]:
    """Rung totals as columns and, between neighbouring rungs, each component of the step
    (a drop by what that warm-up removed; unresolved ones hatched grey)."""
    first = att.rungs[0]
    steps = [_rung(att, first)]
    for key, (_, r2) in component_keys(att.rungs, att.omitted or ()):
        parts = [k for k in POOL_SPLIT if k in att.component_total] if key == "pool" else [key]
        for part in parts:
            iv = att.component_total[part]
            sure = resolved(iv)
            note = None if sure else "unresolved"
            tip = (f"{label(part)}: {_iv(iv)} removed by the warm-up of rung {r2}"
                   + ("" if sure else "\n90% interval includes 0: unresolved, not a cost"))
            steps.append(Step(f"{label(part)}\n{_iv(iv)}", -iv.median_ns, False,
                              palette.cause(part) if sure else palette.UNRESOLVED, tip,
                              -iv.hi_ns, -iv.lo_ns, note,
                              data={"cause": part, "resolved": str(sure).lower()}))
        steps.append(_rung(att, r2))
    return steps


def _rung(att: Attribution, r: str) -> Step:
    tot = att.rung_total[r]
    return Step(f"rung {r}\n{BY_KEY[r].adds}", tot.median_ns, True, RUNG_COLOUR,
                f"rung {r}: {BY_KEY[r].before}\neach op's median over "
                f"{att.processes[r]} fresh processes, summed over ops: {_iv(tot)}",
                tot.lo_ns, tot.hi_ns, data={"rung": r})


def ladder_section(att: Attribution) -> str:
    steps = ladder_steps(att)
    unit, per = unit_for(max(s.value for s in steps if s.total))
    used = [s.data["cause"] for s in steps if not s.total and s.data["resolved"] == "true"]
    keys = legend([("rung total (whisker: 90% interval)", RUNG_COLOUR)]
                  + [(label(k), palette.cause(k)) for k in used]
                  + [("unresolved: interval includes 0", palette.UNRESOLVED)])
    intro = ("The model's first iteration (each op's median over fresh processes, summed "
             "over ops) on each rung of the warm-up ladder, from nothing warmed (a user's "
             "first inference) to steady state; between rungs, what each warm-up removed, "
             "with its 90% bootstrap interval. The steps telescope: they add up to the "
             f"first-run excess {_iv(att.excess_total)}. "
             + ("Every process's times are divided by its own speed and paired with its own "
                "steady state, measured right after its timed iteration."
                if att.speeds is not None else "Process speed was not divided out (a "
                "diagnosis saved before steady passes were recorded)."))
    return section("ladder", "The warm-up ladder", intro, keys + waterfall(
        steps, f"first iteration, sum over ops ({unit})", per, unit, height=540,
        name="ladder"))


def counters_section(diag: Diagnosis, att: Attribution, top: int) -> str:
    rows = op_counters(diag, att, top)
    head = ["#", "op", "page faults", "major", "vol. cs", "invol. cs", "migrations",
            "threads created", "asleep before", "CPUs"]
    body = [[i, diag.ops[i]["name"], *med, ", ".join(map(str, cpus))] for i, med, cpus in rows]
    full = {c: max([r[c] for r in body] + [1]) for c in range(2, 2 + len(COUNTERS))}
    return section("counters", f"Counters around each op on rung {att.rungs[0]}",
                   "Medians over processes, all threads of the process, for the ops with the "
                   "largest first-run excess; the shaded part of a cell is its share of the "
                   "column's largest value.", table(head, body, {0}, full))


def _headline(diag: Diagnosis, att: Attribution | None) -> list[tuple[str, str]]:
    s = diag.settings
    out = [(str(s.get("processes")), "fresh processes per rung"), (str(len(diag.ops)), "ops")]
    if att is None:
        return out
    top = att.dominant()
    ex = att.excess_total
    out = [(duration(ex.median_ns), f"first-run excess [{duration(ex.lo_ns)}, "
            f"{duration(ex.hi_ns)}]"),
           (duration(att.rung_total[att.rungs[0]].median_ns), f"rung {att.rungs[0]}: first "
            "inference"),
           (duration(att.rung_total[att.rungs[-1]].median_ns), f"rung {att.rungs[-1]}: steady")]
    out.append((duration(att.component_total[top].median_ns), f"largest resolved cause: "
                f"{label(top)}") if top is not None else
               ("none", "cause resolved out of the noise (intervals include 0)"))
    share = att.explained()
    if share is not None:
        out.append((f"{min(share, 1.0):.0%}", "of the excess in resolved causes"
                    + (" (they overshoot: the unresolved rest is below 0)" if share > 1 else "")))
    return out + [(str(s.get("processes")), "fresh processes per rung")]


def render(diag: Diagnosis, att: Attribution | None, top: int = 10) -> str:
    """The diagnosis's report as one self-contained HTML document."""
    s = diag.settings
    results = [ProtocolResult.from_dict(r) for r in diag.protocols]
    sub = (f"{len(diag.ops)} ops; {s.get('processes')} fresh processes per rung, rungs "
           f"{','.join(s.get('rungs', []))}, TVM_NUM_THREADS={s.get('threads')}, "
           f"{s.get('steady_runs')} steady runs")
    notes = (["PARTIAL: interrupted; only what was measured is shown"] if diag.partial else [])
    notes += busy(diag.contention, "the ladder")
    notes += [f"failed: {f}" for f in diag.failures]
    parts = [cards(_headline(diag, att)), warnings(notes),
             data_section_html(diag.data_report())]
    if att is None:
        parts.append(section("ladder", "The warm-up ladder", "", "<p>not enough rungs "
                             "measured for an attribution</p>"))
    else:
        why = explanations(diag, att).splitlines()
        parts += [ladder_section(att),
                  section("causes", f"Why the first run is slower, per op (top {min(top, len(diag.ops))})",
                          "Each op's first-run excess split into the ladder's components, "
                          "largest excess first.", causes.chart(diag, att, top)
                          + lines(why[1:] if len(why) > 1 else why)
                          + lines([gap_section(diag, att)])),
                  counters_section(diag, att, top)]
    if results:
        why = protocol_explanations(diag, results, att).splitlines()
        parts.append(section("protocols", "TVM's protocols side by side",
                             "The same kernels measured as each of TVM's protocols does, per "
                             "op (hover for values) and in total.",
                             protocols.per_op(diag, results, att) + protocols.totals(results, att)
                             + (f"<p>{esc(why[0])}</p>" + lines(why[1:]) if why else "")
                             + protocols.skipped(results)))
    parts.append(section("environment", "Environment and settings", "",
                         '<div class="cols"><div>' + machine(diag.env) + "</div><div>"
                         + settings(s) + "</div></div>"))
    return document("minigraph diagnosis", sub, parts, "diagnosis")
