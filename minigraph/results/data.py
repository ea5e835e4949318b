"""What the kernels computed on: where each value came from, which tensors hold subnormal, NaN
or Inf values, and what those cost per op (values/check.py and values/cost.py measure them).

Saved as ``data`` in a profile or a diagnosis (docs/profile-schema.md). Subnormal numbers
matter because x86 floating point takes a microcode assist for an operand or result below
the smallest normal (1.2e-38 in float32) on many CPUs: weights that were never set hold what
the allocator left, and freed heap memory read as float32 is mostly subnormal.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..errors import InputError

COUNTS = ("n", "subnormal", "nan", "inf", "zero")
ROLES = ("input", "weight", "activation", "output")


@dataclass(frozen=True)
class ValueCounts:
    """Of one tensor's ``n`` values, how many are subnormal, NaN, Inf and zero."""

    n: int = 0
    subnormal: int = 0
    nan: int = 0
    inf: int = 0
    zero: int = 0

    @property
    def special(self) -> bool:
        """True if it holds anything a kernel may pay for or propagate (subnormal, NaN, Inf)."""
        return bool(self.subnormal or self.nan or self.inf)

    def share(self, what: str) -> float:
        return getattr(self, what) / self.n if self.n else 0.0

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in COUNTS}

    @classmethod
    def from_dict(cls, d: object, path: str) -> "ValueCounts":
        if not isinstance(d, dict) or any(type(d.get(k, 0)) is not int or d.get(k, 0) < 0
                                          for k in COUNTS):
            raise ValueError(f"{path} must hold non-negative integer {', '.join(COUNTS)}")
        return cls(*(d.get(k, 0) for k in COUNTS))


@dataclass(frozen=True)
class ArgValues:
    """One argument of an op that holds special values: its position in the call, entry,
    role, the op that produced it (activations) and the counts."""

    position: int
    eid: int
    name: str
    role: str
    producer: int | None
    counts: ValueCounts

    def to_dict(self) -> dict:
        return {"position": self.position, "eid": self.eid, "name": self.name,
                "role": self.role, "producer": self.producer, **self.counts.to_dict()}


@dataclass(frozen=True)
class OpValues:
    """Op ``index``, one of whose arguments holds special values: every argument with its
    counts (inputs read, outputs written)."""

    index: int
    name: str
    args: tuple[ArgValues, ...]

    def reads(self, role: str | None = None) -> tuple[ArgValues, ...]:
        return tuple(a for a in self.args if a.role != "output" and role in (None, a.role))

    def writes(self) -> tuple[ArgValues, ...]:
        return tuple(a for a in self.args if a.role == "output")


@dataclass(frozen=True)
class DataCost:
    """Op ``index`` timed on its inputs as given and on copies with the subnormal values
    flushed to zero, in interleaved pairs (ns per call, one sample per pair and side)."""

    index: int
    name: str
    given_ns: tuple[float, ...]
    flushed_ns: tuple[float, ...]
    ratio: float                    # median over pairs of given / flushed
    ratio_lo: float                 # 90% bootstrap interval of that median
    ratio_hi: float
    cost_ns: float                  # median over pairs of given - flushed
    cost_lo_ns: float
    cost_hi_ns: float
    method: str                     # how each sample was timed

    @property
    def resolved(self) -> bool:
        """True when the interval of the cost excludes zero."""
        return self.cost_lo_ns > 0 or self.cost_hi_ns < 0

    def to_dict(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


@dataclass(frozen=True)
class DataReport:
    """The data side of one measurement: sources per arg node, counts per arg node, the ops
    whose arguments hold special values, and what the subnormal ones cost."""

    sources: dict[str, dict]                 # arg node -> {"kind", "detail", "role"}
    values: dict[str, ValueCounts]           # arg node -> counts
    ops: tuple[OpValues, ...] = ()
    costs: tuple[DataCost, ...] = ()
    fill: str | None = None                  # --fill, when weights were made up
    activations_checked: bool = False        # op outputs counted too (one checked run)
    notes: tuple[str, ...] = field(default_factory=tuple)

    def op(self, index: int) -> OpValues | None:
        return next((o for o in self.ops if o.index == index), None)

    def cost(self, index: int) -> DataCost | None:
        return next((c for c in self.costs if c.index == index), None)

    def to_dict(self) -> dict:
        return {"sources": self.sources, "fill": self.fill,
                "activations_checked": self.activations_checked,
                "values": {k: v.to_dict() for k, v in self.values.items()},
                "ops": [{"index": o.index, "name": o.name,
                         "args": [a.to_dict() for a in o.args]} for o in self.ops],
                "costs": [c.to_dict() for c in self.costs], "notes": list(self.notes)}

    @classmethod
    def from_dict(cls, d: object, source: str = "data") -> "DataReport":
        """A saved data section back; InputError naming the field if it is malformed."""
        try:
            return _read(d)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise InputError(f"{source}: corrupt data section ({err})") from None


def _arg(a: dict, path: str) -> ArgValues:
    if a["role"] not in ROLES:
        raise ValueError(f"{path}.role must be one of {', '.join(ROLES)}")
    producer = a.get("producer")
    if producer is not None and type(producer) is not int:
        raise ValueError(f"{path}.producer must be an op index or null")
    return ArgValues(int(a["position"]), int(a["eid"]), str(a["name"]), a["role"], producer,
                     ValueCounts.from_dict(a, path))


def _cost(c: dict) -> DataCost:
    floats = [float(c[k]) for k in ("ratio", "ratio_lo", "ratio_hi", "cost_ns", "cost_lo_ns",
                                    "cost_hi_ns")]
    if not all(math.isfinite(x) for x in floats):
        raise ValueError(f"costs of op {c.get('index')} must be finite numbers")
    return DataCost(int(c["index"]), str(c["name"]), tuple(float(x) for x in c["given_ns"]),
                    tuple(float(x) for x in c["flushed_ns"]), *floats, str(c["method"]))


def _read(d: object) -> DataReport:
    if not isinstance(d, dict):
        raise ValueError("must be an object")
    sources = {str(k): dict(v) for k, v in dict(d.get("sources", {})).items()}
    values = {str(k): ValueCounts.from_dict(v, f"values.{k}")
              for k, v in dict(d.get("values", {})).items()}
    ops = tuple(OpValues(int(o["index"]), str(o["name"]),
                         tuple(_arg(a, f"ops[{i}].args[{j}]") for j, a in enumerate(o["args"])))
                for i, o in enumerate(d.get("ops", [])))
    fill = d.get("fill")
    if fill is not None and not isinstance(fill, str):
        raise ValueError("fill must be a string or null")
    return DataReport(sources, values, ops, tuple(_cost(c) for c in d.get("costs", [])), fill,
                      bool(d.get("activations_checked", False)),
                      tuple(str(n) for n in d.get("notes", [])))
