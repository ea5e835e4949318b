"""Profile -> the profile's HTML report: per-op bars in every mode, the op-kind breakdown, the
e2e reconciliation waterfall, GFLOP/s where FLOPs are known, a timeline, the environment.

Everything is drawn from the Profile (the same medians the text table prints, through
``Profile.median`` / ``stats`` / ``executor_overhead_ns`` / ``sum_gap_ns``), so a saved profile
(``minigraph show p.json --html``) gives the very same page as the run that measured it.
"""
from __future__ import annotations

from ...analysis.agreement import agreement_of
from ...analysis.disturbance import disturbance
from ...measure.stats import Stats
from ...results.modes import BY_NAME, PER_OP, ModeName
from ...results.profile import Profile
from ..table import configuration, reference_mode, summary
from . import palette, timeline as tl
from .charts import Bar, Row, Step, hbars_figure, legend, waterfall
from .data import data_section_html
from .environment import busy, machine, provenance, settings
from .page import cards, document, lines, section, warnings
from .svg import duration, unit_for

ORDERS = {"exec": "execution", "time": "time"}


def _modes(profile: Profile) -> list[str]:
    return [m for m in PER_OP if profile.samples.get(m)]


def _spread(profile: Profile, mode: str, i: int) -> str:
    rows = profile.samples.get(mode, [])
    s = Stats.of(rows[i]) if i < len(rows) else Stats.of([])
    if not s.n:
        return f"{mode}: not measured"
    if BY_NAME[mode].one_sample or s.n == 1:
        return f"{mode}: {duration(s.median_ns)} (one sample)"
    return (f"{mode}: median {duration(s.median_ns)}, IQR {duration(s.iqr_ns)}, "
            f"min {duration(s.min_ns)}, n={s.n}")


def op_tip(profile: Profile, op: dict) -> str:
    """The op's kernel, shapes, layouts, first-run counters and every mode's n and spread."""
    i = op["index"]
    shapes = ", ".join(f"{t}{s}" for t, s in op["shapes"])
    c = profile.counters[i] if i < len(profile.counters) else {}
    counters = (f"first run: {c.get('minflt', '?')} page faults, {c.get('nvcsw', '?')} "
                f"voluntary context switches, {c.get('threads_created', 0)} threads created, "
                f"CPU {c.get('cpu', '?')}") if c else ""
    layout = ", ".join(f"{k}={v}" for k, v in op.get("layouts", {}).items())
    parts = [f"op {i} {op['name']}", f"kernel: {op['func_name']} ({op['kind']})",
             f"shapes: {shapes}", f"hash: {op['hash'] or '-'}" + (f"; {layout}" if layout else ""),
             counters, *(_spread(profile, m, i) for m in _modes(profile))]
    return "\n".join(p for p in parts if p)


def per_op_rows(profile: Profile) -> list[Row]:
    modes, ref = _modes(profile), reference_mode(_modes(profile))
    rows = []
    for op in profile.ops:
        i, tip = op["index"], op_tip(profile, op)
        warm = profile.median(ModeName.WARM, i)
        bars = []
        for m in modes:
            v = profile.median(m, i)
            over = warm if m == ModeName.FIRST_RUN and warm is not None and v and v > warm else None
            extra = f"\nfirst-run excess over warm: +{duration(v - warm)}" if over else ""
            bars.append(None if v is None else Bar(
                m, v, palette.MODE[m], f"op {i} {op['name']}\n{_spread(profile, m, i)}{extra}",
                over_from=over, data={"mode": m, "op": i}))
        key = profile.median(ref, i) if ref else None
        rows.append(Row(f"#{i} {op['name']}", tip, tuple(bars),
                        {"exec": i, "time": -(key or 0.0)}, {"op": i}))
    return rows


def per_op_section(profile: Profile, order: str) -> str:
    modes = _modes(profile)
    if not modes:
        return ""
    rows = per_op_rows(profile)
    hi = max((b.value for r in rows for b in r.bars if b), default=1.0)
    unit, per = unit_for(hi)
    keys = legend([(m + (" (1 sample)" if BY_NAME[m].one_sample else ""), palette.MODE[m])
                   for m in modes] + [("first-run excess over warm", palette.EXCESS)])
    ref = reference_mode(modes)
    intro = (f"Median time per op in each mode, side by side (one bar per op and mode). "
             f"The hatched end of a first-run bar is its excess over the warm median. "
             f"'time' orders by the {ref} median, largest first; hover a bar for the kernel, "
             "shapes, n and spread.")
    return section("per-op", "Per-op time in every mode", intro, keys + hbars_figure(
        rows, f"time per op ({unit})", per, ORDERS, order, "per-op"))


def kinds_section(profile: Profile) -> str:
    """Per op kind: the sum of per-op medians in each mode (the text breakdown's shares)."""
    modes = _modes(profile)
    ref = reference_mode(modes)
    if ref is None:
        return ""
    sums: dict[str, dict[str, float]] = {}
    for op in profile.ops:
        row = sums.setdefault(op["kind"], {m: 0.0 for m in modes})
        for m in modes:
            row[m] += profile.median(m, op["index"]) or 0.0
    total = {m: sum(r[m] for r in sums.values()) or 1.0 for m in modes}
    rows = [Row(kind, f"{kind}: {sum(1 for o in profile.ops if o['kind'] == kind)} ops",
                tuple(Bar(m, ns[m], palette.MODE[m], f"{kind}, {m}: {duration(ns[m])} = "
                          f"{100 * ns[m] / total[m]:.1f}% of the {m} sum", data={"mode": m})
                      for m in modes), {"time": -ns[ref]}) for kind, ns in sums.items()]
    unit, per = unit_for(max(v for r in sums.values() for v in r.values()) or 1.0)
    return section("kinds", "By op kind", f"Sum of the per-op medians of each kind, per mode "
                   f"(ordered by {ref}).", legend([(m, palette.MODE[m]) for m in modes])
                   + hbars_figure(rows, f"sum of per-op medians ({unit})", per,
                                  {"time": ref}, "time", "kinds"))


def reconciliation_steps(profile: Profile) -> list[Step]:
    """e2e from the per-op views: sum(warm) -> + measured overhead -> + what a real run's cache
    state adds -> sum(in-run) (which holds the overhead: it is timed around each call) -> less
    in-run's own clock stamps -> + the residual = e2e; each number as the text summary says."""
    over = profile.executor_overhead_ns()
    sums = {m: sum(s.median_ns for s in profile.stats(m)) for m in (ModeName.WARM, ModeName.IN_RUN)
            if profile.samples.get(m)}
    if not profile.e2e_ns or over is None or not sums:
        return []
    steps = []
    if ModeName.WARM in sums:
        steps += [_sum_step(profile, ModeName.WARM, sums[ModeName.WARM]),
                  Step("+ executor overhead (measured: no-op kernels)", over, False, "#7f7f7f",
                       f"the run loop with no-op kernels: {duration(over)} per run")]
    ag = agreement_of(profile)
    if ModeName.IN_RUN in sums and ag is not None:
        if ModeName.WARM in sums:
            cache = sums[ModeName.IN_RUN] - sums[ModeName.WARM] - over
            steps.append(Step("+ the cache state of a real run", cache, False, "#b9c2cc",
                              f"sum of in-run - (sum of warm + overhead) = {duration(cache)}"))
        steps += [_sum_step(profile, ModeName.IN_RUN, sums[ModeName.IN_RUN]),
                  Step("- in-run's own clock stamps", -ag.stamp_ns, False, "#d0d0d0",
                       f"what the stamps between ops add to a pass: {duration(ag.stamp_ns)}")]
        gap, why = ag.gap_ns, {"agree": "within their spread",
                               "disturbed": "the machine changed speed",
                               "differ": "beyond their spread"}[ag.verdict]
    else:
        gap, why = profile.sum_gap_ns(ModeName.WARM), BY_NAME[ModeName.WARM].vs_e2e
        e2e_ns = Stats.of(profile.e2e_ns).median_ns
        disturbed = disturbance(profile)
        if disturbed is not None and gap is not None and e2e_ns > 0 and \
                disturbed.could_make(gap / e2e_ns):
            why = "cannot tell the cause: the machine was disturbed"
    e2e = Stats.of(profile.e2e_ns)
    steps.append(Step(f"+ residual: {why}", gap or 0.0, False, "#c7c7c7",
                      f"e2e - the sum before it = {duration(gap or 0.0)}"))
    steps.append(Step(f"e2e run (median of {e2e.n})", e2e.median_ns, True,
                      palette.MODE[ModeName.E2E],
                      f"the executor's whole run(): median {duration(e2e.median_ns)}, min "
                      f"{duration(e2e.min_ns)}, max {duration(max(profile.e2e_ns))}; whisker: "
                      "min-max", lo=e2e.min_ns, hi=max(profile.e2e_ns),
                      data={"mode": ModeName.E2E}))
    return steps


def _sum_step(profile: Profile, mode: str, total: float) -> Step:
    return Step(f"sum of {mode} medians", total, True, palette.MODE[mode],
                f"sum over {len(profile.ops)} ops of the {mode} medians: {duration(total)}",
                data={"mode": mode})


def reconciliation_section(profile: Profile) -> str:
    steps = reconciliation_steps(profile)
    if not steps:
        return ""
    unit, per = unit_for(max(s.value for s in steps if s.total))
    intro = ("How the per-op views add up to a whole run: the sum of warm medians (each op "
             "timed alone, its data hot), the executor's own overhead (measured), the sum of "
             "in-run medians (timed inside real runs, interleaved with the e2e runs), and what "
             "remains, against the e2e run.")
    return section("reconcile", "e2e vs the sum of ops", intro,
                   waterfall(steps, f"time per run ({unit})", per, unit, height=380,
                             name="reconcile"))


def gflops_section(profile: Profile, order: str) -> str:
    """Achieved GFLOP/s per op (FLOPs / median ns), shown only when ops carry ``flops``."""
    modes = [m for m in (ModeName.WARM, ModeName.IN_RUN) if profile.samples.get(m)]
    if not modes or not any(op.get("flops") for op in profile.ops):
        return ""
    rows = []
    for op in profile.ops:
        i, flops = op["index"], op.get("flops") or 0
        bars = tuple(None if not flops or not profile.median(m, i) else Bar(
            m, flops / profile.median(m, i), palette.MODE[m],
            f"op {i} {op['name']}\n{m}: {flops / profile.median(m, i):,.2f} GFLOP/s "
            f"({flops:,.0f} FLOPs in {duration(profile.median(m, i))})",
            data={"mode": m, "op": i}) for m in modes)
        rows.append(Row(f"#{i} {op['name']}", op_tip(profile, op), bars,
                        {"exec": i, "time": -(bars[0].value if bars[0] else 0.0)}))
    return section("gflops", "Achieved GFLOP/s per op", "FLOPs of the op's kernel (from "
                   "build.json) divided by its median time; ops without FLOPs have no bar.",
                   legend([(m, palette.MODE[m]) for m in modes]) + hbars_figure(
                       rows, "GFLOP/s", 1.0, {"exec": "execution", "time": "GFLOP/s"}, order,
                       "gflops", both_scales=False))


def render(profile: Profile, order: str = "exec",
           timeline: tl.Timeline | None = None) -> str:
    """The profile's report as one self-contained HTML document."""
    modes = _modes(profile)
    e2e = Stats.of(profile.e2e_ns) if profile.e2e_ns else None
    first = sum(profile.median(ModeName.FIRST_RUN, op["index"]) or 0 for op in profile.ops)
    heads = [(duration(e2e.median_ns), f"e2e run, median of {e2e.n}") if e2e else None,
             (duration(sum(s.median_ns for s in profile.stats(ModeName.IN_RUN))),
              "sum of in-run medians")
             if ModeName.IN_RUN in modes else None,
             (duration(first), "first run, sum over ops") if ModeName.FIRST_RUN in modes else None,
             (duration(profile.executor_overhead_ns()), "executor overhead per run")
             if profile.dispatch_ns else None,
             (str(len(profile.ops)), "ops")]
    notes = (["PARTIAL: interrupted; only what was measured is shown"] if profile.partial
             else []) + busy(profile.contention, "the measurements")
    pass_ = timeline or tl.recorded(profile) or tl.laid_end_to_end(profile)
    sub = f"{len(profile.ops)} ops; modes {', '.join(profile.settings.get('modes', modes))}"
    record = getattr(profile, "provenance", {}) or {}
    sub += "".join(f"; {k} {record[k]}" for k in ("lib", "timestamp") if record.get(k))
    return document("minigraph profile", sub, [
        cards([h for h in heads if h]), warnings(notes),
        per_op_section(profile, order),
        section("summary", "Summary", "", lines(summary(profile).splitlines()[1:])),
        data_section_html(profile.data_report()),
        kinds_section(profile), reconciliation_section(profile), gflops_section(profile, order),
        section("timeline", "Timeline of one pass", "", tl.chart(pass_, profile.ops))
        if pass_ else "",
        section("environment", "Environment and settings", "", '<div class="cols"><div>'
                + machine(profile.env) + lines(configuration(profile).splitlines()[1:])
                + "</div><div>" + settings(profile.settings) + provenance(record)
                + "</div></div>")], "profile")
