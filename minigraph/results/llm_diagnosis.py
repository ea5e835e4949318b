"""An LLM diagnosis: the first request measured at each rung of the warm-up ladder, one record
per fresh process (llm/ladder.py), and what each step of the ladder cost the first token.

The records are kept raw; the steps (rung before minus rung after, medians over processes,
with a bootstrap interval) are derived here, once, for every rendering.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from ..errors import InputError
from .display import Displayable

FORMAT = "minigraph-llm-diagnosis/1"
# the ladder's rungs in order (llm/ladder.py warms them), what each has warmed before the
# measured request, and what the step from the rung below to it takes away
RUNGS = ("a", "p", "w", "k", "f")
WHAT = {"a": "nothing warmed", "p": "thread pool created", "w": "weights read once",
        "k": "kernels called once", "f": "KV cache pages written"}
STEP = {"p": "thread-pool creation", "w": "weights' first read", "k": "kernels' first call",
        "f": "KV cache's first touch"}
RESAMPLES = 2000  # bootstrap resamples of each step's median difference
LEVEL = 0.90      # the interval's coverage


@dataclass(frozen=True)
class Step:
    """What warming one more thing saved the first request (ns): median and interval."""

    rung: str          # the rung that warms it
    what: str
    ttft_ns: float
    lo_ns: float
    hi_ns: float
    decode_ns: float   # the same for the first decode step
    faults: float      # minor page faults of the prefill, median difference
    top_op: str        # the op whose first-request time moved most
    top_op_ns: float

    @property
    def resolved(self) -> bool:
        """The interval excludes zero: the step's cost is out of the noise."""
        return self.lo_ns > 0 or self.hi_ns < 0


@dataclass(frozen=True)
class LLMDiagnosis(Displayable):
    model: str
    threads: int
    cpu: str
    prompt_len: int
    rungs: tuple[str, ...]
    records: tuple[dict, ...]
    contention: dict = field(default_factory=dict)
    format: str = FORMAT

    def of(self, rung: str, phase: str = "prefill") -> list[float]:
        """The phase's time in the first request (ns) of each process of ``rung``; prefill's
        is the time to first token."""
        return [float(r[phase]["ns"]) for r in self.records if r["rung"] == rung]

    def to_dict(self) -> dict:
        d = asdict(self)
        return {"format": d.pop("format"), **d}

    @classmethod
    def from_dict(cls, d: object, source: str = "LLM diagnosis") -> "LLMDiagnosis":
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise InputError(f"{source}: not an LLM diagnosis")
        try:
            return cls(**{**d, "rungs": tuple(d["rungs"]), "records": tuple(d["records"])})
        except TypeError as err:
            raise InputError(f"{source}: malformed LLM diagnosis ({err})") from None


def _boot(a: list[float], b: list[float], rng) -> tuple[float, float, float]:
    """median(a) - median(b) and its bootstrap interval (ns)."""
    x, y = np.asarray(a), np.asarray(b)
    d = np.median(rng.choice(x, (RESAMPLES, len(x))), axis=1) - \
        np.median(rng.choice(y, (RESAMPLES, len(y))), axis=1)
    tail = (1 - LEVEL) / 2 * 100
    return float(np.median(x) - np.median(y)), *np.percentile(d, [tail, 100 - tail])


def _ops(diag: LLMDiagnosis, rung: str) -> dict[str, float]:
    """Per op (function:name): median over processes of its prefill + decode time."""
    per: dict[str, list[float]] = {}
    for r in diag.records:
        if r["rung"] == rung:
            for phase in ("prefill", "decode"):
                for k, v in r[phase]["ops"].items():
                    per.setdefault(k, []).append(v)
    return {k: float(np.median(v)) for k, v in per.items()}


def steps(diag: LLMDiagnosis) -> list[Step]:
    """One step per pair of neighbouring rungs measured, in ladder order."""
    rng = np.random.default_rng(0)
    out = []
    for before, rung in zip(diag.rungs, diag.rungs[1:]):
        ttft = _boot(diag.of(before), diag.of(rung), rng)
        dec = _boot(diag.of(before, "decode"), diag.of(rung, "decode"), rng)[0]
        faults = [float(r["prefill"]["faults"]) for r in diag.records if r["rung"] == before]
        after = [float(r["prefill"]["faults"]) for r in diag.records if r["rung"] == rung]
        ob, oa = _ops(diag, before), _ops(diag, rung)
        moved = max(ob, key=lambda k: ob[k] - oa.get(k, 0.0)) if ob else ""
        what = " + ".join(STEP[r] for r in RUNGS[RUNGS.index(before) + 1:RUNGS.index(rung) + 1])
        out.append(Step(rung, what, *ttft, dec,
                        float(np.median(faults) - np.median(after)), moved,
                        ob.get(moved, 0.0) - oa.get(moved, 0.0)))
    return out
