"""Fresh processes x warm-up ladder -> Diagnosis (raw records) -> Attribution of first-op inflation.

The parent never times a kernel of the ladder itself: every first iteration happens in a fresh
``python -m minigraph.firstrun`` process, because only a fresh process has no thread pool, no
faulted-in pages and cold code. Rungs are interleaved across processes (a b c .. f, a b c .. f,
...) so that drift on a noisy machine spreads over all rungs instead of biasing one. Ctrl-C or
SIGTERM kills the running child (no orphans) and keeps what was measured, marked partial.
Counterpart: none in TVM; the debug executor only ever measured rung "one-pass".
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from typing import Callable

import numpy as np

from .attribution import Attribution, attribute
from .contention import recorded
from .errors import InputError, MinigraphError
from .firstrun import RUNGS
from .poolprobe import PACKAGE_ROOT

FORMAT = "minigraph-diagnosis/1"
Progress = Callable[[str, int, int], None]   # (rung, process index, processes)


@dataclass(frozen=True)
class DiagnoseSettings:
    processes: int = 10           # fresh processes per rung
    rungs: tuple[str, ...] = RUNGS
    steady_runs: int = 3          # full runs before rung f's timed iteration
    gap_s: float = 0.5            # idle gap of the worker-sleep experiment (> the spin window)
    gap_repeat: int = 3           # (awake, gap) iteration pairs per rung-f process
    busy_s: float = 0.3           # rung w: how long every CPU is kept busy
    threads: int = 1              # TVM_NUM_THREADS in every process
    seed: int = 0
    timeout_s: float = 600.0      # per process
    force: bool = False

    def __post_init__(self) -> None:
        bad = [r for r in self.rungs if r not in RUNGS]
        in_order = [r for r in RUNGS if r in self.rungs] == list(self.rungs)
        if bad or len(self.rungs) < 2 or not in_order or len(set(self.rungs)) != len(self.rungs):
            raise InputError(f"rungs must be at least two of {', '.join(RUNGS)} in order, "
                             f"got {','.join(self.rungs)}")
        if min(self.processes, self.threads, self.gap_repeat) < 1 or min(self.steady_runs,
                                                                        self.gap_s) < 0:
            raise InputError("processes, threads and gap repeats must be >= 1; "
                             "steady runs and gap >= 0")

    def to_dict(self) -> dict:
        """JSON-ready (rungs as a list): what a Diagnosis records as its settings."""
        return {**self.__dict__, "rungs": list(self.rungs)}


def records_matrix(rows: list[list[dict]], key: str) -> np.ndarray:
    """[processes, ops] float array of one field of per-op records (one row per process)."""
    return np.array([[o[key] for o in p] for p in rows], dtype=float)


@dataclass
class Diagnosis:
    """Everything measured: per rung, per process, per op records (ns and counters)."""

    ops: list[dict]
    settings: dict
    runs: dict[str, list[list[dict]]] = field(default_factory=dict)
    gap_runs: list[list[dict]] = field(default_factory=list)   # row i: process i of rung f
    gap_base_runs: list[list[dict]] = field(default_factory=list)  # its awake baseline
    gap_asleep: list[int] = field(default_factory=list)
    prepared: dict[str, list[dict]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    protocols: list[dict] = field(default_factory=list)
    env: dict = field(default_factory=dict)
    contention: dict = field(default_factory=dict)   # Contention over the ladder, if readable
    partial: bool = False

    def times(self) -> dict[str, np.ndarray]:
        return {r: records_matrix(rows, "ns") for r, rows in self.runs.items() if rows}

    def attribution(self, seed: int = 0) -> Attribution | None:
        times = self.times()
        if len(times) < 2:
            return None
        asleep = (records_matrix(self.runs["a"], "asleep_before") > 0
                  if "a" in times and "b" in times else None)
        return attribute(times, asleep, self.gap_delta(), seed)

    def gap_delta(self) -> np.ndarray | None:
        """[processes, ops] ns: each rung-f process's iteration after the idle gap minus its
        own awake baseline (older files without one: minus its rung-f iteration)."""
        base = self.gap_base_runs or self.runs.get("f", [])
        if not self.gap_runs or len(self.gap_runs) != len(base):
            return None
        return records_matrix(self.gap_runs, "ns") - records_matrix(base, "ns")

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
                       failures=[str(f) for f in doc.get("failures", [])],
                       protocols=[dict(r) for r in doc.get("protocols", [])],
                       env=dict(doc.get("env", {})),
                       contention=dict(doc.get("contention") or {}),
                       partial=bool(doc.get("partial")))
            for rung, rows in [*diag.runs.items(), ("f", diag.gap_runs),
                               ("f", diag.gap_base_runs)]:
                if rung not in RUNGS:
                    raise ValueError(f"unknown rung {rung!r}")
                _check_records(rows, len(diag.ops), rung)
            return diag
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as err:
            raise InputError(f"{source}: corrupt minigraph diagnosis "
                             f"({type(err).__name__}: {err})") from err


def _check_records(rows: list[list[dict]], nops: int, rung: str) -> None:
    """What the attribution reads: one record per op, numeric ns and asleep_before."""
    for p in rows:
        if len(p) != nops:
            raise ValueError(f"rung {rung!r} does not fit {nops} ops")
        for o in p:
            float(o["ns"]), int(o["asleep_before"])


def worker_env(threads: int) -> dict[str, str]:
    """The child's environment: TVM_NUM_THREADS fixed, minigraph importable from this tree."""
    env = dict(os.environ, TVM_NUM_THREADS=str(threads))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
    return env


def spawn(spec: dict, env: dict[str, str], timeout_s: float) -> dict:
    """Runs one fresh worker; on timeout or Ctrl-C the child is killed and reaped first."""
    cmd = [sys.executable, "-m", "minigraph.firstrun", json.dumps(spec)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            text=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except BaseException as exc:  # TimeoutExpired, KeyboardInterrupt: never leave an orphan
        proc.kill()
        proc.communicate()
        if isinstance(exc, subprocess.TimeoutExpired):
            raise MinigraphError(f"rung {spec['rung']}: the worker took more than "
                                 f"{timeout_s:.0f} s and was killed") from None
        raise
    lines = out.strip().splitlines()
    try:
        result = json.loads(lines[-1]) if lines else {"error": "no output"}
    except ValueError:
        result = {"error": f"unreadable output: {lines[-1][:200]}"}
    if proc.returncode != 0 or "error" in result:
        why = result.get("error") or (err.strip().splitlines() or ["?"])[-1]
        raise MinigraphError(f"rung {spec['rung']}: worker exited with {proc.returncode}: {why}")
    return result


def _record(diag: Diagnosis, result: dict, nops: int) -> None:
    rung = result["rung"]
    if len(result["ops"]) != nops:
        raise MinigraphError(f"rung {rung}: worker timed {len(result['ops'])} ops, expected {nops}")
    diag.runs.setdefault(rung, []).append(result["ops"])
    diag.prepared.setdefault(rung, []).append(result.get("prepared", {}))
    if "gap_ops" in result:
        diag.gap_runs.append(result["gap_ops"])
        diag.gap_base_runs.append(result["gap_base_ops"])
        diag.gap_asleep.append(result["gap_asleep"])


def run_ladder(diag: Diagnosis, lib: str, graph: str, params: str | None,
               settings: DiagnoseSettings, *, progress: Progress = lambda r, i, n: None,
               run: Callable[[dict, dict, float], dict] = spawn) -> Diagnosis:
    """Fills ``diag.runs``; a failing process is recorded and the ladder goes on."""
    env = worker_env(settings.threads)
    with recorded(diag.contention):
        try:
            with tempfile.TemporaryDirectory(prefix="minigraph-diagnose-") as tmp:
                from .poolwake import build_wake_library
                wake = str(build_wake_library(tmp))
                for p in range(settings.processes):
                    for rung in settings.rungs:
                        progress(rung, p, settings.processes)
                        spec = {"lib": str(lib), "graph": str(graph), "params": params,
                                "rung": rung, "wake_lib": wake if rung != "a" else None,
                                "steady_runs": settings.steady_runs, "gap_s": settings.gap_s,
                                "seed": settings.seed, "force": settings.force,
                                "busy_s": settings.busy_s, "gap_repeat": settings.gap_repeat}
                        _run_one(diag, spec, p, env, settings.timeout_s, run)
        except KeyboardInterrupt:
            diag.partial = True
    if not diag.runs and not diag.partial:
        raise MinigraphError("no worker process succeeded: " + "; ".join(diag.failures[:3]))
    return diag


def _run_one(diag: Diagnosis, spec: dict, p: int, env: dict[str, str], timeout_s: float,
             run: Callable[[dict, dict, float], dict]) -> None:
    try:
        _record(diag, run(spec, env, timeout_s), len(diag.ops))
    except MinigraphError as err:
        if not diag.runs:  # nothing has worked yet: the cause is not noise
            raise
        diag.failures.append(f"process {p}: {err}")
