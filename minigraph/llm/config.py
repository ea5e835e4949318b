"""What a decoder-only LLM is, as a frozen config: read from a Hugging Face ``config.json`` or
one of the built-in configs (seeded weights), checked before anything is built.

Counterpart: the config dataclasses of MLC-LLM's model definitions (``LlamaConfig``,
``QWen2Config``) and TVM's ``docs/how_to/tutorials/optimize_llm.py``. Only what the kernels
need is kept; every field the architecture could use differently (rope scaling, sliding
windows, a head_dim that does not divide the hidden size) is checked, and what minigraph's
build does not implement is refused by name rather than built wrong.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Mapping

from ..errors import InputError

# Hugging Face `architectures` minigraph builds; q/k/v biases are Qwen2's only difference here
ARCHITECTURES = {"LlamaForCausalLM": False, "Qwen2ForCausalLM": True}
# the context a KV cache is created for when the config does not say (tokens)
DEFAULT_CONTEXT = 4096
# a context past this is capped: the KV cache is allocated whole at creation (bytes grow with it)
MAX_CONTEXT = 32768


@dataclass(frozen=True)
class LLMConfig:
    """A Llama-family decoder: RMSNorm, rotary position embedding (rotate-half, as Hugging
    Face), grouped-query attention, SwiGLU MLP, float32 weights."""

    name: str
    architecture: str
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    vocab_size: int
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    tie_word_embeddings: bool = False
    attention_bias: bool = False       # q/k/v projections carry a bias (Qwen2)
    context_window_size: int = DEFAULT_CONTEXT

    def __post_init__(self) -> None:
        for f in ("hidden_size", "intermediate_size", "num_hidden_layers",
                  "num_attention_heads", "num_key_value_heads", "head_dim", "vocab_size",
                  "context_window_size"):
            v = getattr(self, f)
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise InputError(f"LLM config '{self.name}': {f} must be a positive integer, "
                                 f"not {v!r}")
        if self.num_attention_heads % self.num_key_value_heads:
            raise InputError(f"LLM config '{self.name}': {self.num_attention_heads} attention "
                             f"heads are not a multiple of {self.num_key_value_heads} KV heads")
        if self.head_dim % 2:
            raise InputError(f"LLM config '{self.name}': head_dim {self.head_dim} is odd; "
                             "rotary embedding rotates pairs")
        if not (self.rms_norm_eps > 0 and self.rope_theta > 0):
            raise InputError(f"LLM config '{self.name}': rms_norm_eps and rope_theta must be "
                             "positive")

    @property
    def group(self) -> int:
        """Query heads per KV head (GQA): query head h reads KV head h // group."""
        return self.num_attention_heads // self.num_key_value_heads

    @property
    def qkv_features(self) -> int:
        return (self.num_attention_heads + 2 * self.num_key_value_heads) * self.head_dim

    def linear_role(self, in_features: int, out_features: int) -> str | None:
        """Which linear layer a kernel of these features is (build.json; a profile's rows),
        None when the shape fits none or several."""
        h, i = self.hidden_size, self.intermediate_size
        roles = {"self_attn.qkv_proj": (h, self.qkv_features),
                 "self_attn.o_proj": (self.num_attention_heads * self.head_dim, h),
                 "mlp.gate_up_proj": (h, 2 * i), "mlp.down_proj": (i, h),
                 "lm_head": (h, self.vocab_size)}
        hits = [r for r, shape in roles.items() if shape == (in_features, out_features)]
        return hits[0] if len(hits) == 1 else None

    def n_params(self) -> int:
        """Parameters as Hugging Face counts them (a tied head counted once)."""
        h, i, d = self.hidden_size, self.intermediate_size, self.head_dim
        attn = h * self.qkv_features + self.num_attention_heads * d * h
        if self.attention_bias:
            attn += self.qkv_features
        layer = attn + 3 * h * i + 2 * h
        head = 0 if self.tie_word_embeddings else self.vocab_size * h
        return self.vocab_size * h + self.num_hidden_layers * layer + h + head

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], what: str = "build.json config") -> "LLMConfig":
        """The inverse of ``to_dict`` (build.json); unknown or missing keys are refused."""
        names = {f.name for f in fields(cls)}
        if not isinstance(d, Mapping) or set(d) - names:
            raise InputError(f"{what}: not an LLM config (unknown keys "
                             f"{sorted(set(d) - names) if isinstance(d, Mapping) else d!r})")
        try:
            return cls(**dict(d))
        except TypeError as err:  # a required field missing
            raise InputError(f"{what}: not an LLM config ({err})") from None


def _int(cfg: Mapping[str, Any], key: str, where: str) -> int:
    v = cfg.get(key)
    if not isinstance(v, int) or isinstance(v, bool):
        raise InputError(f"{where}: '{key}' must be an integer, not {v!r}")
    return v


def _rope_theta(cfg: Mapping[str, Any], where: str) -> float:
    scaling = cfg.get("rope_scaling")
    if scaling not in (None, {}):
        kind = scaling.get("rope_type", scaling.get("type")) if isinstance(scaling, dict) else scaling
        raise InputError(f"{where}: rope_scaling of type {kind!r} is not built by minigraph "
                         "(only plain rotary embedding)")
    theta = cfg.get("rope_theta", 10000.0)
    if not isinstance(theta, (int, float)) or isinstance(theta, bool):
        raise InputError(f"{where}: 'rope_theta' must be a number, not {theta!r}")
    return float(theta)


def from_hf(cfg: Mapping[str, Any], name: str, where: str = "config.json") -> LLMConfig:
    """A Hugging Face ``config.json`` (already parsed) -> LLMConfig; architectures other than
    ``ARCHITECTURES`` are refused by name, as are features the build does not implement."""
    archs = cfg.get("architectures") or [cfg.get("model_type")]
    arch = archs[0] if isinstance(archs, list) and archs else archs
    if arch not in ARCHITECTURES:
        raise InputError(f"{where}: architecture {arch!r} is not built by minigraph "
                         f"(supported: {', '.join(ARCHITECTURES)})")
    if cfg.get("use_sliding_window"):
        raise InputError(f"{where}: sliding-window attention is not built by minigraph")
    if cfg.get("hidden_act", "silu") != "silu":
        raise InputError(f"{where}: hidden_act {cfg.get('hidden_act')!r} is not built "
                         "(only silu, SwiGLU)")
    hidden, heads = _int(cfg, "hidden_size", where), _int(cfg, "num_attention_heads", where)
    head_dim = cfg.get("head_dim") or (hidden // heads if heads and hidden % heads == 0 else 0)
    context = cfg.get("max_position_embeddings", DEFAULT_CONTEXT)
    return LLMConfig(
        name=name, architecture=arch, hidden_size=hidden,
        intermediate_size=_int(cfg, "intermediate_size", where),
        num_hidden_layers=_int(cfg, "num_hidden_layers", where),
        num_attention_heads=heads,
        num_key_value_heads=cfg.get("num_key_value_heads") or heads,
        head_dim=head_dim, vocab_size=_int(cfg, "vocab_size", where),
        rms_norm_eps=float(cfg.get("rms_norm_eps", 1e-6)), rope_theta=_rope_theta(cfg, where),
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        attention_bias=ARCHITECTURES[arch] or bool(cfg.get("attention_bias", False)),
        context_window_size=min(int(context) if isinstance(context, int) else DEFAULT_CONTEXT,
                                MAX_CONTEXT))


# Built-in configs (seeded weights): a tiny one for tests, a ~110M-parameter one for benchmarks
# (the shape of the ~125M Llama the kernel issue measures llama.cpp on)
BUILTIN: dict[str, LLMConfig] = {
    "llama-tiny": LLMConfig("llama-tiny", "LlamaForCausalLM", hidden_size=128,
                            intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                            num_key_value_heads=2, head_dim=32, vocab_size=512,
                            context_window_size=2048),
    "llama-100m": LLMConfig("llama-100m", "LlamaForCausalLM", hidden_size=768,
                            intermediate_size=2048, num_hidden_layers=12,
                            num_attention_heads=12, num_key_value_heads=4, head_dim=64,
                            vocab_size=32000, context_window_size=4096),
}
