"""A Fleet (results/fleet.py) -> text: devices side by side, per op, and which one is the outlier.

``render`` is ``minigraph show fleet.json``: one row per device (who it is, its total, how far
from the others), then a per-op table with one column per device, then the outlier. The
outlier is the device whose total is furthest from the median of the *other* devices (a
leave-one-out median, so one slow board cannot drag the reference towards itself), and only
if that distance exceeds the noise floor. ``compare`` is ``minigraph compare fleet.json``: each
device's samples per op against the pooled samples of the other devices, with the same
Mann-Whitney test and noise floor as comparing two profiles.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import replace

from ..diagnose.attribution import attribution_of
from ..measure.contention import warning
from ..analysis.thresholds import CUTOFFS, FLOOR
from ..measure.significance import Pair, compare_pairs
from ..measure.stats import Stats
from ..results.fleet import DeviceResult, Fleet
from ..results.modes import PER_OP
from ..results.profile import Profile
from ..results.rungs import label, short
from . import verdict
from .compare import judged
from ..fileio.printable import one_line
from .units import format_table, ms, us

NOISE_FLOOR = FLOOR  # relative distance below which devices are called equal


def _header(fleet: Fleet) -> str:
    ok = len(fleet.succeeded())
    return (f"fleet: {fleet.kind} of {fleet.model} on {ok} of {fleet.requested} device(s) "
            f"under key '{fleet.key}' (tracker {fleet.tracker}; {len(fleet.registered)} "
            f"registered)" + ("; PARTIAL: interrupted" if fleet.partial else ""))


def _who(d: DeviceResult) -> list[str]:
    dev = d.device
    pid = dev.get("server_pid")
    return [str(d.index), d.name(), f"{dev.get('host', '?')}" + (f" pid {pid}" if pid else ""),
            str(dev.get("cpu") or "?")[:40], str(dev.get("logical_cores") or "?")]


def _status(d: DeviceResult) -> str:
    return f"ok ({d.elapsed_s:.1f} s)" if d.ok else f"error: {d.error}"


def leave_one_out(totals: dict[int, float]) -> dict[int, float]:
    """Device -> its total / the median of the others' totals (empty with fewer than 2;
    only positive totals take part: a ratio of durations)."""
    pos = {i: t for i, t in totals.items() if t > 0}
    if len(pos) < 2:
        return {}
    return {i: t / statistics.median([u for j, u in pos.items() if j != i])
            for i, t in pos.items()}


def outlier_line(ratios: dict[int, float], names: dict[int, str], what: str,
                 floor: float = NOISE_FLOOR) -> str:
    if not ratios:
        return "outlier: needs results from at least two devices"
    # with two devices both are equally far from each other: the slower one is named
    i = max(ratios, key=lambda k: (round(abs(math.log(ratios[k])), 9), ratios[k]))
    if abs(ratios[i] - 1) < floor:
        return f"outlier: none; every device's {what} is within {floor:.0%} of the others'"
    side = "slower" if ratios[i] > 1 else "faster"
    return (f"outlier: device {i} ({one_line(names[i])}): {what} {ratios[i]:.3g}x the median "
            f"of the others ({side})")


def _devices_table(fleet: Fleet, totals: dict[int, float], unit_head: str, fmt) -> str:
    ratios = leave_one_out(totals)
    head = ["#", "address", "host", "CPU", "CPUs", unit_head, "vs others", "status"]
    body = [_who(d) + [fmt(totals.get(d.index)),
                       f"{ratios[d.index]:.3g}x" if d.index in ratios else "-",
                       _status(d)] for d in fleet.devices]
    return format_table(head, body, right={4, 5, 6})


def _profile_total(p: Profile, mode: str) -> float:
    return Stats.of(p.e2e_ns).median_ns if p.e2e_ns else \
        sum(p.median(mode, i) or 0.0 for i in range(len(p.ops)))


def _mode_of(profiles: list[tuple[DeviceResult, Profile]], mode: str | None) -> str | None:
    have = [m for m in PER_OP if all(m in p.samples for _, p in profiles)]
    return mode if mode in have else ("warm" if "warm" in have else (have[0] if have else None))


def _op_table(profiles: list[tuple[DeviceResult, Profile]], mode: str) -> str:
    ops = profiles[0][1].ops
    head = ["Name"] + [f"#{d.index} (us)" for d, _ in profiles] + ["max/min", "slowest"]
    body = []
    for i, op in enumerate(ops):
        vals = [p.median(mode, i) if i < len(p.ops) else None for _, p in profiles]
        got = [(v, d.index) for v, (d, _) in zip(vals, profiles) if v]
        spread = f"{max(got)[0] / min(got)[0]:.2f}x" if len(got) > 1 else "-"
        body.append([op["name"]] + [us(v) for v in vals] + [spread, f"#{max(got)[1]}" if got
                                                            else "-"])
    return "\n".join([f"Per-op {mode} medians across devices:", format_table(head, body)])


def _render_profiles(fleet: Fleet, mode: str | None) -> list[str]:
    profiles = fleet.profiles()
    mode = _mode_of(profiles, mode) if profiles else None
    totals = {d.index: _profile_total(p, mode or "warm") for d, p in profiles}
    what = "e2e median" if profiles and all(p.e2e_ns for _, p in profiles) else \
        f"sum of {mode} medians"
    parts = [_devices_table(fleet, totals, f"{what} (us)", us), _busy(profiles)]
    if profiles and mode is not None and _same_model(profiles):
        parts.append(_op_table(profiles, mode))
    elif profiles and mode is not None:
        parts.append("per-op table: the devices' profiles list different ops")
    parts.append(outlier_line(leave_one_out(totals), {d.index: d.name() for d in fleet.devices},
                              what))
    return parts


def _busy(results: list) -> str:
    """Each device's own warning when other processes took its CPUs during the job (two
    servers sharing one machine disturb each other: one server per machine measures cleanly)."""
    return "\n".join(f"device #{d.index}: {w}" for d, r in results
                     if (w := warning(r.contention, "its job")))


def _same_model(profiles: list[tuple[DeviceResult, Profile]]) -> bool:
    first = [(o["name"], o["hash"]) for o in profiles[0][1].ops]
    return all([(o["name"], o["hash"]) for o in p.ops] == first for _, p in profiles)


def _render_diagnoses(fleet: Fleet) -> list[str]:
    atts = [(d, diag, attribution_of(diag)) for d, diag in fleet.diagnoses()]
    # a device's first iteration (first rung, sum of per-op medians) is what users feel;
    # the excess over steady state can be ~0 or negative, no base for a ratio
    totals = {d.index: a.rung_total[a.rungs[0]].median_ns for d, _, a in atts if a is not None}
    parts = [_devices_table(fleet, totals, "first iteration (ms)", ms),
             _busy([(d, diag) for d, diag, _ in atts])]
    head, body = ["#", "address", "excess (ms)", "largest component", "(ms)"], []
    for d, _, a in atts:
        if a is None:
            body.append([str(d.index), d.name(), "-", "(not enough rungs)", "-"])
            continue
        key = max(a.component_total, key=lambda k: a.component_total[k].median_ns)
        name = short(key) if "+" in key else label(key)  # a joint step: its short keys
        body.append([str(d.index), d.name(), ms(a.excess_total.median_ns), name,
                     ms(a.component_total[key].median_ns)])
    parts += ["Where each device's first run goes:", format_table(head, body, right={2, 4})]
    parts.append(outlier_line(leave_one_out(totals), {d.index: d.name() for d in fleet.devices},
                              "first iteration"))
    return parts


def _render_runs(fleet: Fleet) -> list[str]:
    lines = [f"#{d.index} {one_line(d.name())}: {line}" for d in fleet.succeeded()
             for line in d.result["outputs"]]
    outs = {tuple(d.result["outputs"]) for d in fleet.succeeded()}
    verdict = ("outputs: identical on every device" if len(outs) == 1 else
               f"outputs: {len(outs)} different sets of checksums across devices")
    return ["\n".join(lines), verdict] if lines else []


def render(fleet: Fleet, mode: str | None = None) -> str:
    """``minigraph show fleet.json``."""
    parts = [_header(fleet)]
    if fleet.kind == "profile":
        parts += _render_profiles(fleet, mode)
    elif fleet.kind == "diagnose":
        parts += _render_diagnoses(fleet)
    else:
        parts += [format_table(["#", "address", "host", "CPU", "CPUs", "status"],
                               [_who(d) + [_status(d)] for d in fleet.devices])]
        parts += _render_runs(fleet)
    return "\n\n".join(p for p in parts if p)


def compare(fleet: Fleet, mode: str = "warm", alpha: float = 0.01,
            noise_floor: float = NOISE_FLOOR) -> str:
    """``minigraph compare fleet.json``: per op, each device against the others' samples."""
    profiles = fleet.profiles()
    if fleet.kind != "profile":
        return render(fleet)
    if len(profiles) < 2 or not _same_model(profiles):
        return _header(fleet) + "\n\ncompare: needs profiles of the same model from at least " \
                                "two devices"
    head = ["Name"] + [f"#{d.index} (us)" for d, _ in profiles] + ["verdict vs the others"]
    ops = profiles[0][1].ops
    rows = [[p.samples.get(mode, [])[i] if i < len(p.samples.get(mode, [])) else []
             for _, p in profiles] for i in range(len(ops))]
    verdicts: list[list[str]] = [[] for _ in ops]
    slower = {d.index: 0 for d, _ in profiles}
    for k, (d, _) in enumerate(profiles):  # each device against the others' pooled samples
        pairs = [Pair(op["name"], [x for j, r in enumerate(rows[i]) if j != k for x in r],
                      rows[i][k]) for i, op in enumerate(ops)]
        cmp = compare_pairs(pairs, replace(CUTOFFS, alpha=alpha, floor=noise_floor))
        for i, delta in enumerate(cmp.deltas):
            if delta.verdict in ("slower", "faster"):
                verdicts[i].append(f"#{d.index} {100 * (delta.ratio - 1):+.0f}%")
                slower[d.index] += delta.verdict == "slower"
    body = [[op["name"]] + [us(Stats.of(r).median_ns if r else None) for r in rows[i]]
            + [", ".join(verdicts[i]) or "same"] for i, op in enumerate(ops)]
    worst = max(slower, key=lambda k: slower[k])
    return "\n\n".join([
        _header(fleet), format_table(head, body),
        f"mode {mode}; each device against the pooled samples of the others; a difference is "
        f"real when it exceeds the run-to-run noise estimated across the ops, {noise_floor:.0%} "
        f"and p < {alpha} (as `minigraph compare`)",
        f"device #{worst} is significantly slower than the others on {slower[worst]} of "
        f"{len(body)} ops" if slower[worst] else "no device is significantly slower on any op",
        *_verdicts(profiles, mode, alpha, noise_floor)])


def _verdicts(profiles: list, mode: str, alpha: float, floor: float) -> list[str]:
    """Why each device differs from the first: compare's verdict (report/verdict.py) of the
    pair, from what both profiles recorded (CPU, threads, build, data, contention, speed)."""
    (d0, p0), out = profiles[0], []
    for d, p in profiles[1:]:
        found = judged(p0, p, mode, alpha=alpha, floor=floor).findings
        first = verdict.render(found)[0].replace("Verdict:", f"Why #{d.index} differs from "
                                                 f"#{d0.index}:", 1)
        out.append(first)
    return ["\n".join(out)] if out else []
