"""A fleet's devices compared: each device's total against the others', per op, and which
one is the outlier (rendered by report/fleet.py).

The outlier is the device whose total is furthest from the median of the *other* devices (a
leave-one-out median, so one slow board cannot drag the reference towards itself), and only
if that distance exceeds FLOOR. ``compare_devices`` is ``minigraph compare fleet.json``: each
device's samples per op against the pooled samples of the other devices, with the same noise
test as comparing two profiles, and each device against the first as a ``Comparison`` of two
profiles, for the verdict of why it differs.
Counterpart: none in TVM (its tracker only hands out sessions).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from ..diagnose.attribution import attribution_of
from ..measure.significance import Cutoffs, Pair, compare_pairs
from ..measure.stats import Stats
from ..results.fleet import DeviceResult, Fleet
from ..results.modes import PER_OP, ModeName
from ..results.profile import Profile
from .comparison import Comparison
from .thresholds import FLOOR

Profiles = list[tuple[DeviceResult, Profile]]


def leave_one_out(totals: dict[int, float]) -> dict[int, float]:
    """Device -> its total / the median of the others' totals (empty with fewer than 2;
    only positive totals take part: a ratio of durations)."""
    pos = {i: t for i, t in totals.items() if t > 0}
    if len(pos) < 2:
        return {}
    return {i: t / statistics.median([u for j, u in pos.items() if j != i])
            for i, t in pos.items()}


@dataclass(frozen=True)
class Standing:
    """Each device's total (``what``: e2e median, sum of per-op medians, first iteration),
    its ratio to the median of the others', and the outlier: the furthest device, None when
    every one is within FLOOR (or fewer than two have a total)."""

    what: str
    totals: dict[int, float]
    ratios: dict[int, float]
    outlier: int | None


def standing(totals: dict[int, float], what: str) -> Standing:
    ratios = leave_one_out(totals)
    if not ratios:
        return Standing(what, totals, ratios, None)
    # with two devices both are equally far from each other: the slower one is named
    i = max(ratios, key=lambda k: (round(abs(math.log(ratios[k])), 9), ratios[k]))
    return Standing(what, totals, ratios, None if abs(ratios[i] - 1) < FLOOR else i)


@dataclass(frozen=True)
class OpAcross:
    """One op's median on every device, how far apart they are (max/min) and the slowest."""

    name: str
    medians: tuple[float | None, ...]
    spread: float | None
    slowest: int | None


@dataclass(frozen=True)
class FirstRun:
    """Where a device's first run goes (a diagnosis): its excess over steady state and the
    largest component (a rung key); None without enough rungs."""

    device: DeviceResult
    excess_ns: float | None = None
    largest: str | None = None
    largest_ns: float | None = None


@dataclass(frozen=True)
class FleetView:
    """``minigraph show fleet.json``: the devices' standing, and per kind its detail: the
    per-op table of a profile fleet (``ops``; None when the profiles list different ops) in
    ``mode``, where a diagnosis fleet's first runs go; ``documents``: each device's profile or
    diagnosis (what its contention warning reads)."""

    fleet: Fleet
    standing: Standing | None
    documents: tuple[tuple[DeviceResult, object], ...] = ()
    mode: str | None = None
    ops: tuple[OpAcross, ...] | None = None
    first_runs: tuple[FirstRun, ...] = ()


def _profile_total(p: Profile, mode: str) -> float:
    return Stats.of(p.e2e_ns).median_ns if p.e2e_ns else \
        sum(p.median(mode, i) or 0.0 for i in range(len(p.ops)))


def _mode_of(profiles: Profiles, mode: str | None) -> str | None:
    have = [m for m in PER_OP if all(m in p.samples for _, p in profiles)]
    if mode in have:
        return mode
    return ModeName.WARM if ModeName.WARM in have else (have[0] if have else None)


def same_model(profiles: Profiles) -> bool:
    first = [(o["name"], o["hash"]) for o in profiles[0][1].ops]
    return all([(o["name"], o["hash"]) for o in p.ops] == first for _, p in profiles)


def _op_across(profiles: Profiles, mode: str) -> tuple[OpAcross, ...]:
    rows = []
    for i, op in enumerate(profiles[0][1].ops):
        vals = tuple(p.median(mode, i) if i < len(p.ops) else None for _, p in profiles)
        got = [(v, d.index) for v, (d, _) in zip(vals, profiles) if v]
        rows.append(OpAcross(op["name"], vals, max(got)[0] / min(got)[0] if len(got) > 1
                             else None, max(got)[1] if got else None))
    return tuple(rows)


def _profiles_view(fleet: Fleet, mode: str | None) -> FleetView:
    profiles = fleet.profiles()
    mode = _mode_of(profiles, mode) if profiles else None
    totals = {d.index: _profile_total(p, mode or ModeName.WARM) for d, p in profiles}
    what = "e2e median" if profiles and all(p.e2e_ns for _, p in profiles) else \
        f"sum of {mode} medians"
    ops = _op_across(profiles, mode) if profiles and mode is not None and \
        same_model(profiles) else None
    return FleetView(fleet, standing(totals, what), tuple(profiles), mode, ops)


def _diagnoses_view(fleet: Fleet) -> FleetView:
    diagnoses = fleet.diagnoses()
    atts = [(d, attribution_of(diag)) for d, diag in diagnoses]
    # a device's first iteration (first rung, sum of per-op medians) is what users feel;
    # the excess over steady state can be ~0 or negative, no base for a ratio
    totals = {d.index: a.rung_total[a.rungs[0]].median_ns for d, a in atts if a is not None}
    runs = []
    for d, a in atts:
        if a is None:
            runs.append(FirstRun(d))
            continue
        key = max(a.component_total, key=lambda k: a.component_total[k].median_ns)
        runs.append(FirstRun(d, a.excess_total.median_ns, key,
                             a.component_total[key].median_ns))
    return FleetView(fleet, standing(totals, "first iteration"), tuple(diagnoses),
                     first_runs=tuple(runs))


def fleet_view(fleet: Fleet, mode: str | None = None) -> FleetView:
    """The fleet's devices side by side (``mode``: a profile fleet's per-op mode)."""
    if fleet.kind == "profile":
        return _profiles_view(fleet, mode)
    if fleet.kind == "diagnose":
        return _diagnoses_view(fleet)
    return FleetView(fleet, None)


@dataclass(frozen=True)
class DevicesCompared:
    """Per op, each device against the pooled samples of the others: every device's median
    (``medians[op][device]``), the devices that differ (index, B/A) and how many ops each is
    slower on; each device after the first against the first (its verdict: ``.ops.findings``)."""

    profiles: Profiles
    mode: str
    cutoffs: Cutoffs
    medians: tuple[tuple[float | None, ...], ...]
    differ: tuple[tuple[tuple[int, float], ...], ...]
    slower: dict[int, int]
    against_first: tuple[tuple[int, Comparison], ...]


def compare_devices(fleet: Fleet, mode: str, cut: Cutoffs) -> DevicesCompared | None:
    """``minigraph compare fleet.json``; None unless it holds profiles of one model from at
    least two devices."""
    profiles = fleet.profiles()
    if len(profiles) < 2 or not same_model(profiles):
        return None
    ops = profiles[0][1].ops
    rows = [[p.samples.get(mode, [])[i] if i < len(p.samples.get(mode, [])) else []
             for _, p in profiles] for i in range(len(ops))]
    differ: list[list[tuple[int, float]]] = [[] for _ in ops]
    slower = {d.index: 0 for d, _ in profiles}
    for k, (d, _) in enumerate(profiles):  # each device against the others' pooled samples
        pairs = [Pair(op["name"], [x for j, r in enumerate(rows[i]) if j != k for x in r],
                      rows[i][k]) for i, op in enumerate(ops)]
        for i, delta in enumerate(compare_pairs(pairs, cut).deltas):
            if delta.verdict in ("slower", "faster"):
                differ[i].append((d.index, delta.ratio))
                slower[d.index] += delta.verdict == "slower"
    medians = tuple(tuple(Stats.of(r).median_ns if r else None for r in row) for row in rows)
    (_, p0), rest = profiles[0], profiles[1:]
    firsts = tuple((d.index, Comparison(p0, p, mode, cut.alpha, cut.floor)) for d, p in rest)
    return DevicesCompared(profiles, mode, cut, medians, tuple(map(tuple, differ)), slower,
                           firsts)
