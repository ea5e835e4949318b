"""The text around a profile's table: how sure each mode is, the e2e row, the breakdown by op
kind, the configuration and provenance, and the summary of what stands out (returns text)."""
from __future__ import annotations

from ..analysis.agreement import agreement_of
from ..analysis.contention import warning
from ..analysis.disturbance import Disturbance, cause, disturbance
from ..fileio.printable import one_line
from ..measure.stats import Stats
from ..results.modes import BY_NAME, PER_OP, ModeName
from ..results.profile import Profile
from ..results.rungs import COMPONENTS
from ..threadpool.config import REPINNED
from .data import headline
from .units import dur, format_table, pct, precision_text

INFLATION = 3.0  # first-run / warm ratio flagged by the summary ...
INFLATION_FLOOR_NS = 2_000.0  # ... when the excess is also above this (Python's own call cost
# is ~1 us of every first-run sample: below it a ratio says nothing)
FIRST_AND_WARM = (ModeName.FIRST_RUN, ModeName.WARM)  # the inflation ratio's two modes
_SINGLE = {ModeName.FIRST_RUN: "the process's first iteration",
           ModeName.ONE_PASS: "one op-by-op pass after the warm-up runs"}


def spread(profile: Profile) -> str:
    """Per mode: samples per op, how well the medians are known (the half-width of each
    median's 90% interval, typical and worst op, and for the sum of the medians) and the
    samples' spread (IQR as a share of the median), so that every column says how sure it is."""
    modes = [m for m in PER_OP if m in profile.samples]
    if not modes:
        return ""
    lines = ["How sure (per mode: samples per op; each median known to +- (90% interval), "
             "typical and worst op, and their sum; IQR as a share of the median):"]
    for m in modes:
        stats = [(op, s) for op, s in zip(profile.ops, profile.stats(m)) if s.n]
        ns = sorted(s.n for _, s in stats)
        n = "-" if not ns else str(ns[0]) if ns[0] == ns[-1] else f"{ns[0]}-{ns[-1]}"
        if BY_NAME[m].one_sample or not ns or ns[-1] < 2:
            lines.append(f"  {m + '*':<10} n={n:<7} one sample per op, no spread: "
                         f"{_SINGLE.get(m, m)}")
            continue
        prec = sorted((profile.precision(m, op["index"]), op["name"]) for op, _ in stats)
        rel = sorted(s.rel_iqr for _, s in stats if s.rel_iqr == s.rel_iqr)
        worst = f", worst {precision_text(prec[-1][0])} ({one_line(prec[-1][1])})" \
            if len(prec) > 1 else ""
        lines.append(f"  {m:<10} n={n:<7} median {precision_text(prec[len(prec) // 2][0])}"
                     f"{worst}; sum {precision_text(profile.sum_precision(m))}; IQR "
                     f"{pct(rel[len(rel) // 2]) if rel else '-'}")
    return "\n".join(lines)


def e2e_row(profile: Profile, width: int | None = None) -> str:
    """The whole run as ``benchmark()`` and ONNX Runtime report it: n, median, mean, p90, std."""
    if not profile.e2e_ns:
        return ""
    s = Stats.of(profile.e2e_ns)
    head = ["n", "median", "mean", "p90", "std", "min", "max"]
    body = [[str(s.n)] + [dur(x) for x in (s.median_ns, s.mean_ns, s.p90_ns, s.std_ns,
                                             s.min_ns, s.max_ns)]]
    text = format_table(head, body, set(range(len(head))), width=width, optional=(6, 5))
    return "End to end (the executor's whole run(), warm; as benchmark() reports it):\n" + \
        "\n".join("  " + line for line in text.splitlines())


def breakdown(profile: Profile) -> str:
    """Time share per op kind (warm medians), e.g. how much goes to layout transforms."""
    mode = ModeName.WARM if ModeName.WARM in profile.samples else next(iter(profile.samples), None)
    if mode is None:
        return ""
    shares: dict[str, float] = {}
    for op in profile.ops:
        shares[op["kind"]] = shares.get(op["kind"], 0.0) + (profile.median(mode, op["index"]) or 0)
    total = sum(shares.values()) or 1.0
    lines = [f"By op kind (share of the sum of {mode} medians):"]
    for kind, ns in sorted(shares.items(), key=lambda kv: -kv[1]):
        lines.append(f"  {kind:<18} {dur(ns):>10}  {100 * ns / total:6.2f}%")
    return "\n".join(lines)


def configuration(profile: Profile) -> str:
    t, s = profile.threads, profile.settings
    tvm = profile.env.get("tvm", {}).get("version", "TVM")
    lines = ["Configuration:",
             f"  executor: minigraph (pure Python) over TVM {tvm}",
             f"  threads: {t.get('tvm_num_threads', '?')} (requested: "
             + (", ".join(f"{k} {v}" for k, v in t.get("requested", {}).items()
                          if v is not None) or "nothing") + ")",
             f"  main thread affinity after pool creation: {t.get('main_affinity_after', '?')}",
             "  modes: " + "; ".join(_mode_settings(s))]
    lines += [f"  mismatch: {m}" for m in t.get("mismatches", [])]
    lines += _timer(profile.timer)
    return "\n".join(lines + provenance_lines(profile.provenance))


def _timer(timer: dict) -> list[str]:
    """Says so when warm/cold samples come from minigraph's own loop, with that loop's cost."""
    if timer.get("method") != "python loop":
        return []
    return [f"  warm/cold timer: minigraph's own loop, one clock pair per call "
            f"({timer.get('reason', 'no TVM module')}); the loop itself costs "
            f"{dur(timer.get('loop_ns', 0))} per call (a no-op kernel called the same way), "
            "included in every warm and cold sample"]


def _mode_settings(s: dict) -> list[str]:
    """The modes measured, then the settings of each of them."""
    modes = s.get("modes", [])
    out = [", ".join(modes)]
    if ModeName.ONE_PASS in modes:
        out.append(f"one-pass warm-ups: {s.get('warmups')}")
    if ModeName.WARM in modes:
        out.append(f"warm: rounds of {s.get('warm_repeat')} repeats per op until "
                   + (f"every median is known to +-{s['warm_precision']:.0%}"
                      if "warm_precision" in s else
                      f"CV <= {s.get('warm_target_cv', 0):.0%}")
                   + f" or {s.get('warm_budget_ms', '-')} ms per op")
    if ModeName.IN_RUN in modes:
        out.append(f"in-run passes: {s.get('inrun_passes', '-')}"
                   + (" (interleaved with e2e's runs)" if ModeName.E2E in modes else ""))
    if ModeName.COLD in modes:
        out.append(f"cold flush: {s.get('flush')}")
    return out


def provenance_lines(prov: dict) -> list[str]:
    """What was measured, when and by what (files saved before provenance was recorded have
    none: nothing is shown)."""
    if not prov:
        return []
    lines = [f"  measured: {prov.get('created', '?')} on {prov.get('hostname', '?')} by "
             f"minigraph {prov.get('minigraph_version', '?')}: "
             f"{' '.join(prov.get('command', []))}"]
    for role, rec in prov.get("files", {}).items():
        if isinstance(rec, dict):
            nbytes = rec.get("nbytes")
            size = f"{nbytes:,} bytes" if isinstance(nbytes, int) else "size unknown"
            lines.append(f"  {role}: {rec.get('path')} (sha256 {str(rec.get('sha256'))[:16]}, "
                         f"{size})")
    return lines


def summary(profile: Profile, brief: bool = False) -> str:
    """What stands out, the largest costs first; ``brief``: for the short default report
    (sections it leaves out are named with the option that shows them)."""
    lines = ["Summary:"]
    if profile.partial:
        lines.append("  PARTIAL: interrupted; only what was measured is shown")
    lines += _not_as_asked(profile)
    busy = warning(profile.contention, "the measurements")
    lines += [f"  {busy}"] if busy else []
    speed = profile.speed_states()
    lines += [f"  machine speed: {speed.describe()}"] if speed else []
    data = headline(profile.data_report())
    where = "the Data section: --wide" if brief else "see Data above"
    lines += [f"  the data: {data} ({where})"] if data else []
    lines += _serial(profile)
    flagged = _inflated_lines(profile)
    lines += flagged
    disturbed = disturbance(profile)
    if brief and disturbed is not None:  # one screen: the gaps' figures say nothing here
        lines += _overhead(profile, disturbed)[:1]
        lines += ["  e2e against the per-op sums: the machine was disturbed (above), so what "
                  "a gap is cannot be told (the figures: --wide)"] if profile.e2e_ns else []
    else:
        lines += _overhead(profile, disturbed)
        lines += _agreement(profile)
    if not any(flagged) and {ModeName.FIRST_RUN, ModeName.WARM} <= set(profile.samples):
        lines.insert(1, f"  no op's first run was >= {INFLATION:.0f}x its warm time and "
                        f"{dur(INFLATION_FLOOR_NS)} longer")
    return "\n".join(lines)


def _not_as_asked(profile: Profile) -> list[str]:
    """The thread settings the machine or TVM did not honour (``--threads 1000`` on two
    CPUs: TVM used 2), said where the short default report shows them. TVM's own re-pinning
    of the main thread, which no option asked about, stays in the configuration."""
    return [f"  NOT AS ASKED: {one_line(m)}" for m in profile.threads.get("mismatches", [])
            if REPINNED not in str(m)]


SHOWN = 3  # inflated ops said in full; the rest in one line, the largest excess first


def _inflated_lines(profile: Profile) -> list[str]:
    """The ops whose first run stands out: the one that created the pool first, then by
    excess; past SHOWN, one grouped line."""
    found = []
    for op in profile.ops:
        line = _inflated(profile, op)
        if line:
            first, warm = (profile.median(m, op["index"]) for m in FIRST_AND_WARM)
            found.append((not _created(profile, op), -(first - warm), op, line))
    found.sort(key=lambda f: f[:2])
    lines = [f[3] for f in found[:SHOWN]]
    rest = found[SHOWN:]
    if rest:
        named = ", ".join(f"op {f[2]['index']} (+{dur(-f[1])})" for f in rest[:6])
        lines.append(f"  {len(rest)} more ops' first runs were >= {INFLATION:.0f}x their warm "
                     f"time (+{dur(-sum(f[1] for f in rest))} in all): {named}"
                     + (", ..." if len(rest) > 6 else ""))
    return lines


def _inflated(profile: Profile, op: dict) -> str:
    """A line for an op whose first run is >= INFLATION x warm and INFLATION_FLOOR_NS longer,
    or that created TVM's pool and was slower for it (the first parallel op: pool creation is
    the classic first-op cost). An op whose first run was not slower is never flagged, but
    the creator is named: that it created the pool is counted, whatever its timing."""
    first, warm = (profile.median(m, op["index"]) for m in FIRST_AND_WARM)
    c = profile.counters[op["index"]] if op["index"] < len(profile.counters) else {}
    created = _created(profile, op)
    if not (first and warm) or (not created and first <= warm):
        return ""
    if not created and (first / warm < INFLATION or first - warm < INFLATION_FLOOR_NS):
        return ""
    # the creator is named even when its one first-run sample read below its warm median
    # (a neighbour slowed the warm samples): which op created the pool is counted, not timed
    ratio = (f"is {first / warm:.1f}x its warm time {dur(warm)} (+{dur(first - warm)}; "
             if first > warm else f"was not above its warm time {dur(warm)} (")
    measured = (f"  op {op['index']} {op['name']}: first run {dur(first)} {ratio}"
                f"{c.get('minflt', '?')} page faults, {c.get('nvcsw', '?')} voluntary context "
                "switches during it" + (f"; it created {c['threads_created']} thread(s))"
                                        if created else ")"))
    if not created:
        return measured
    # a counted fact, not a timing's reading: said on a busy machine too; its cost is not
    return (f"{measured}: {COMPONENTS['pool_creation'].label} falls in it, the first parallel op"
            " (how much of the excess it is: minigraph diagnose)")


def _serial(profile: Profile) -> list[str]:
    """Says so when no kernel can use the threads asked for: the library never launches work
    on TVM's pool (read from the file: artifacts/library.py), as for kernels compiled
    without a schedule."""
    threads = profile.threads.get("tvm_num_threads")
    lib = profile.env.get("library", {})
    if lib.get("parallel_kernels") is not False or not isinstance(threads, int) or threads < 2:
        return []
    return [f"  no kernel is parallel: the library never launches work on TVM's thread pool, "
            f"so the {threads} threads run as one; kernels compiled without a schedule (a "
            "plain tvm.compile) are serial, unvectorised loops: minigraph build schedules them "
            "(docs/build.md)"]


def _created(profile: Profile, op: dict) -> bool:
    """Whether op's first run created threads (TVM's pool)."""
    c = profile.counters[op["index"]] if op["index"] < len(profile.counters) else {}
    return c.get("threads_created", 0) > 0


def _overhead(profile: Profile, disturbed: Disturbance | None) -> list[str]:
    """The executor's measured cost, and what each per-op view misses of a real run."""
    over = profile.executor_overhead_ns()
    e2e = Stats.of(profile.e2e_ns).median_ns if profile.e2e_ns else 0.0
    if over is None or e2e <= 0:  # a 0 ns e2e (hand-made file) has no share to show
        return []
    lines = [f"  executor overhead: {dur(over)} per run ({100 * over / e2e:.2f}% of the "
             f"{dur(e2e)} end-to-end run), measured: the run loop with no-op kernels"]
    for mode, why in ((m, BY_NAME[m].vs_e2e) for m in PER_OP if BY_NAME[m].vs_e2e):
        gap = profile.sum_gap_ns(mode)
        if gap is not None:
            lines.append(cause(f"  e2e - (sum of {mode} medians + overhead) = {dur(gap)} "
                               f"({100 * gap / e2e:+.1f}% of e2e)", why, disturbed, gap / e2e))
    return lines


def _agreement(profile: Profile) -> list[str]:
    """In-run against e2e, taken in the same rounds and judged by their own spread; a gap
    beyond it comes with what says the machine changed speed, or says nothing does."""
    ag = agreement_of(profile)
    if ag is None:
        gap = profile.sum_gap_ns(ModeName.IN_RUN)
        return [] if gap is None else [
            f"  e2e - (sum of in-run medians + overhead) = {dur(gap)}: in-run and e2e were "
            "measured at different times (a profile saved before they were interleaved), so "
            "a gap may be the machine changing speed in between"]
    head = (f"  in-run vs e2e ({ag.rounds} interleaved rounds): e2e {dur(ag.e2e_ns)}, sum of "
            f"in-run medians {dur(ag.inrun_ns)} (less {dur(ag.stamp_ns)} of its own clock "
            f"stamps per pass): gap {ag.gap:+.1%}")
    verdict, within = ag.verdict, abs(ag.gap) <= ag.bound
    if verdict == "agree":
        return [head + f", within the {ag.bound:.1%} their own spread allows: they agree"]
    if verdict == "disturbed":
        return [head + (f", within the {ag.bound:.1%} their spread allows, but that spread is "
                        "the machine's: it changed speed during the measurement ("
                        if within else f", beyond the {ag.bound:.1%} their spread allows: the "
                        "machine changed speed during the measurement (")
                + "; ".join(ag.evidence()) + "); for a clean number rerun on a quiet "
                "machine, or take more rounds (--inrun-passes)"]
    return [head + f", beyond the {ag.bound:.1%} their spread allows, and nothing shows the "
            "machine changing speed: a real difference between an op-by-op pass and a run "
            "(the stamps between ops, or what one op leaves the next)"]
