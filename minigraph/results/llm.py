"""An LLM profile: one document whose phases (prefill, decode) are views of one request.

Every time is in ns and every sample is kept: per op, its time in each in-run replay of the
phase (the op's calls summed), its warm time per call (the op alone, repeated) and its time in
the first request of a fresh process; per phase, the engine's end-to-end time through TVM's VM,
minigraph's loop overhead (no-op calls, measured) and the VM's own time between calls. The
LLM user's figures (time to first token, prefill tokens/s, decode ms/token and tokens/s,
inter-token latency percentiles) are derived here, once, from those samples.
"""
from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field

from ..errors import InputError
from .display import Displayable

FORMAT = "minigraph-llm-profile/1"
COMPARISON_FORMAT = "minigraph-llm-comparison/1"
PHASES = ("prefill", "decode")
# every count of an LLM profile, bounded (the CLI's types and help read this one table): a
# prompt past 32k tokens or 4k decode steps is no profile this tool can take in reasonable time
LIMITS = {"prompt_len": (1, 32768), "decode": (1, 4096), "rounds": (1, 1000),
          "generate": (1, 4096)}  # run --generate: tokens one run generates (and the context)


@dataclass(frozen=True)
class OpRow:
    """One op of a phase (kernels with the same name and call site merged)."""

    name: str
    kind: str                     # kernel | kv | builtin
    function: str                 # embed | prefill | decode | engine
    calls: int                    # calls per phase run
    inrun_ns: tuple[int, ...]     # per replay of the phase: this op's calls summed
    warm_ns: float | None = None  # per call: median of the op alone, repeated
    first_ns: int | None = None   # the first request of this process: its calls summed
    flops: int | None = None      # per phase run, where the build recorded it
    bytes: int | None = None      # weight bytes per phase run, where the build recorded it
    layer: str | None = None      # the model's layer a linear kernel computes (build.json)

    @property
    def label(self) -> str:
        """The kernel's name and, where known, the layer it is: 'linear4 (mlp.down_proj)'."""
        return f"{self.name} ({self.layer})" if self.layer else self.name

    @property
    def inrun_median(self) -> float:
        return float(statistics.median(self.inrun_ns)) if self.inrun_ns else float("nan")


@dataclass(frozen=True)
class PhaseResult:
    name: str                     # prefill | decode
    tokens: int                   # tokens computed by one run of the phase
    depth: int                    # tokens in the KV cache before it
    ops: tuple[OpRow, ...]
    e2e_ns: tuple[int, ...]       # the engine's phase through TVM's VM (embed .. end_forward)
    overhead_ns: tuple[int, ...]  # minigraph's loop over the same calls with a no-op function
    vm_between_ns: int            # the VM's own work between calls, one instrumented run
    first_ns: int | None = None   # the phase in the first request of this process
    # inside the attention builtin: the KV cache's kernels, per round their ns summed
    inside_ns: dict[str, tuple[int, ...]] = field(default_factory=dict)
    inside_calls: dict[str, int] = field(default_factory=dict)  # per phase run

    def inrun_sum(self) -> float:
        return sum(o.inrun_median for o in self.ops)

    def e2e_median(self) -> float:
        return float(statistics.median(self.e2e_ns))

    def overhead_median(self) -> float:
        return float(statistics.median(self.overhead_ns))

    def inside_medians(self) -> dict[str, float]:
        """The attention builtin's own kernels: per kernel, its median ns per phase run."""
        return {k: float(statistics.median(v)) for k, v in self.inside_ns.items() if v}


@dataclass(frozen=True)
class DepthPoint:
    """Decode at one KV-cache depth (``--sweep depth=...``): per op, in-run median per token."""

    depth: int
    op_ns: dict[str, float]
    e2e_ns: float


@dataclass(frozen=True)
class LLMProfile(Displayable):
    model: str
    threads: int
    cpu: str
    prompt_len: int
    decode_steps: int
    phases: tuple[PhaseResult, ...]
    itl_ns: tuple[int, ...]       # each decode step of a generated sequence (embed .. logits)
    ttft_ns: int                  # first request: prompt in, first token's logits on the host
    weight_bytes: int             # bytes a decode step reads of the weights (embedding: a row)
    kv_bytes_per_token: int       # bytes of K and V one token holds in the cache (all layers)
    peaks: dict = field(default_factory=dict)   # {"gflops": .., "gbps": ..}
    sweep: tuple[DepthPoint, ...] = ()
    config: dict | None = None
    environment: dict = field(default_factory=dict)
    contention: dict = field(default_factory=dict)  # measure/contention.py over the profile
    format: str = FORMAT

    def phase(self, name: str) -> PhaseResult:
        return next(p for p in self.phases if p.name == name)

    def to_dict(self) -> dict:
        d = asdict(self)
        return {"format": d.pop("format"), **d}  # first: results/formats.py sniffs it there

    @classmethod
    def from_dict(cls, d: dict) -> "LLMProfile":
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise InputError(f"not an LLM profile (format {d.get('format') if isinstance(d, dict) else None!r})")
        try:
            phases = tuple(PhaseResult(**{**p, "ops": tuple(OpRow(**{**o, "inrun_ns": tuple(o["inrun_ns"])})
                                                             for o in p["ops"]),
                                          "e2e_ns": tuple(p["e2e_ns"]),
                                          "inside_ns": {k: tuple(v) for k, v in
                                                        p.get("inside_ns", {}).items()},
                                          "overhead_ns": tuple(p["overhead_ns"])})
                           for p in d["phases"])
            sweep = tuple(DepthPoint(**s) for s in d.get("sweep", ()))
            return cls(**{**d, "phases": phases, "sweep": sweep, "itl_ns": tuple(d["itl_ns"])})
        except (KeyError, TypeError) as err:
            raise InputError(f"LLM profile: malformed ({err})") from None


def read(doc: object, source: str) -> LLMProfile:
    """results/formats.py's reader: the document, or an InputError naming ``source``."""
    try:
        return LLMProfile.from_dict(doc)  # type: ignore[arg-type]
    except InputError as err:
        raise InputError(f"{source}: {err}") from None


def read_comparison(doc: object, source: str) -> dict:
    """A saved LLM comparison (compare --json): its verdict and phases, checked for shape."""
    ok = isinstance(doc, dict) and isinstance(doc.get("verdict"), str) and \
        isinstance(doc.get("because"), str) and isinstance(doc.get("phases"), list) and \
        all(isinstance(p, dict) and {"name", "a_ns", "b_ns", "ratio", "p_value", "real"} <= set(p)
            for p in doc["phases"])
    if not ok:
        raise InputError(f"{source}: not an LLM comparison (verdict, because, phases)")
    return doc  # type: ignore[return-value]


def percentile(xs: tuple[int, ...], q: float) -> float:
    """The q-th percentile (0-100) of xs, linear between samples (numpy's default)."""
    s = sorted(xs)
    if not s:
        return float("nan")
    pos = (len(s) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


@dataclass(frozen=True)
class Figures:
    """What an LLM user reads first, derived from the samples."""

    ttft_ms: float
    prefill_tok_s: float
    decode_ms: float
    decode_tok_s: float
    itl_p50_ms: float
    itl_p99_ms: float
    prefill_gflops: float | None
    decode_gbps: float | None

    @classmethod
    def of(cls, p: LLMProfile) -> "Figures":
        pre, dec = p.phase("prefill"), p.phase("decode")
        pre_s, dec_s = pre.e2e_median() / 1e9, dec.e2e_median() / 1e9
        flops = sum(o.flops or 0 for o in pre.ops) or None
        kv = p.kv_bytes_per_token * (dec.depth + 1)
        return cls(p.ttft_ns / 1e6, pre.tokens / pre_s, dec_s * 1e3, 1 / dec_s,
                   percentile(p.itl_ns, 50) / 1e6, percentile(p.itl_ns, 99) / 1e6,
                   flops / pre_s / 1e9 if flops else None,
                   (p.weight_bytes + kv) / dec_s / 1e9 if p.weight_bytes else None)

