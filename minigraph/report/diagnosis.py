"""Diagnosis + Attribution -> text report, plain-sentence explanations and a Chrome trace."""
from __future__ import annotations

import numpy as np

from ..analysis.contention import warning
from ..analysis.diagnosis import read
from ..results.attribution import Attribution, Interval
from ..results.diagnosis import Diagnosis, records_matrix
from ..results.rungs import BY_KEY, KEYS, label as _label, short
from .data import data_section, headline
from .ladder_quality import left_out_line, placement_line, spread_line
from .disagreement import NOISE_FLOOR_NS, protocols_section, resolved
from .summary import provenance_lines
from .units import (
    dur as _dur,
    format_table as _format,
    interval,
    ms as _ms,
    one_line,
    shared_prefix,
    us as _us,
    wrap,
)

__all__ = ["render", "render_saved", "to_trace", "explain_op", "protocols_section"]
UNRESOLVED = "n.s."  # an op-table cell whose interval includes 0


def _iv(x: Interval, unit=_us) -> str:
    return interval(x.median_ns, x.lo_ns, x.hi_ns, unit)


def counter_means(diag: Diagnosis, rung: str, name: str) -> np.ndarray | None:
    rows = diag.runs.get(rung)
    if not rows:
        return None
    return records_matrix(rows, name).mean(axis=0)


def _component(x: Interval, unit=_ms, name: str = "ms") -> str:
    """A component's cost with its interval; one whose interval includes 0 is unresolved (its
    sign is unknown) and never shown as a cost, negative or not."""
    if x.lo_ns == x.hi_ns == 0:
        return f"{unit(0)} {name} (exactly: no process saw it)"
    if resolved(x):
        return f"{_iv(x, unit)} {name}" + ("" if x.median_ns > 0 else
                                            " (slower after this warm-up)")
    return f"unresolved ([{unit(x.lo_ns)}, {unit(x.hi_ns)}] {name}: the 90% interval includes 0)"


def ladder_table(att: Attribution) -> str:
    lines = ["Warm-up ladder (first iteration: each op's median over fresh processes, summed "
             "over ops, each process paired with its own steady state [90% interval] ms):"]
    for r in att.rungs:
        lines.append(f"  {r}  {BY_KEY[r].adds:<44} n={att.processes[r]}  "
                     f"{_iv(att.rung_total[r], _ms):>26}")
    lines.append(f"  first-run excess ({att.rungs[0]} - {att.rungs[-1]}): "
                 f"{_component(att.excess_total)}")
    for key, tot in att.component_total.items():
        lines.append(f"    {_label(key):<44} {_component(tot)}")
    total = sum(t.median_ns for t in att.component_total.values())
    lines.append(f"    {'medians of all components, summed':<44} {_ms(total)} ms (= the excess's "
                 "median: each step is one rung less the next)")
    lines += [f"    not listed: {_label(key)}: {why}" for key, why in (att.omitted or {}).items()]
    return "\n".join(lines + [explained_line(att), speed_line(att)]).rstrip()


def explained_line(att: Attribution) -> str:
    """How much of the excess resolved causes explain, for the model and op by op."""
    model, per_op = att.explained(), att.explained_per_op()
    if model is None:
        return ""
    ops = f"; op by op, {_share(per_op)} of the ops' excess" if per_op is not None else ""
    return (f"  resolved causes (interval above 0) explain {_share(model)} of the model's "
            f"excess{ops}")


def _share(x: float) -> str:
    """A share of the excess; past 100%, the resolved causes overshoot and what is left
    unresolved is below 0 (a warm-up that made the next one slower)."""
    return f"{x:.0%}" if x <= 1 else f"all ({x:.0%}: the unresolved rest is below 0)"


def speed_line(att: Attribution) -> str:
    """Whether the processes' own speed was divided out, and how far apart they ran."""
    if att.speeds is None:
        return ("  process speed not divided out (a diagnosis saved before steady passes were "
                "recorded): the intervals include how fast each process happened to run")
    xs = np.concatenate([np.asarray(v) for v in att.speeds.values()])
    return (f"  every process's times divided by its own speed (its steady passes right after "
            f"its timed iteration, vs the median process's): they ran {xs.min():.2f}x to "
            f"{xs.max():.2f}x the median's time")


def op_table(diag: Diagnosis, att: Attribution, top: int, width: int | None = None) -> str:
    """The ops with the largest first-run excess, a column per component (fitted to
    ``width``: component headings and names cut, the dominant cause shortened, then dropped)."""
    keys = [k for k in att.components  # a component no process saw is said in the ladder
            if any(x.lo_ns != 0 or x.hi_ns != 0 for x in att.components[k])]
    head = ["#", "Name", "first", "steady", "excess", "resolved"] + [_heading(k) for k in keys] \
        + ["dominant"]
    ranked = att.ranked()[:top]
    prefix = shared_prefix([diag.ops[i]["name"] for i in range(len(diag.ops))]) if width else ""
    body = []
    for i in ranked:
        dominant = att.dominant(i)
        body.append([str(i), diag.ops[i]["name"][len(prefix):],
                     _dur(att.rung_ns[att.rungs[0]][i].median_ns),
                     _dur(att.rung_ns[att.rungs[-1]][i].median_ns), _dur(att.excess[i].median_ns),
                     _resolved_cell(att.explained(i))]
                    + [_dur(att.components[k][i].median_ns) if resolved(att.components[k][i])
                       or att.components[k][i].hi_ns == 0 else UNRESOLVED for k in keys]
                    + [(_heading if width else _label)(dominant) if dominant else "(unresolved)"])
    right = set(range(len(head))) - {1, len(head) - 1}  # the name and the dominant cause left
    floors = {1: 20, len(head) - 1: 12} | {c: 9 for c in range(6, 6 + len(keys))}
    return "\n".join([f"Ops by first-run excess (top {min(top, len(diag.ops))} of "
                      f"{len(diag.ops)}; medians over processes; resolved: the share of the op's "
                      f"excess in resolved components; components as in the ladder; "
                      f"{UNRESOLVED}: unresolved, the component's 90% interval includes 0"
                      + (f"; names without their shared prefix {prefix!r}" if prefix else "")
                      + "):", _format(head, body, right, width=width, shrink=floors,
                                      optional=(len(head) - 1,))])


def _resolved_cell(x: float | None) -> str:
    return "-" if x is None else f"{min(x, 9.99):.0%}" if x <= 1 else ">100%"


def _heading(key: str) -> str:
    """A component's column heading; a joint step over skipped rungs by its ends."""
    parts = key.split("+")
    return short(key) if len(parts) < 3 else f"{short(parts[0])}..{short(parts[-1])}"


COUNTERS = ("minflt", "majflt", "nvcsw", "nivcsw", "migrations", "threads_created",
            "asleep_before")


def op_counters(diag: Diagnosis, att: Attribution, top: int) -> list[tuple[int, list, list]]:
    """(op, medians over processes of COUNTERS, CPUs seen) for the ``top`` ops by excess, on
    the first rung: what the text table and the HTML report show."""
    rows = diag.runs[att.rungs[0]]
    return [(i, [float(np.median([p[i].get(n, 0) for p in rows])) for n in COUNTERS],
             sorted({int(p[i].get("cpu", -1)) for p in rows})) for i in att.ranked()[:top]]


def counters_table(diag: Diagnosis, att: Attribution, top: int,
                   width: int | None = None) -> str:
    """What the worker saw around each op on the first rung (medians over processes)."""
    rung = att.rungs[0]
    head = ["#", "faults", "major", "vol.cs", "invol.cs", "migr.", "threads+", "asleep", "CPUs"]
    body = [[str(i)] + [f"{m:,.0f}" for m in med] + [_cpu_list(cpus)]
            for i, med, cpus in op_counters(diag, att, top)]
    return "\n".join([f"Counters around each op on rung {rung} (medians over processes; all "
                      "threads):", _format(head, body, set(range(len(head) - 1)), width=width,
                                           shrink=(len(head) - 1,), min_shrink=12)])


def _cpu_list(cpus: list[int]) -> str:
    """Sorted CPU ids as ranges, '0-3,6' (the kernel's cpulist format)."""
    runs: list[list[int]] = []
    for c in cpus:
        if runs and c == runs[-1][1] + 1:
            runs[-1][1] = c
        else:
            runs.append([c, c])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _evidence(diag: Diagnosis, key: str, i: int) -> str:
    if key == "pool_creation":
        made = counter_means(diag, "a", "threads_created")
        return f" ({made[i]:.1f} threads created during it)" if made is not None and made[i] else ""
    if key == "worker_wakeup":
        asleep = counter_means(diag, "a", "asleep_before")
        return f" ({asleep[i]:.1f} workers asleep before it)" if asleep is not None else ""
    before = next((r for r in ("w", "b") if r in diag.runs), None)
    if key == "activation_faults" and before and "c" in diag.runs:
        fb, fc = counter_means(diag, before, "minflt"), counter_means(diag, "c", "minflt")
        return f" ({fb[i] - fc[i]:,.0f} page faults fewer once pre-touched)"
    if key == "cpu_warmup" and fault_priced(diag, i):
        n = counter_means(diag, "w", "minflt")[i] - counter_means(diag, "c", "minflt")[i]
        return (f" (its {n:,.0f} page faults were as many with the CPUs kept busy, and cheaper: "
                "on this machine a first touch costs more on an idle CPU; pre-touching the "
                "storage removes both)")
    return ""


PRICED_FAULTS = 1000  # page faults an op still takes on rung w for its price to matter


def fault_priced(diag: Diagnosis, i: int) -> bool:
    """Whether op ``i``'s CPU warm-up is (in part) the price of its page faults: it takes as
    many on rung w as on rung b (within 10%), at least PRICED_FAULTS more than once its
    storage is pre-touched (rung c). Keeping the CPUs busy then removed no fault, only what
    each costs (on a VM: the host's side of a first touch on an idle core)."""
    if not all(r in diag.runs for r in "bwc"):
        return False
    fb, fw, fc = (counter_means(diag, r, "minflt") for r in "bwc")
    return bool(fw[i] - fc[i] >= PRICED_FAULTS and abs(fw[i] - fb[i]) <= 0.1 * fb[i])


def explain_op(diag: Diagnosis, att: Attribution, i: int) -> str:
    """One plain sentence: how much slower the first run is, and the two largest causes."""
    ex = att.excess[i]
    parts = sorted(att.components, key=lambda k: -att.components[k][i].median_ns)
    causes = [f"{_label(k)} {_iv(att.components[k][i])} us{_evidence(diag, k, i)}"
              + ("" if att.components[k][i].lo_ns > 0 else " (interval includes 0: unresolved)")
              for k in parts[:2] if att.components[k][i].median_ns > 0]
    first, last = att.rung_ns[att.rungs[0]][i], att.rung_ns[att.rungs[-1]][i]
    lead = "" if att.dominant(i) else "no single cause is resolved out of the noise; largest: "
    return (f"op {i} {one_line(diag.ops[i]['name'])}: first run {_us(first.median_ns)} us vs "
            f"{_us(last.median_ns)} us steady (+{_iv(ex)} us); " + lead
            + ("; then ".join(causes) if causes else "no cause stands out of the noise") + ".")


def explanations(diag: Diagnosis, att: Attribution, count: int = 3) -> str:
    top = [i for i in att.ranked()[:count] if att.excess[i].median_ns > NOISE_FLOOR_NS]
    if not top:
        return "Why: no op's first run exceeds its steady state by more than " \
               f"{_us(NOISE_FLOOR_NS)} us."
    return "\n".join(["Why:"] + [f"  {explain_op(diag, att, i)}" for i in top])


def gap_section(diag: Diagnosis, att: Attribution) -> str:
    if att.wakeup_gap is None:
        return ""
    i = max(range(len(att.wakeup_gap)), key=lambda k: att.wakeup_gap[k].lo_ns)  # surest
    asleep = sum(1 for n in diag.gap_asleep if n > 0)
    pairs = diag.settings.get("gap_repeat", 1)
    total = att.wakeup_gap_total
    took = (f"the idle run took {_iv(total)} us more in total" if resolved(total) else
            f"the idle run's extra time is unresolved (90% interval [{_us(total.lo_ns)}, "
            f"{_us(total.hi_ns)}] us includes 0)")
    share = (f"the surest share is op {i} {one_line(diag.ops[i]['name'])} "
             f"({_iv(att.wakeup_gap[i])} us), "
             "the first op to find the workers asleep if it is parallel"
             if att.wakeup_gap[i].lo_ns > 0 else "no op's share is resolved out of the noise")
    return (f"Worker-sleep experiment: in {len(diag.gap_asleep)} rung-f process(es), {pairs} "
            f"pair(s) of a run with "
            f"the workers awake and a run after {diag.settings['gap_s']} s idle (workers asleep "
            f"in {asleep}/{len(diag.gap_asleep)} processes); {took}; {share}.")


def render(diag: Diagnosis, att: Attribution | None, top: int = 10,
           protocols: str = "", width: int | None = None) -> str:
    """The whole report; ``width``: fit tables to it and wrap longer lines (None: no limit)."""
    s = diag.settings
    started = {"fork": "forked from a pre-imported zygote", "spawn": "each a new interpreter"}
    ran = sorted({len(rows) for rows in diag.runs.values()}) or [0]
    count = str(ran[0]) if len(ran) == 1 else f"{ran[0]}-{ran[-1]}"
    adapted = (f" (adapted to the intervals within {s['budget_s']:g} s; {s.get('processes')} "
               "planned)" if s.get("budget_s") else "")
    head = (f"diagnose: {count} fresh processes per rung{adapted} "
            f"({started.get(s.get('start', 'spawn'), s.get('start'))}), rungs "
            f"{','.join(s.get('rungs', []))}, TVM_NUM_THREADS={s.get('threads')}, "
            f"{s.get('steady_runs')} steady runs")
    parts = [head, "\n".join(provenance_lines(diag.provenance))]
    if diag.partial:
        parts.append("PARTIAL: interrupted; only what was measured is shown")
    parts.append(warning(diag.contention, "the ladder"))
    parts.append(left_out_line(att))
    parts.append(placement_line(att, diag))
    parts.append(spread_line(diag, att))
    parts.append(_data(diag))
    if att is None:
        parts.append("not enough rungs measured for an attribution")
    else:
        parts += [ladder_table(att), op_table(diag, att, top, width),
                  counters_table(diag, att, top, width),
                  explanations(diag, att),
                  gap_section(diag, att)]
    parts.append(protocols)
    parts += [f"failed: {f}" for f in diag.failures]
    return wrap("\n\n".join(p for p in parts if p), width)


def _data(diag: Diagnosis) -> str:
    """The data first: a slowdown it causes is in every run, and no rung of the ladder
    (which warms the machine, never the values) removes or explains it."""
    report = diag.data_report()
    section = data_section(report)
    lead = headline(report)
    if not section:
        return ""
    note = ("The data check found special values in what the kernels read: whatever they cost "
            "is in every run on this data, so the first-run ladder below neither removes nor "
            "explains it") if report is not None and report.ops else ""
    return "\n".join(x for x in (note + (f" (first: {lead})" if lead and note else ""),
                                 section) if x)


def to_trace(diag: Diagnosis) -> dict:
    """Chrome trace: one process per rung, one track per fresh process, ops back to back."""
    events = []
    for pid, (rung, rows) in enumerate(sorted(diag.runs.items(), key=lambda kv: KEYS.index(kv[0]))):
        events.append({"ph": "M", "name": "process_name", "pid": pid,
                       "args": {"name": f"rung {rung}: {BY_KEY[rung].adds}"}})
        for tid, ops in enumerate(rows):
            ts = 0.0
            for op, rec in zip(diag.ops, ops):
                events.append({"ph": "X", "name": op["name"], "pid": pid, "tid": tid,
                               "ts": ts, "dur": rec["ns"] / 1e3,
                               "args": {k: v for k, v in rec.items() if k != "ns"}})
                ts += rec["ns"] / 1e3
    return {"traceEvents": events, "displayTimeUnit": "ms"}


def render_saved(diag: Diagnosis, width: int | None = None) -> str:
    """``minigraph show diag.json``: the report of a saved diagnosis, recomputed from its raw
    records (the attribution is deterministic: a fixed bootstrap seed)."""
    reading = read(diag)
    return render(diag, reading.att, width=width, protocols=protocols_section(
        diag, reading.protocols, reading.att, width=width) if reading.protocols else "")
