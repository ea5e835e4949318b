"""The report table in the style of TVM's profiling ``Report.table()`` (returns text)."""
from __future__ import annotations

from collections import OrderedDict

from ..measure.contention import warning
from ..measure.stats import Stats
from ..profile.model import Profile
from ..profile.modes import BY_NAME, PER_OP
from .units import format_table, us as _us

INFLATION = 3.0  # first-run / warm ratio flagged by the summary


def _rows(profile: Profile, modes: list[str], aggregate: bool) -> list[dict]:
    rows: "OrderedDict[tuple, dict]" = OrderedDict()
    for op in profile.ops:
        shapes = ", ".join(f"{t}{s}" for t, s in op["shapes"])
        key = (op["hash"] or op["func_name"], shapes) if aggregate else (op["index"],)
        row = rows.setdefault(key, {"name": op["name"], "kind": op["kind"], "count": 0,
                                    "shapes": shapes, "hash": op["hash"],
                                    "layout": ",".join(op["layouts"].values()),
                                    "ns": {m: 0.0 for m in modes}, "first": op["index"]})
        row["count"] += 1
        for m in modes:
            v = profile.median(m, op["index"])
            row["ns"][m] = None if v is None or row["ns"][m] is None else row["ns"][m] + v
    return list(rows.values())


def _sort(rows: list[dict], order: str, modes: list[str]) -> list[dict]:
    if order != "time" or not modes:  # e.g. an e2e-only profile: nothing per op to sort by
        return rows
    key = "warm" if "warm" in modes else modes[0]
    return sorted(rows, key=lambda r: -(r["ns"][key] or 0.0))


def table(profile: Profile, order: str = "exec", aggregate: bool = False) -> str:
    modes = [m for m in PER_OP if m in profile.samples]
    rows = _sort(_rows(profile, modes, aggregate), order, modes)
    pct_mode = "warm" if "warm" in modes else (modes[0] if modes else None)
    total = sum((r["ns"][pct_mode] or 0.0) for r in rows) if pct_mode else 0.0
    head = ["Name"] + [f"{m} (us)" for m in modes] + ["Percent", "Count", "Kind",
                                                      "Argument Shapes", "Hash"]
    body = []
    for r in rows:
        pct = f"{100 * (r['ns'][pct_mode] or 0) / total:.2f}" if total else "-"
        body.append([r["name"]] + [_us(r["ns"][m]) for m in modes]
                    + [pct, str(r["count"]), r["kind"], r["shapes"], r["hash"]])
    sums = [sum((r["ns"][m] or 0.0) for r in rows) for m in modes]
    body.append(["Sum"] + [_us(s) for s in sums] + ["100.00" if total else "-",
                                                    str(len(profile.ops)), "", "", ""])
    if profile.e2e_ns:
        e2e = Stats.of(profile.e2e_ns).median_ns
        body.append(["Total (e2e run)"] + [_us(e2e) if BY_NAME[m].vs_e2e else ""
                                           for m in modes]
                    + ["", "", "", "", ""])
    return format_table(head, body)


def breakdown(profile: Profile) -> str:
    """Time share per op kind (warm medians), e.g. how much goes to layout transforms."""
    mode = "warm" if "warm" in profile.samples else next(iter(profile.samples), None)
    if mode is None:
        return ""
    shares: dict[str, float] = {}
    for op in profile.ops:
        shares[op["kind"]] = shares.get(op["kind"], 0.0) + (profile.median(mode, op["index"]) or 0)
    total = sum(shares.values()) or 1.0
    lines = [f"By op kind ({mode}):"]
    for kind, ns in sorted(shares.items(), key=lambda kv: -kv[1]):
        lines.append(f"  {kind:<18} {_us(ns):>12} us  {100 * ns / total:6.2f}%")
    return "\n".join(lines)


def configuration(profile: Profile) -> str:
    t, s = profile.threads, profile.settings
    lines = ["Configuration:",
             f"  executor: minigraph (pure Python) over {profile.env.get('tvm', {}).get('version', 'TVM')}",
             f"  threads: {t.get('tvm_num_threads', '?')} (requested "
             f"{ {k: v for k, v in t.get('requested', {}).items() if v is not None} })",
             f"  main thread affinity after pool creation: {t.get('main_affinity_after', '?')}",
             f"  modes: {', '.join(s.get('modes', []))}; one-pass warm-ups: {s.get('warmups')}; "
             f"warm: batches of {s.get('warm_repeat')} repeats until CV <= "
             f"{s.get('warm_target_cv', 0):.0%} or {s.get('warm_budget_ms', '-')} ms per op; "
             f"cold flush: {s.get('flush')}"]
    lines += [f"  mismatch: {m}" for m in t.get("mismatches", [])]
    return "\n".join(lines)


def summary(profile: Profile) -> str:
    lines = ["Summary:"]
    if profile.partial:
        lines.append("  PARTIAL: interrupted; only what was measured is shown")
    busy = warning(profile.contention, "the measurements")
    lines += [f"  {busy}"] if busy else []
    flagged = [_inflated(profile, op) for op in profile.ops]
    lines += [line for line in flagged if line]
    lines += _unstable(profile)
    lines += _overhead(profile)
    if not any(flagged) and "first-run" in profile.samples and "warm" in profile.samples:
        lines.insert(1, f"  no op's first run was >= {INFLATION:.0f}x its warm time")
    return "\n".join(lines)


def _inflated(profile: Profile, op: dict) -> str:
    """A line for an op whose first run is >= INFLATION x warm, or that created TVM's pool
    (the first parallel op: always named, since pool creation is the classic first-op cost)."""
    first, warm = (profile.median(m, op["index"]) for m in ("first-run", "warm"))
    c = profile.counters[op["index"]] if op["index"] < len(profile.counters) else {}
    created = c.get("threads_created", 0) > 0
    if not (first and warm) or (first / warm < INFLATION and not created):
        return ""
    pool = (f"; it created {c['threads_created']} thread(s): as the first parallel op it pays "
            "for creating TVM's thread pool" if created else "")
    return (f"  op {op['index']} {op['name']}: first run {_us(first)} us is {first / warm:.1f}x "
            f"its warm time {_us(warm)} us (+{_us(first - warm)} us; {c.get('minflt', '?')} "
            f"page faults, {c.get('nvcsw', '?')} voluntary context switches during it{pool})")


def _overhead(profile: Profile) -> list[str]:
    """The executor's measured cost, and what each per-op view misses of a real run."""
    over = profile.executor_overhead_ns()
    e2e = Stats.of(profile.e2e_ns).median_ns if profile.e2e_ns else 0.0
    if over is None or e2e <= 0:  # a 0 ns e2e (hand-made file) has no share to show
        return []
    lines = [f"  executor overhead: {_us(over)} us per run ({100 * over / e2e:.2f}% of the "
             f"{_us(e2e)} us end-to-end run), measured: the run loop with no-op kernels"]
    for mode, why in ((m, BY_NAME[m].vs_e2e) for m in PER_OP if BY_NAME[m].vs_e2e):
        gap = profile.sum_gap_ns(mode)
        if gap is not None:
            lines.append(f"  e2e - (sum of {mode} medians + overhead) = {_us(gap)} us "
                         f"({100 * gap / e2e:+.1f}% of e2e): {why}")
    return lines


def _unstable(profile: Profile) -> list[str]:
    """Ops whose warm samples did not reach the target CV within the time budget."""
    target = profile.settings.get("warm_target_cv")
    if not target or "warm" not in profile.samples:
        return []
    bad = [(op, s) for op, s in zip(profile.ops, profile.stats("warm")) if s.cv > target]
    if not bad:
        return []
    worst = ", ".join(f"{op['name']} ({s.cv:.1%})" for op, s in
                      sorted(bad, key=lambda b: -b[1].cv)[:3])
    return [f"  warm: {len(bad)} of {len(profile.ops)} ops stayed above the {target:.0%} CV "
            f"target within {profile.settings.get('warm_budget_ms')} ms each (noisy machine?); "
            f"worst: {worst}"]


def render(profile: Profile, order: str = "exec", aggregate: bool = False) -> str:
    from .roofline import render as roofline
    parts = [table(profile, order, aggregate), breakdown(profile), roofline(profile),
             configuration(profile), summary(profile)]
    return "\n\n".join(p for p in parts if p)
