"""The Profile: every raw sample a ``minigraph profile`` run took, and its settings.

Serialisation lives here, next to the data: ``Profile.to_dict`` writes the versioned document
(``minigraph-profile/1``) that ``--json`` and ``--raw`` save, ``Profile.from_dict`` reads one back
after profile_schema.py has validated it field by field. Counterpart: TVM's ``profiling::Report``
(removed in 0.24), which kept only aggregates; a Profile keeps the raw samples.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..errors import InputError
from ..measure.significance import median_precision
from ..measure.speed import SpeedStates, states
from ..measure.stats import Stats
from .data import DataReport
from .display import Displayable
from .modes import NAMES, ModeName
from .profile_schema import FORMAT, check_profile_doc
from .protocols import ProtocolResult
from .timeline import RealPass


# The least and most each count and budget of a profile may be: the CLI's options are bounded
# by these (cli/profile.py) and so is a remote job's settings (remote/job.py makes Settings).
# Enough for any real measurement, with a finite worst case: a warm round takes at most
# ops x warm_repeat x max(warm_min_repeat_ms, the op's time), and rounds stop once
# warm_budget_ms per op is spent; warm_precision lies strictly between PRECISION's two.
LIMITS: dict[str, tuple[int, int]] = {
    "warmups": (0, 1000), "warm_repeat": (1, 1000), "warm_min_repeat_ms": (0, 1000),
    "warm_budget_ms": (1, 60_000), "inrun_passes": (1, 1000), "cold_repeat": (1, 1000),
    "e2e_repeat": (1, 1000)}
PRECISION = (0.0, 1.0)


@dataclass(frozen=True)
class Settings:
    modes: tuple[str, ...] = NAMES
    warmups: int = 3            # one-pass warm-up runs (the old VM profiler used 1)
    warm_repeat: int = 7        # time_evaluator repeats per batch
    warm_min_repeat_ms: int = 2  # time_evaluator raises `number` until a repeat lasts this long
    # more rounds of batches until every op's median is known to +- this (the half-width of
    # its 90% interval, relative) ...
    warm_precision: float = 0.02
    warm_budget_ms: int = 200   # ... or this much wall time per op went into the warm mode
    # steady-state op-by-op passes of the in-run mode, interleaved round by round with the
    # e2e runs (rounds: the larger of the two counts, when both modes are measured)
    inrun_passes: int = 20
    cold_repeat: int = 5
    flush: str = "llc"          # "llc": overwrite 2x LLC bytes; "tvm": cache_flush_cpu_non_first_arg
    flush_nbytes: int | None = 64 << 20  # None: 2x this machine's LLC (profile/session.py)
    e2e_repeat: int = 20
    reset_pool: bool = True
    relax_vm: bool = True       # a Relax VM executable: TVM's own VM numbers beside the profile

    def __post_init__(self) -> None:
        """The modes are names: a remote job's ``"modes": "warm"`` (or ``modes="warm"``) is
        refused, not measured as the modes w, a, r and m."""
        if isinstance(self.modes, str) or not isinstance(self.modes, (tuple, list)) or \
                not self.modes or not all(isinstance(m, str) and m in NAMES for m in self.modes):
            raise InputError(f"modes must be a list of mode names ({', '.join(NAMES)}), got "
                             f"{self.modes!r}"[:300])
        _check_counts(self)

    def to_dict(self) -> dict:
        return {**self.__dict__, "modes": list(self.modes)}


def _check_counts(s: Settings) -> None:
    """InputError for a count or budget outside LIMITS, or a precision outside PRECISION."""
    for key, (low, high) in LIMITS.items():
        value = getattr(s, key)
        if type(value) is not int or not low <= value <= high:
            raise InputError(f"{key} must be an integer from {low} to {high}, got {value!r}"
                             [:300])
    low, high = PRECISION
    p = s.warm_precision
    if type(p) not in (int, float) or not low < p < high:
        raise InputError(f"warm_precision must be between {low:g} and {high:g} (e.g. 0.02), "
                         f"got {p!r}"[:300])


@dataclass
class Profile(Displayable):
    """Everything measured: per mode, per op, raw samples in ns (warm-ups kept apart)."""

    ops: list[dict]
    settings: dict
    samples: dict[str, list[list[float]]] = field(default_factory=dict)   # mode -> op -> ns
    counters: list[dict] = field(default_factory=list)                    # first-run, per op
    e2e_ns: list[float] = field(default_factory=list)
    dispatch_ns: list[float] = field(default_factory=list)   # run loop with testing.nop kernels
    # the steady rounds (profile/steady.py), one entry per round: its start ``t_s`` and length
    # ``wall_s`` (s), what in-run's clock stamps add to a pass (``stamp_ns``), whether its e2e
    # run went first, and the machine's busy / steal seconds and ours since the first round
    # (cumulative); round k holds e2e_ns[k], dispatch_ns[k] and every op's in-run sample k
    rounds: list[dict] = field(default_factory=list)
    warmup_ns: dict[str, list[float]] = field(default_factory=dict)
    env: dict = field(default_factory=dict)
    threads: dict = field(default_factory=dict)
    contention: dict = field(default_factory=dict)  # Contention over measure(), if readable
    timer: dict = field(default_factory=dict)  # how warm/cold were timed (samplers.loop_cost)
    partial: bool = False
    provenance: dict = field(default_factory=dict)  # what was measured, when, by what command
    timeline: dict[str, RealPass] = field(default_factory=dict)  # mode -> one real pass
    # where the samples came from when minigraph did not measure them: {"kind": "tvm-report",
    # "format", "protocol", ...} for an imported TVM profiler report (readers/tvm_report/)
    source: dict = field(default_factory=dict)
    # TVM 0.27's own Relax VM numbers on the same executable (protocols/relax_vm.py: the VM's
    # time_evaluator and set_instrument), for a model that is one; results/protocols.py dicts
    relax_vm: list[dict] = field(default_factory=list)
    # what the kernels computed on (results/data.py DataReport.to_dict): value sources, the
    # ops whose operands hold subnormal/NaN/Inf values, and what the subnormal ones cost
    data: dict = field(default_factory=dict)
    # the machine's speed reference (measure/speed.py): {"probe": what was run, "samples": one
    # probe before and after each mode and between steady rounds}
    speed: dict = field(default_factory=dict)

    @property
    def imported(self) -> bool:
        """True for a TVM profiler report read into a profile (readers/tvm_report/)."""
        return self.source.get("kind") == "tvm-report"

    def data_report(self) -> DataReport | None:
        """The data section as a DataReport (None: the profile has none)."""
        return DataReport.from_dict(self.data) if self.data else None

    def vm_results(self) -> tuple[ProtocolResult, ...]:
        """The Relax VM's own numbers (``relax_vm``) as protocol results."""
        return tuple(ProtocolResult.from_dict(r) for r in self.relax_vm)

    def speed_states(self, part: str = "compute_ns") -> SpeedStates | None:
        """The machine's speed states over this profile's probes (None: no probe saved)."""
        return states([s[part] for s in self.speed.get("samples", [])])

    def stats(self, mode: str) -> list[Stats]:
        return [Stats.of(s) for s in self.samples.get(mode, [])]

    def median(self, mode: str, i: int) -> float | None:
        """Op ``i``'s median in ``mode`` (ns), None where it was not measured."""
        rows = self.samples.get(mode, [])
        return Stats.of(rows[i]).median_ns if i < len(rows) and rows[i] else None

    def precision(self, mode: str, index: int) -> float:
        """How well op ``index``'s ``mode`` median is known: the half-width of its 90%
        interval as a share of it (warm: each batch of ``warm_repeat`` samples counts as one
        batch; measure/significance.py); inf with fewer than two samples."""
        rows = self.samples.get(mode, [])
        batch = int(self.settings.get("warm_repeat") or 0) if mode == ModeName.WARM else 0
        return median_precision(rows[index], batch) if index < len(rows) else math.inf

    def sum_precision(self, mode: str) -> float:
        """The same for the sum of ``mode``'s medians, the ops' uncertainties added as if they
        all moved together (a slow stretch moves every op: the honest bound)."""
        meds = [s.median_ns for s in self.stats(mode)]
        total = sum(meds)
        if not meds or total <= 0:
            return math.inf
        return sum(m * self.precision(mode, i) for i, m in enumerate(meds) if m) / total

    def executor_overhead_ns(self) -> float | None:
        """The run loop's own cost, measured with no-op kernels (median ns per run)."""
        return Stats.of(self.dispatch_ns).median_ns if self.dispatch_ns else None

    def sum_gap_ns(self, mode: str) -> float | None:
        """e2e - (sum of ``mode``'s per-op medians + executor overhead): what the per-op view
        of ``mode`` misses in a real run (for warm: the cache state of ops timed alone)."""
        over = self.executor_overhead_ns()
        rows = self.samples.get(mode)
        if not self.e2e_ns or not rows or not all(rows) or over is None:
            return None  # an op without samples (an interrupted run) has no median to add
        per_op = sum(s.median_ns for s in self.stats(mode))
        return Stats.of(self.e2e_ns).median_ns - per_op - over

    def to_dict(self) -> dict:
        return {"format": FORMAT, "partial": self.partial, "ops": self.ops,
                "settings": self.settings, "env": self.env, "threads": self.threads,
                "samples_ns": self.samples, "first_run_counters": self.counters,
                "e2e_ns": self.e2e_ns, "dispatch_ns": self.dispatch_ns,
                **({"rounds": self.rounds} if self.rounds else {}),
                "warmup_ns": self.warmup_ns, "contention": self.contention,
                "provenance": self.provenance,
                "timeline": {m: p.to_dict() for m, p in self.timeline.items()},
                "timer": self.timer,
                **({"source": self.source} if self.source else {}),
                **({"relax_vm": self.relax_vm} if self.relax_vm else {}),
                **({"data": self.data} if self.data else {}),
                **({"speed": self.speed} if self.speed else {})}

    @classmethod
    def from_dict(cls, doc: object, source: str = "profile") -> "Profile":
        """A saved profile back; anything foreign or corrupt is an InputError."""
        check_profile_doc(doc, source)
        assert isinstance(doc, dict)  # for type checkers: check_profile_doc guarantees it
        return cls(ops=[dict(o) for o in doc["ops"]], settings=dict(doc["settings"]),
                   samples={m: [[float(x) for x in row] for row in rows]
                            for m, rows in doc["samples_ns"].items()},
                   counters=[dict(c) for c in doc.get("first_run_counters", [])],
                   e2e_ns=[float(x) for x in doc.get("e2e_ns", [])],
                   dispatch_ns=[float(x) for x in doc.get("dispatch_ns", [])],
                   rounds=[dict(r) for r in doc.get("rounds", [])],
                   warmup_ns={k: [float(x) for x in v]
                              for k, v in doc.get("warmup_ns", {}).items()},
                   env=dict(doc.get("env", {})), threads=dict(doc.get("threads", {})),
                   contention=dict(doc.get("contention", {})),
                   partial=bool(doc.get("partial", False)),
                   provenance=dict(doc.get("provenance", {})),
                   timeline={m: RealPass.from_dict(p) for m, p in doc.get("timeline", {}).items()},
                   timer=dict(doc.get("timer", {})),
                   source=dict(doc.get("source", {})),
                   relax_vm=[dict(r) for r in doc.get("relax_vm", [])],
                   data=dict(doc.get("data") or {}), speed=dict(doc.get("speed") or {}))
