"""Hugging Face tensors -> the build's parameters (model.py's names and packed layouts).

Two horizontal fusions (``qkv_proj`` = q, k, v stacked by output rows; ``gate_up_proj`` =
gate, up) and every linear weight packed ``[ceil(N/P), K, P]`` (kernels.pack_weight). Norms and
the embedding are kept as they are. A tied ``lm_head`` is a packed copy of the embedding (the
embedding's own layout is the one a row lookup wants; the head's is the one a GEMV streams).
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from ..errors import InputError
from .config import LLMConfig
from .kernels import pack_weight


def _layer(c: LLMConfig, t: Mapping[str, np.ndarray], i: int, lanes: int) -> dict[str, np.ndarray]:
    hf, mg = f"model.layers.{i}.", f"model.layers.{i}."
    a = hf + "self_attn."
    out = {
        mg + "input_layernorm.weight": t[hf + "input_layernorm.weight"],
        mg + "self_attn.qkv_proj.weight": pack_weight(
            np.concatenate([t[a + "q_proj.weight"], t[a + "k_proj.weight"],
                            t[a + "v_proj.weight"]]), lanes),
        mg + "self_attn.o_proj.weight": pack_weight(t[a + "o_proj.weight"], lanes),
        mg + "post_attention_layernorm.weight": t[hf + "post_attention_layernorm.weight"],
        mg + "mlp.gate_up_proj.weight": pack_weight(
            np.concatenate([t[hf + "mlp.gate_proj.weight"], t[hf + "mlp.up_proj.weight"]]),
            lanes),
        mg + "mlp.down_proj.weight": pack_weight(t[hf + "mlp.down_proj.weight"], lanes),
    }
    if c.attention_bias:
        out[mg + "self_attn.qkv_proj.bias"] = np.concatenate(
            [t[a + "q_proj.bias"], t[a + "k_proj.bias"], t[a + "v_proj.bias"]])
    return out


def build_params(c: LLMConfig, tensors: Mapping[str, np.ndarray], lanes: int
                 ) -> dict[str, np.ndarray]:
    """The build's parameters by name, float32, in no particular order (export order is the
    executable's: build.py writes them in it)."""
    try:
        out = {"model.embed_tokens.weight": tensors["model.embed_tokens.weight"]}
        for i in range(c.num_hidden_layers):
            out.update(_layer(c, tensors, i, lanes))
        out["model.norm.weight"] = tensors["model.norm.weight"]
        head = tensors["model.embed_tokens.weight" if c.tie_word_embeddings else "lm_head.weight"]
    except KeyError as err:
        raise InputError(f"the weights lack tensor {err.args[0]!r}") from None
    out["lm_head.weight"] = pack_weight(head, lanes)
    return {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in out.items()}


def ordered(params: Mapping[str, np.ndarray], names_shapes: list[tuple[str, tuple[int, ...]]]
            ) -> list[tuple[str, np.ndarray]]:
    """The parameters in the executable's order (export_tvm's), each checked for its shape."""
    out = []
    for name, shape in names_shapes:
        if name not in params:
            raise InputError(f"no weight for the executable's parameter {name!r}")
        if tuple(params[name].shape) != tuple(shape):
            raise InputError(f"weight {name!r} has shape {list(params[name].shape)}, the "
                             f"executable expects {list(shape)}")
        out.append((name, params[name]))
    return out
