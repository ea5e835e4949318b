"""A sweep: one model profiled at several sizes of one symbolic dimension
(``profile --sweep n=16,32,64``), one full Profile per size, and how each op's time grows.

Saved as ``minigraph-sweep/1``: the symbol, its values, the mode the growth is read from, the
other sizes held fixed, and the profiles as a local ``--json`` writes them. The growth per op
(a least-squares fit of log time against log size: ~1 for a matmul over n x d, ~2 for
attention's n x n) is computed from the profiles by profile/sweep.py and stored beside them,
so a reader need not refit. Counterpart: none in TVM.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..errors import InputError
from .display import Displayable
from .profile import Profile

FORMAT = "minigraph-sweep/1"


@dataclass(frozen=True)
class Growth:
    """One op across the sweep: its median at each size (ns; None where not measured) and
    the fitted exponent of time against size (None with fewer than two sizes measured)."""

    name: str
    medians_ns: tuple[float | None, ...]
    exponent: float | None

    def to_dict(self) -> dict:
        return {"name": self.name, "medians_ns": list(self.medians_ns),
                "exponent": self.exponent}


@dataclass
class Sweep(Displayable):
    symbol: str
    values: list[int]
    mode: str                                # the per-op mode the growth is read from
    profiles: list[Profile] = field(default_factory=list)   # one per value, in order
    growth: list[Growth] = field(default_factory=list)      # one per op
    fixed: dict[str, int] = field(default_factory=dict)     # the other symbols' sizes
    partial: bool = False

    def to_dict(self) -> dict:
        return {"format": FORMAT, "symbol": self.symbol, "values": self.values,
                "mode": self.mode, "fixed": self.fixed, "partial": self.partial,
                "growth": [g.to_dict() for g in self.growth],
                "profiles": [p.to_dict() for p in self.profiles]}

    @classmethod
    def from_dict(cls, doc: object, source: str = "sweep") -> "Sweep":
        """A saved sweep back, every profile validated; InputError if foreign or corrupt."""
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise InputError(f"{source}: not a minigraph sweep (expected '{FORMAT}')")
        try:
            values = [int(v) for v in doc["values"]]
            profiles = [Profile.from_dict(p, f"{source}: profiles[{i}]")
                        for i, p in enumerate(doc["profiles"])]
            growth = [_growth(g, len(values)) for g in doc.get("growth", [])]
            if len(profiles) > len(values):
                raise ValueError("more profiles than values")
            return cls(str(doc["symbol"]), values, str(doc["mode"]), profiles, growth,
                       {str(k): int(v) for k, v in dict(doc.get("fixed", {})).items()},
                       bool(doc.get("partial", False)))
        except (KeyError, TypeError, ValueError) as err:
            raise InputError(f"{source}: corrupt sweep ({type(err).__name__}: {err})") from None


def _growth(g: dict, n: int) -> Growth:
    medians = tuple(None if m is None else float(m) for m in g["medians_ns"])
    exponent = g.get("exponent")
    if len(medians) != n or not all(m is None or math.isfinite(m) for m in medians):
        raise ValueError(f"growth of {g.get('name')!r} must hold {n} finite medians or nulls")
    if exponent is not None and not math.isfinite(float(exponent)):
        raise ValueError("an exponent must be finite or null")
    return Growth(str(g["name"]), medians, None if exponent is None else float(exponent))
