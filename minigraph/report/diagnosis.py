"""Diagnosis + Attribution -> text report, plain-sentence explanations and a Chrome trace."""
from __future__ import annotations

import numpy as np

from ..diagnose.attribution import Attribution, Interval
from ..diagnose.model import Diagnosis, records_matrix
from ..diagnose.rungs import BY_KEY, KEYS, label as _label, short
from ..measure.contention import warning
from ..protocols.types import ProtocolResult
from .protocols import format_protocols
from .units import format_table as _format, interval, ms as _ms, us as _us

NOISE_FLOOR_NS = 2_000.0  # an op's excess below this is not worth a sentence


def _iv(x: Interval, unit=_us) -> str:
    return interval(x.median_ns, x.lo_ns, x.hi_ns, unit)


def counter_means(diag: Diagnosis, rung: str, name: str) -> np.ndarray | None:
    rows = diag.runs.get(rung)
    if not rows:
        return None
    return records_matrix(rows, name).mean(axis=0)


def ladder_table(att: Attribution) -> str:
    lines = ["Warm-up ladder (first iteration, sum over ops of per-op medians [90% interval] ms over "
             "fresh processes):"]
    prev = None
    for r in att.rungs:
        tot = att.rung_total[r]
        delta = f"  {_ms(tot.median_ns - prev):>8} vs previous" if prev is not None else ""
        lines.append(f"  {r}  {BY_KEY[r].adds:<44} n={att.processes[r]}  {_iv(tot, _ms):>26}"
                     f"{delta}")
        prev = tot.median_ns
    lines.append(f"  first-run excess ({att.rungs[0]} - {att.rungs[-1]}): "
                 f"{_iv(att.excess_total, _ms)} ms")
    for key, tot in att.component_total.items():
        lines.append(f"    {_label(key):<40} {_iv(tot, _ms):>26} ms")
    total = sum(t.median_ns for t in att.component_total.values())
    lines.append(f"    {'components sum':<40} {_ms(total):>26} ms (= the excess: the rungs "
                 "telescope)")
    return "\n".join(lines)


def op_table(diag: Diagnosis, att: Attribution, top: int) -> str:
    keys = list(att.components)
    head = ["#", "Name", "first (us)", "steady (us)", "excess (us)"] + [
        short(k) + " (us)" for k in keys] + ["dominant"]
    body = []
    for i in att.ranked()[:top]:
        body.append([str(i), diag.ops[i]["name"], _us(att.rung_ns[att.rungs[0]][i].median_ns),
                     _us(att.rung_ns[att.rungs[-1]][i].median_ns), _us(att.excess[i].median_ns)]
                    + [_us(att.components[k][i].median_ns) for k in keys]
                    + [_label(att.dominant(i) or "(unresolved)")])
    right = set(range(len(head))) - {1, len(head) - 1}  # the name and the dominant cause left
    return "\n".join([f"Ops by first-run excess (top {min(top, len(diag.ops))} of "
                      f"{len(diag.ops)}; medians over processes):", _format(head, body, right)])


COUNTERS = ("minflt", "majflt", "nvcsw", "nivcsw", "migrations", "threads_created",
            "asleep_before")


def op_counters(diag: Diagnosis, att: Attribution, top: int) -> list[tuple[int, list, list]]:
    """(op, medians over processes of COUNTERS, CPUs seen) for the ``top`` ops by excess, on
    the first rung: what the text table and the HTML report show."""
    rows = diag.runs[att.rungs[0]]
    return [(i, [float(np.median([p[i].get(n, 0) for p in rows])) for n in COUNTERS],
             sorted({p[i].get("cpu", -1) for p in rows})) for i in att.ranked()[:top]]


def counters_table(diag: Diagnosis, att: Attribution, top: int) -> str:
    """What the worker saw around each op on the first rung (medians over processes)."""
    rung = att.rungs[0]
    lines = [f"Counters around each op on rung {rung} (medians over processes; all threads):",
             f"{'#':>3}  {'faults':>8} {'major':>6} {'vol.cs':>7} {'invol.cs':>8} "
             f"{'migr.':>6} {'threads+':>8} {'asleep':>6}  CPUs"]
    for i, med, cpus in op_counters(diag, att, top):
        lines.append(f"{i:>3}  {med[0]:>8,.0f} {med[1]:>6,.0f} {med[2]:>7,.0f} {med[3]:>8,.0f} "
                     f"{med[4]:>6,.0f} {med[5]:>8,.0f} {med[6]:>6,.0f}  {cpus}")
    return "\n".join(lines)


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
    return ""


def explain_op(diag: Diagnosis, att: Attribution, i: int) -> str:
    """One plain sentence: how much slower the first run is, and the two largest causes."""
    ex = att.excess[i]
    parts = sorted(att.components, key=lambda k: -att.components[k][i].median_ns)
    causes = [f"{_label(k)} {_iv(att.components[k][i])} us{_evidence(diag, k, i)}"
              + ("" if att.components[k][i].lo_ns > 0 else " (interval includes 0: unresolved)")
              for k in parts[:2] if att.components[k][i].median_ns > 0]
    first, last = att.rung_ns[att.rungs[0]][i], att.rung_ns[att.rungs[-1]][i]
    lead = "" if att.dominant(i) else "no single cause is resolved out of the noise; largest: "
    return (f"op {i} {diag.ops[i]['name']}: first run {_us(first.median_ns)} us vs "
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
    return (f"Worker-sleep experiment: in each rung-f process, {pairs} pair(s) of a run with "
            f"the workers awake and a run after {diag.settings['gap_s']} s idle (workers asleep "
            f"in {asleep}/{len(diag.gap_asleep)} processes); the idle run took "
            f"{_iv(att.wakeup_gap_total)} us more in total; the surest share is op {i} "
            f"{diag.ops[i]['name']} ({_iv(att.wakeup_gap[i])} us), the first op to find the "
            "workers asleep if it is parallel.")


REASONS = {
    "debug_executor.profile": "pool reset, 3 warm-ups, then ONE op-by-op pass: one sample per op",
    "vm_profiler": "pool reset, 1 warm-up, then one op-by-op pass",
    "run_individual": "each op alone under time_evaluator: its data stays cache-hot across "
                      "repeats and no executor runs between ops",
    "relax_vm_e2e": "the same kernels under TVM's Relax VM: VM vs minigraph dispatch, plus noise",
    "relax_vm_instrument": "per call through a Python instrument callback, whose own cost is "
                           "included",
}


def _worst_op(r, steady) -> str:
    """The op where a per-op protocol sits furthest above the ladder's steady state."""
    if r.per_op_ns is None or steady is None:
        return ""
    diffs = [(v - s.median_ns, i) for i, (v, s) in enumerate(zip(r.per_op_ns, steady))
             if v is not None]
    if not diffs:
        return ""
    d, i = max(diffs)
    return f"; furthest above steady on op {i} ({_us(d)} us more)" if d > NOISE_FLOOR_NS else ""


def protocol_explanations(diag: Diagnosis, results, att: Attribution | None) -> str:
    """Each protocol's total against steady whole runs (benchmark_e2e), with the reason."""
    ref = next((r for r in results if r.key == "benchmark_e2e" and not r.skipped), None)
    if ref is None:
        return ""
    steady = att.rung_ns["f"] if att is not None and "f" in att.rung_ns else None
    xs = sorted(ref.samples_ns)
    spread = (xs[-1] - xs[0]) / xs[len(xs) // 2] if len(xs) > 1 else 0.0
    lines = [f"Why they disagree (against benchmark_e2e, steady whole runs: "
             f"{_ms(ref.total_ns)} ms; its repeats spread {spread:.0%} (max-min)/median, and "
             "a difference inside that spread is noise):"]
    if att is not None and "f" in att.rung_total:
        lines.append(f"  steady state by the ladder (rung f, medians over fresh processes): "
                     f"{_iv(att.rung_total['f'], _ms)} ms, a second reference less exposed to "
                     "one noisy stretch")
    removed = _excess_phrase(att)
    if removed and att.rungs[0] == "a":
        lines.append(f"  a one-pass profile with no warm-up, in a fresh process (rung a): "
                     f"{_iv(att.rung_total['a'], _ms)} ms: steady state plus {removed}")
    for r in results:
        if r.skipped or r is ref:
            continue
        delta = r.total_ns - ref.total_ns
        warmed = (f"; its warm-ups removed {removed}" if removed and r.key in
                  ("debug_executor.profile", "vm_profiler") else "")
        lines.append(f"  {r.key}: {_ms(r.total_ns)} ms ({delta / 1e6:+,.2f} ms, "
                     f"{100 * delta / ref.total_ns:+.1f}%): {REASONS.get(r.key, r.description)}"
                     f"{warmed}{_worst_op(r, steady)}")
    return "\n".join(lines)


def _excess_phrase(att: Attribution | None) -> str:
    """'the first-run excess of X ms (mostly <largest component> Y ms)', from the ladder."""
    if att is None or not att.component_total:
        return ""
    key = max(att.component_total, key=lambda k: att.component_total[k].median_ns)
    return (f"the first-run excess of {_iv(att.excess_total, _ms)} ms (largest part: "
            f"{_label(key)}, {_ms(att.component_total[key].median_ns)} ms)")


def protocols_section(diag: Diagnosis, results, att: Attribution | None, top: int = 10) -> str:
    """TVM's protocols side by side, then why each disagrees with steady whole runs."""
    return "\n\n".join(["TVM's protocols side by side, same kernels:",
                         format_protocols(results, [o["name"] for o in diag.ops], top),
                         protocol_explanations(diag, results, att)])


def render(diag: Diagnosis, att: Attribution | None, top: int = 10,
           protocols: str = "") -> str:
    s = diag.settings
    head = (f"diagnose: {s.get('processes')} fresh processes per rung, rungs "
            f"{','.join(s.get('rungs', []))}, TVM_NUM_THREADS={s.get('threads')}, "
            f"{s.get('steady_runs')} steady runs")
    parts = [head]
    if diag.partial:
        parts.append("PARTIAL: interrupted; only what was measured is shown")
    parts.append(warning(diag.contention, "the ladder"))
    if att is None:
        parts.append("not enough rungs measured for an attribution")
    else:
        parts += [ladder_table(att), op_table(diag, att, top), counters_table(diag, att, top),
                  explanations(diag, att),
                  gap_section(diag, att)]
    parts.append(protocols)
    parts += [f"failed: {f}" for f in diag.failures]
    return "\n\n".join(p for p in parts if p)


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


def render_saved(diag: Diagnosis) -> str:
    """``minigraph show diag.json``: the report of a saved diagnosis, recomputed from its raw
    records (the attribution is deterministic: a fixed bootstrap seed)."""
    att = diag.attribution()
    results = [ProtocolResult.from_dict(r) for r in diag.protocols]
    return render(diag, att, protocols=protocols_section(diag, results, att) if results else "")
