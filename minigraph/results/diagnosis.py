"""The Diagnosis: every record the ladder's fresh processes returned, and its serialisation.

Per rung, per process, per op: the op's time and the counters around it. ``to_dict`` /
``from_dict`` (``minigraph-diagnosis/1``) live here, next to the data; the attribution is always
recomputed from these raw records by diagnose/attribution.py ``attribution_of`` (deterministic:
a fixed bootstrap seed), never stored as the truth.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from ..errors import InputError
from ..fileio import json_document
from ..measure.provenance import validate as validate_provenance
from .data import DataReport
from .display import Displayable
from .protocols import ProtocolResult
from .rungs import KEYS

FORMAT = "minigraph-diagnosis/1"


def waits_matrix(rows: list[list[dict]]) -> np.ndarray:
    """[processes, ops] ns: the longest any of an op's threads waited for a CPU; in files
    saved before that was recorded, the threads' waits summed (which may leave more out)."""
    return np.array([[o.get("longest_wait_ns", o.get("waited_ns", 0)) for o in p]
                     for p in rows], dtype=float)


def records_matrix(rows: list[list[dict]], key: str) -> np.ndarray:
    """[processes, ops] float array of one field of per-op records (one row per process);
    "ns" is in every record (checked when read), a counter a record lacks counts as 0, as the
    counters table takes it."""
    return np.array([[o.get(key, 0) for o in p] for p in rows], dtype=float)


@dataclass
class Diagnosis(Displayable):
    """Everything measured: per rung, per process, per op records (ns and counters)."""

    ops: list[dict]
    settings: dict
    runs: dict[str, list[list[dict]]] = field(default_factory=dict)
    gap_runs: list[list[dict]] = field(default_factory=list)   # row i: process i of rung f
    gap_base_runs: list[list[dict]] = field(default_factory=list)  # its awake baseline
    gap_asleep: list[int] = field(default_factory=list)
    prepared: dict[str, list[dict]] = field(default_factory=dict)
    # rung -> process -> op -> ns of each op-by-op pass taken right after the process's timed
    # iteration: the process's own steady state, whose sum says how fast that process ran
    steady: dict[str, list[list[list[float]]]] = field(default_factory=dict)
    # the same shape: ns the op's threads waited for a CPU in each of those passes
    steady_waited: dict[str, list[list[list[float]]]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    protocols: list[dict] = field(default_factory=list)
    env: dict = field(default_factory=dict)
    contention: dict = field(default_factory=dict)   # Contention over the ladder, if readable
    partial: bool = False
    provenance: dict = field(default_factory=dict)   # what was measured, when, by what command
    data: dict = field(default_factory=dict)   # results/data.py DataReport, of the values used
    # rung -> per process: its machine speed probe (measure/speed.py), taken after its steady
    # passes: {"compute_ns", "memory_ns"}
    probes: dict[str, list[dict]] = field(default_factory=dict)
    # rung -> per process: the CPUs TVM pinned the pool's workers to (the main thread is not)
    pinned: dict[str, list[list[int]]] = field(default_factory=dict)

    def data_report(self) -> DataReport | None:
        return DataReport.from_dict(self.data) if self.data else None

    def times(self) -> dict[str, np.ndarray]:
        return {r: records_matrix(rows, "ns") for r, rows in self.runs.items() if rows}

    def steady_times(self) -> dict[str, np.ndarray] | None:
        """rung -> [processes, ops] ns: each process's own steady state per op (the fastest
        of its steady passes: a neighbour only ever adds time). None if a rung's processes
        lack them (files saved before)."""
        if not self.runs or any(len(self.steady.get(r, ())) != len(rows)
                                for r, rows in self.runs.items() if rows):
            return None
        return {r: np.array([[min(op) for op in p] for p in self.steady[r]])
                for r, rows in self.runs.items() if rows}

    def steady_waited_times(self) -> dict[str, np.ndarray] | None:
        """rung -> [processes, ops] ns: how long the threads waited for a CPU in the pass
        ``steady_times`` kept; None where not recorded (files saved before)."""
        steady = self.steady_times()
        if steady is None or any(len(self.steady_waited.get(r, ())) != len(v)
                                 for r, v in steady.items()):
            return None
        return {r: np.array([[w[int(np.argmin(ns))] for ns, w in zip(p, pw)]
                             for p, pw in zip(self.steady[r], self.steady_waited[r])])
                for r in steady}

    def speeds(self, steady: dict[str, np.ndarray] | None = None
               ) -> dict[str, np.ndarray] | None:
        """rung -> [processes]: each process's steady time (summed over ops) over the median
        process's, of every rung: 1.2 = that process ran 1.2x slower than the typical one."""
        steady = self.steady_times() if steady is None else steady
        if steady is None:
            return None
        sums = {r: m.sum(axis=1) for r, m in steady.items()}
        typical = float(np.median(np.concatenate(list(sums.values()))))
        return {r: v / typical for r, v in sums.items()} if typical > 0 else None

    def placed(self) -> dict[str, np.ndarray]:
        """rung -> [processes, ops] bool: the op ended with the main thread on a CPU a pool
        worker is pinned to, having waited for a CPU: it queued behind its own worker
        (diagnose/placement.py). The op that created the pool too: a main thread that creates
        its worker on the CPU the worker is then pinned to shares that CPU with it from the
        start (on ResNet-50 op 0 took 2.0 ms in such processes, 1.0 ms where the main thread
        sat on the other CPU, and counted as pool creation it decided op 0's top cause by
        which mode its median fell in). All False where the pinning was not recorded."""
        out = {}
        for r, rows in self.runs.items():
            pins = self.pinned.get(r, [])
            pins = pins if len(pins) == len(rows) else [[]] * len(rows)
            out[r] = np.array([[o.get("cpu", -1) in cpus and o.get("waited_ns", 0) > 0
                                for o in p] for p, cpus in zip(rows, pins)], dtype=bool)
        return out

    def gap_delta(self) -> np.ndarray | None:
        """[processes, ops] ns: each rung-f process's iteration after the idle gap minus its
        own awake baseline (older files without one: minus its rung-f iteration)."""
        base = self.gap_base_runs or self.runs.get("f", [])
        if not self.gap_runs or len(self.gap_runs) != len(base):
            return None
        return records_matrix(self.gap_runs, "ns") - records_matrix(base, "ns")

    def gap_waited(self) -> np.ndarray | None:
        """[processes, ops] ns: how long the threads of each gap pair waited for a CPU."""
        if self.gap_delta() is None:
            return None
        base = self.gap_base_runs or self.runs.get("f", [])
        return waits_matrix(self.gap_runs) + waits_matrix(base)

    def to_dict(self) -> dict:
        return {"format": FORMAT, **asdict(self)}

    @classmethod
    def from_dict(cls, doc: object, source: str = "diagnosis") -> "Diagnosis":
        """A saved diagnosis back; anything foreign or corrupt is an InputError."""
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise InputError(f"{source}: not a minigraph diagnosis (expected '{FORMAT}')")
        try:
            diag = cls(list(doc["ops"]), dict(doc["settings"]),
                       {str(r): [[dict(o) for o in p] for p in rows]
                        for r, rows in dict(doc["runs"]).items()},
                       [[dict(o) for o in p] for p in doc.get("gap_runs", [])],
                       [[dict(o) for o in p] for p in doc.get("gap_base_runs", [])],
                       [int(n) for n in doc.get("gap_asleep", [])],
                       {str(r): [dict(x) for x in rows]
                        for r, rows in dict(doc.get("prepared") or {}).items()},
                       _steady(doc.get("steady") or {}),
                       _steady(doc.get("steady_waited") or {}),
                       failures=[str(f) for f in doc.get("failures", [])],
                       protocols=[dict(r) for r in doc.get("protocols", [])],
                       env=dict(doc.get("env", {})),
                       contention=dict(doc.get("contention") or {}),
                       partial=bool(doc.get("partial")),
                       provenance=validate_provenance(doc.get("provenance", {})),
                       data=dict(doc.get("data") or {}),
                       probes=_probes(doc.get("probes") or {}),
                       pinned={str(r): [[int(c) for c in p] for p in rows]
                               for r, rows in dict(doc.get("pinned") or {}).items()})
            if diag.data:
                DataReport.from_dict(diag.data, "data")
            _check_context(diag)
            for rung, rows in [*diag.runs.items(), ("f", diag.gap_runs),
                               ("f", diag.gap_base_runs)]:
                if rung not in KEYS:
                    raise ValueError(f"unknown rung {rung!r}")
                _check_records(rows, len(diag.ops), rung)
            for rung, rows in diag.steady.items():
                if rung not in diag.runs or len(rows) != len(diag.runs[rung]) or \
                        any(len(p) != len(diag.ops) or not all(p) for p in rows):
                    raise ValueError(f"steady passes of rung {rung!r} do not fit its records")
            for rung, rows in diag.steady_waited.items():
                if [[len(x) for x in p] for p in rows] != \
                        [[len(x) for x in p] for p in diag.steady.get(rung, [])]:
                    raise ValueError(f"steady_waited of rung {rung!r} does not fit its steady")
            return diag
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as err:
            raise InputError(f"{source}: corrupt minigraph diagnosis "
                             f"({type(err).__name__}: {err})") from err


def _probes(doc: dict) -> dict[str, list[dict]]:
    """Saved speed probes: per rung, per process, finite positive times (ValueError else)."""
    out = {str(r): [{k: _ns(p[k]) for k in ("compute_ns", "memory_ns")} for p in rows]
           for r, rows in dict(doc).items()}
    if any(not p["compute_ns"] for rows in out.values() for p in rows):
        raise ValueError("probes: a probe took no time")
    return out


def _steady(doc: dict) -> dict[str, list[list[list[float]]]]:
    """The saved steady passes, as floats (ValueError / TypeError on anything else: a time
    that is not a finite number >= 0, or an op with no pass, would divide every time of its
    process by a speed of nan or 0)."""
    out = {str(r): [[[_ns(x) for x in op] for op in p] for p in rows]
           for r, rows in dict(doc).items()}
    if any(not op for rows in out.values() for p in rows for op in p):
        raise ValueError("steady: every op needs at least one pass")
    return out


def _ns(x: object) -> float:
    if not _real(x) or x < 0:  # type: ignore[operator]
        raise ValueError(f"steady: {x!r} is not a time in ns")
    return float(x)  # type: ignore[arg-type]


def _check_context(diag: Diagnosis) -> None:
    """The fields the reports read besides the records: op names, the settings the header
    says, and the protocols (each a result with one per-op time per op, or none)."""
    if not all(isinstance(o, dict) and isinstance(o.get("name"), str) for o in diag.ops):
        raise ValueError("ops must be objects with a string name")
    st = diag.settings
    if not (isinstance(st.get("rungs", []), list) and all(isinstance(r, str) for r in
                                                           st.get("rungs", []))):
        raise ValueError("settings.rungs must be a list of rung names")
    if not isinstance(st.get("start", ""), str):
        raise ValueError("settings.start must be a string")
    for key in ("gap_repeat", "gap_s") if diag.gap_runs else ("gap_repeat",):
        if key in st or key == "gap_s":
            if not _real(st.get(key)):
                raise ValueError(f"settings.{key} must be a number")
    for d in diag.protocols:
        try:
            r = ProtocolResult.from_dict(d)
        except InputError as err:  # reported with the file's name, as the rest
            raise ValueError(str(err)) from None
        if r.per_op_ns is not None and len(r.per_op_ns) != len(diag.ops):
            raise ValueError(f"protocol {r.key!r} has {len(r.per_op_ns)} per-op times for "
                             f"{len(diag.ops)} ops")


def _check_records(rows: list[list[dict]], nops: int, rung: str) -> None:
    """What the attribution and the reports read: one record per op, ns and asleep_before
    present, and every counter a record holds a finite real number (a string or an object
    where a count belongs would only fail deep inside a report)."""
    for p in rows:
        if len(p) != nops:
            raise ValueError(f"rung {rung!r} does not fit {nops} ops")
        for o in p:
            o["ns"], o["asleep_before"]  # KeyError: missing
            bad = next((k for k in RECORD_NUMBERS if k in o and not _real(o[k])), None)
            if bad is not None:
                raise ValueError(f"rung {rung!r}: {bad} (a {type(o[bad]).__name__}) is not "
                                 "a number")


# the numeric fields of a worker's per-op record (diagnose/worker.py timed_iteration)
RECORD_NUMBERS = ("ns", "minflt", "majflt", "nvcsw", "nivcsw", "threads_created",
                  "migrations", "waited_ns", "longest_wait_ns", "asleep_before", "cpu")


def _real(x: object) -> bool:
    return type(x) in (int, float) and abs(x) < 1e18  # NaN fails the comparison


def parse_diagnosis(data: bytes, source: str = "diagnosis") -> Diagnosis:
    """A saved diagnosis's bytes (``diagnose --json``) back into a Diagnosis."""
    return Diagnosis.from_dict(json_document(data, source), source)
