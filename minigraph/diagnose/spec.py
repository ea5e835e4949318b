"""What a diagnosis runs: its settings, and the typed spec each fresh worker process receives.

``DiagnoseSettings`` holds every default once; ``WorkerSpec`` is made from it per process and
rung and crosses the process boundary as JSON (``to_json`` / ``from_json``, validated), so the
parent and the worker cannot disagree about a field or its default.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field

from ..errors import InputError
from ..fileio import dataclass_from_json
from ..results.rungs import KEYS
from ..runtime.doors import ModelFiles
from ..values.policy import FILLS


def _opt(p: object) -> str | None:
    return None if p is None else str(p)


START_METHODS = ("fork", "spawn")


# The least and most each count and budget of a diagnosis may be (the CLI's options are bounded
# by these; a remote job's settings too): a finite worst case. --gap-ms is gap_s in ms.
LIMITS: dict[str, tuple[float, float]] = {
    "processes": (1, 100), "budget_s": (0, 3600), "steady_runs": (0, 1000),
    "reference_passes": (1, 100), "gap_s": (0, 60), "gap_repeat": (1, 100),
    "gap_processes": (0, 100), "busy_s": (0, 10), "timeout_s": (1, 86_400)}


@dataclass(frozen=True)
class DiagnoseSettings:
    # fresh processes per rung: 6 keep a ResNet-50 diagnosis (7 rungs, protocols included)
    # near 45 s on 2 vCPUs (benchmarks/diagnose_resolved.py); each costs ~0.7 s there
    processes: int = 6
    # > 0: the ladder adapts its rounds to the intervals (ladder.py ``Stop``): it stops once
    # two rounds in a row (from the 3rd) are resolved, tight and name the same causes, and goes
    # on past ``processes`` (up to 8x) on the rungs with the widest intervals while the rounds
    # fit in this many seconds; 0: exactly ``processes`` rounds (the CLI's default is
    # cli/diagnose.py FULL's)
    budget_s: float = 0.0
    rungs: tuple[str, ...] = KEYS
    steady_runs: int = 3          # full runs before rung f's timed iteration
    # op-by-op passes right after every timed iteration: each process's own steady state, so
    # the attribution divides out how fast that process happened to run (a shared VM's speed
    # moves by 1.5x between processes; the effects measured are smaller than that). Two, and
    # the faster kept: a neighbour that took a worker's CPU during one pass read as a 20%
    # slower process (a 20 us kernel stalled 3.7 ms at the barrier); each costs a model run
    reference_passes: int = 2
    gap_s: float = 0.5            # idle gap of the worker-sleep experiment (> the spin window)
    gap_repeat: int = 2           # (awake, gap) iteration pairs per rung-f process
    # rung-f processes that run the worker-sleep experiment: its differences are taken within
    # each process (paired), so it needs fewer processes than the ladder's across-process
    # comparison; 2 processes x 2 pairs x 0.5 s: 2 s of sleep in all at the default
    gap_processes: int = 2
    busy_s: float = 0.1           # rung w: how long every CPU is kept busy (clocks ramp in ms)
    # TVM_NUM_THREADS in every process; None: the run context's default, resolved where the
    # diagnosis starts (values/session.py, threadpool/request.py ``ThreadRequest.resolved``)
    threads: int | None = None
    seed: int = 0
    timeout_s: float = 600.0      # per process
    force: bool = False
    start: str = "fork"           # fresh processes: "fork" from a pre-imported zygote, "spawn"
    fill: str | None = None       # weights nobody gave (values/policy.py): None refuses
    shapes: dict = field(default_factory=dict)  # a Relax VM function's sizes, by symbol

    def __post_init__(self) -> None:
        bad = [r for r in self.rungs if r not in KEYS]
        in_order = [r for r in KEYS if r in self.rungs] == list(self.rungs)
        if bad or len(self.rungs) < 2 or not in_order or len(set(self.rungs)) != len(self.rungs):
            raise InputError(f"rungs must be at least two of {', '.join(KEYS)} in order, "
                             f"got {','.join(self.rungs)!r}")
        if self.fill is not None and self.fill not in FILLS:
            raise InputError(f"fill must be one of {', '.join(FILLS)}, got {self.fill}")
        if self.start not in START_METHODS:
            raise InputError(f"start must be one of {', '.join(START_METHODS)}, got {self.start}")
        threads = 1 if self.threads is None else self.threads  # None: resolved where it starts
        if min(self.processes, threads, self.gap_repeat, self.reference_passes) < 1 or \
                min(self.steady_runs, self.gap_s, self.gap_processes, self.budget_s) < 0:
            raise InputError("processes, threads, gap repeats and reference passes must be "
                             ">= 1; steady runs, gap, gap processes and budget >= 0")
        if not (math.isfinite(self.budget_s) and math.isfinite(self.gap_s)):
            raise InputError(f"budget and gap must be finite numbers of seconds, got "
                             f"{self.budget_s} and {self.gap_s}")
        for key, (low, high) in LIMITS.items():
            if not low <= getattr(self, key) <= high:
                raise InputError(f"{key} must be from {low:g} to {high:g}, got "
                                 f"{getattr(self, key)!r}"[:300])

    def to_dict(self) -> dict:
        """JSON-ready (rungs as a list): what a Diagnosis records as its settings."""
        return {**self.__dict__, "rungs": list(self.rungs), "shapes": dict(self.shapes)}


@dataclass(frozen=True)
class WorkerSpec:
    """One fresh process: which model, which rung, and the settings that rung needs."""

    lib: str
    graph: str | None             # None: a Relax VM executable (runtime/doors.py)
    params: str | None
    rung: str
    wake_lib: str | None          # the pool-wake kernel (None on rung a: nothing is warmed)
    steady_runs: int
    reference_passes: int         # steady passes after the timed iteration (process speed)
    gap_s: float                  # > 0 on rung f: run the worker-sleep experiment
    gap_repeat: int
    busy_s: float
    seed: int
    force: bool
    debug: bool = False           # a failure returns its full traceback
    fill: str | None = None       # as DiagnoseSettings.fill
    shapes: dict = field(default_factory=dict)   # as DiagnoseSettings.shapes
    inputs: dict = field(default_factory=dict)   # input name -> .npy path (the others seeded)
    inflight: str | None = None   # the record the worker keeps its op in flight in (a crash)

    @classmethod
    def for_rung(cls, s: DiagnoseSettings, files: ModelFiles, rung: str, wake_lib: str,
                 debug: bool = False, process: int = 0,
                 inputs: dict[str, str] | None = None, inflight: str | None = None,
                 more_gap: bool = False) -> "WorkerSpec":
        """The spec of fresh process number ``process`` on ``rung``; the first
        ``gap_processes`` of rung f run the worker-sleep experiment, and with ``more_gap`` any
        later one too (an adaptive ladder's, while its answer is not settled)."""
        runs = rung == "f" and s.gap_processes > 0 and (more_gap or process < s.gap_processes)
        gap = s.gap_s if runs else 0.0
        return cls(str(files.lib), _opt(files.graph), _opt(files.params), rung,
                   wake_lib if rung != "a" else None, s.steady_runs, s.reference_passes, gap,
                   s.gap_repeat, s.busy_s, s.seed, s.force, debug, s.fill, dict(s.shapes),
                   dict(inputs or {}), inflight)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "WorkerSpec":
        """The spec back; a missing, unknown or mistyped field is an InputError."""
        spec = dataclass_from_json(cls, text, "worker spec")
        if spec.rung not in KEYS:
            raise InputError(f"bad worker spec: unknown rung {spec.rung!r}")
        return spec
