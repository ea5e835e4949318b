"""What every protocol returns and its serialised form (shared by both eras).

Multi-sample totals are the mean of the samples (what ``BenchmarkResult.mean`` and the old debug
tables reported); the raw samples are kept so a report can use the median instead.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Iterable, Mapping

from ..errors import InputError

KEYS = ("debug_executor.profile", "vm_profiler", "run_individual", "benchmark_e2e",
        "relax_vm_e2e", "relax_vm_instrument", "debug_executor.no_params")
NO_PARAMS = KEYS[6]  # the forum thread's own: the debug executor whose params were never set
VM_KEYS = KEYS[4:6]  # TVM 0.27's Relax VM on the executable
# a column heading per protocol, for tables that must fit a terminal (legend under the table)
SHORT = dict(zip(KEYS, ("debug.profile", "vm_profiler", "run_indiv.", "benchmark", "vm e2e",
                        "vm instrument", "no params")))
FORMAT = "minigraph-protocols/1"


@dataclass(frozen=True)
class ProtocolResult:
    """One protocol's view of the model. ``per_op_ns`` is aligned with ``Executor.ops`` (None:
    no per-op view, or that op has no counterpart); ``total_ns`` is what the protocol reports as
    the model's time; ``samples_ns`` the raw samples behind it."""

    key: str
    description: str
    per_op_ns: tuple[float | None, ...] | None
    total_ns: float
    samples_ns: tuple[float, ...]
    notes: tuple[str, ...] = ()
    overhead_ns: float | None = None  # the protocol's own cost per timed call, where measured

    @property
    def skipped(self) -> bool:
        """True if the protocol could not run (no samples; the notes say why)."""
        return not self.samples_ns

    def to_dict(self) -> dict:
        """JSON-ready: tuples become lists, a NaN total (skipped) becomes null."""
        return {**asdict(self), "per_op_ns": None if self.per_op_ns is None
                else list(self.per_op_ns), "samples_ns": list(self.samples_ns),
                "total_ns": self.total_ns if math.isfinite(self.total_ns) else None,
                "notes": list(self.notes)}

    @classmethod
    def from_dict(cls, d: Mapping) -> "ProtocolResult":
        """Inverse of ``to_dict``; InputError on a malformed entry."""
        try:
            per_op, total = d["per_op_ns"], d["total_ns"]
            return cls(str(d["key"]), str(d["description"]),
                       None if per_op is None else tuple(_opt_float(v) for v in per_op),
                       math.nan if total is None else _float(total),
                       tuple(_float(v) for v in d["samples_ns"]),
                       tuple(str(n) for n in d.get("notes", ())),
                       _opt_float(d.get("overhead_ns")))
        except (KeyError, TypeError, ValueError) as err:
            raise InputError(f"bad protocol result {dict(d).get('key', '?')!r}: {err}") from err


def _float(v: object) -> float:
    """A saved number: a finite int or float (not a string float() would also take)."""
    if type(v) is float and math.isfinite(v) or type(v) is int and abs(v) < 2**63:
        return float(v)  # type: ignore[arg-type]
    what = repr(v) if type(v) in (int, float) and len(repr(v)) < 30 else f"a {type(v).__name__}"
    raise ValueError(f"{what} is not a finite number")


def _opt_float(v) -> float | None:
    return None if v is None else _float(v)


def to_dict(results: Iterable[ProtocolResult]) -> dict:
    return {"format": FORMAT, "results": [r.to_dict() for r in results]}


def from_dict(d: Mapping) -> tuple[ProtocolResult, ...]:
    if not isinstance(d, Mapping) or d.get("format") != FORMAT:
        raise InputError(f"not a {FORMAT} document")
    results = d.get("results", ())
    if not isinstance(results, (list, tuple)) or not all(isinstance(r, Mapping) for r in results):
        raise InputError(f"{FORMAT}: results must be a list of objects")
    return tuple(ProtocolResult.from_dict(r) for r in results)


def read(doc: object, source: str = "protocols") -> tuple[ProtocolResult, ...]:
    """A saved protocols document (the format registry's reader)."""
    try:
        return from_dict(doc)  # type: ignore[arg-type]
    except InputError as err:
        raise InputError(f"{source}: {err}") from None


def skipped(key: str, why: str) -> ProtocolResult:
    """A protocol that could not run: no samples, NaN total, the reason as a note."""
    return ProtocolResult(key, "skipped", None, math.nan, (), (f"skipped: {why}",))
