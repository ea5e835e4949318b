"""A Fleet (results/fleet.py) -> text: devices side by side, per op, and which one is the outlier.

``render`` is ``minigraph show fleet.json``: one row per device (who it is, its total, how far
from the others), then a per-op table with one column per device, then the outlier. ``compare``
is ``minigraph compare fleet.json``: each device's samples per op against the pooled samples
of the other devices, and why each device differs from the first. What is compared, and the
outlier, are analysis/fleet.py's; here they are drawn.
"""
from __future__ import annotations

from typing import Callable

from ..analysis.contention import warning
from ..analysis.fleet import DevicesCompared, FleetView, Standing, compare_devices, fleet_view
from ..analysis.thresholds import CUTOFFS, FLOOR
from ..fileio.printable import one_line
from ..measure.significance import Cutoffs
from ..results.fleet import DeviceResult, Fleet
from ..results.modes import ModeName
from ..results.rungs import label, short
from . import findings
from .units import format_table, ms, us


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


def outlier_line(s: Standing, names: dict[int, str]) -> str:
    if not s.ratios:
        return "outlier: needs results from at least two devices"
    if s.outlier is None:
        return f"outlier: none; every device's {s.what} is within {FLOOR:.0%} of the others'"
    i = s.outlier
    side = "slower" if s.ratios[i] > 1 else "faster"
    return (f"outlier: device {i} ({one_line(names[i])}): {s.what} {s.ratios[i]:.3g}x the "
            f"median of the others ({side})")


def _devices_table(fleet: Fleet, s: Standing, unit_head: str,
                   fmt: Callable[[float | None], str]) -> str:
    head = ["#", "address", "host", "CPU", "CPUs", unit_head, "vs others", "status"]
    body = [_who(d) + [fmt(s.totals.get(d.index)),
                       f"{s.ratios[d.index]:.3g}x" if d.index in s.ratios else "-",
                       _status(d)] for d in fleet.devices]
    return format_table(head, body, right={4, 5, 6})


def _op_table(v: FleetView) -> str:
    devices = [d for d, _ in v.documents]
    head = ["Name"] + [f"#{d.index} (us)" for d in devices] + ["max/min", "slowest"]
    body = [[op.name] + [us(x) for x in op.medians] +
            [f"{op.spread:.2f}x" if op.spread is not None else "-",
             f"#{op.slowest}" if op.slowest is not None else "-"] for op in v.ops or ()]
    return "\n".join([f"Per-op {v.mode} medians across devices:", format_table(head, body)])


def _busy(documents: tuple[tuple[DeviceResult, object], ...]) -> str:
    """Each device's own warning when other processes took its CPUs during the job (two
    servers sharing one machine disturb each other: one server per machine measures cleanly)."""
    return "\n".join(f"device #{d.index}: {w}" for d, r in documents
                     if (w := warning(r.contention, "its job")))


def _names(fleet: Fleet) -> dict[int, str]:
    return {d.index: d.name() for d in fleet.devices}


def _render_profiles(v: FleetView) -> list[str]:
    assert v.standing is not None
    parts = [_devices_table(v.fleet, v.standing, f"{v.standing.what} (us)", us),
             _busy(v.documents)]
    if v.ops is not None:
        parts.append(_op_table(v))
    elif v.documents and v.mode is not None:
        parts.append("per-op table: the devices' profiles list different ops")
    return parts + [outlier_line(v.standing, _names(v.fleet))]


def _render_diagnoses(v: FleetView) -> list[str]:
    assert v.standing is not None
    parts = [_devices_table(v.fleet, v.standing, "first iteration (ms)", ms),
             _busy(v.documents)]
    head, body = ["#", "address", "excess (ms)", "largest component", "(ms)"], []
    for r in v.first_runs:
        d = r.device
        if r.largest is None:
            body.append([str(d.index), d.name(), "-", "(not enough rungs)", "-"])
            continue
        name = short(r.largest) if "+" in r.largest else label(r.largest)  # a joint step
        body.append([str(d.index), d.name(), ms(r.excess_ns), name, ms(r.largest_ns)])
    parts += ["Where each device's first run goes:", format_table(head, body, right={2, 4})]
    return parts + [outlier_line(v.standing, _names(v.fleet))]


def _render_runs(fleet: Fleet) -> list[str]:
    lines = [f"#{d.index} {one_line(d.name())}: {line}" for d in fleet.succeeded()
             for line in d.result["outputs"]]
    outs = {tuple(d.result["outputs"]) for d in fleet.succeeded()}
    said = ("outputs: identical on every device" if len(outs) == 1 else
            f"outputs: {len(outs)} different sets of checksums across devices")
    return ["\n".join(lines), said] if lines else []


def render(fleet: Fleet, mode: str | None = None) -> str:
    """``minigraph show fleet.json``."""
    parts = [_header(fleet)]
    if fleet.kind == "profile":
        parts += _render_profiles(fleet_view(fleet, mode))
    elif fleet.kind == "diagnose":
        parts += _render_diagnoses(fleet_view(fleet))
    else:
        parts += [format_table(["#", "address", "host", "CPU", "CPUs", "status"],
                               [_who(d) + [_status(d)] for d in fleet.devices])]
        parts += _render_runs(fleet)
    return "\n\n".join(p for p in parts if p)


def compare(fleet: Fleet, mode: str = ModeName.WARM, cut: Cutoffs = CUTOFFS) -> str:
    """``minigraph compare fleet.json``: per op, each device against the others' samples
    (``cut``: the noise test's cut-offs, ``compare --alpha`` and ``--noise-floor``)."""
    if fleet.kind != "profile":
        return render(fleet)
    c = compare_devices(fleet, mode, cut)
    if c is None:
        return _header(fleet) + "\n\ncompare: needs profiles of the same model from at least " \
                                "two devices"
    head = ["Name"] + [f"#{d.index} (us)" for d, _ in c.profiles] + ["verdict vs the others"]
    body = [[op["name"]] + [us(x) for x in c.medians[i]]
            + [", ".join(f"#{k} {100 * (r - 1):+.0f}%" for k, r in c.differ[i]) or "same"]
            for i, op in enumerate(c.profiles[0][1].ops)]
    worst = max(c.slower, key=lambda k: c.slower[k])
    return "\n\n".join([
        _header(fleet), format_table(head, body),
        f"mode {mode}; each device against the pooled samples of the others; a difference is "
        f"real when it exceeds the run-to-run noise estimated across the ops, {cut.floor:.0%} "
        f"and p < {cut.alpha} (as `minigraph compare`)",
        f"device #{worst} is significantly slower than the others on {c.slower[worst]} of "
        f"{len(body)} ops" if c.slower[worst] else "no device is significantly slower on any op",
        *_verdicts(c)])


def _verdicts(c: DevicesCompared) -> list[str]:
    """Why each device differs from the first: compare's verdict (analysis/verdict.py) of the
    pair, from what both profiles recorded (CPU, threads, build, data, contention, speed)."""
    first = c.profiles[0][0].index
    out = [findings.render(pair.ops.findings)[0].replace(
        "Verdict:", f"Why #{index} differs from #{first}:", 1) for index, pair in c.against_first]
    return ["\n".join(out)] if out else []
