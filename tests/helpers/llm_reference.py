"""The Hugging Face Llama / Qwen2 forward pass in plain numpy (float64), written from the
``transformers`` modeling code, not from minigraph: the ground truth LLM outputs are checked
against. Only ``LLMConfig``'s field names are shared with the package.

Counterpart: ``LlamaForCausalLM.forward`` / ``Qwen2ForCausalLM.forward`` without a KV cache
(every call recomputes the whole sequence): RMSNorm, rotary embedding in the rotate-half
convention, grouped-query causal attention, SwiGLU MLP, final norm, lm_head or tied embedding.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from minigraph.llm.config import LLMConfig


def rms_norm(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    """x * rsqrt(mean(x^2) + eps) * w over the last axis (LlamaRMSNorm)."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rotate_half(x: np.ndarray) -> np.ndarray:
    """[x1, x2] -> [-x2, x1], halves of the last axis."""
    x1, x2 = np.split(x, 2, axis=-1)
    return np.concatenate([-x2, x1], axis=-1)


def rope(x: np.ndarray, theta: float, positions: np.ndarray) -> np.ndarray:
    """Rotary embedding of x [seq, heads, head_dim] at ``positions`` [seq]
    (apply_rotary_pos_emb with LlamaRotaryEmbedding's default rope)."""
    d = x.shape[-1]
    inv_freq = theta ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    freqs = np.outer(positions.astype(np.float64), inv_freq)        # [seq, d/2]
    emb = np.concatenate([freqs, freqs], axis=-1)[:, None, :]        # [seq, 1, d]
    return x * np.cos(emb) + rotate_half(x) * np.sin(emb)


def _linear(x: np.ndarray, t: Mapping[str, np.ndarray], name: str) -> np.ndarray:
    """x @ W.T (+ b when the checkpoint has ``name.bias``); W is [out, in] as in torch."""
    y = x @ np.asarray(t[name + ".weight"], np.float64).T
    bias = t.get(name + ".bias")
    return y if bias is None else y + np.asarray(bias, np.float64)


def attention(config: LLMConfig, t: Mapping[str, np.ndarray], p: str,
              x: np.ndarray) -> np.ndarray:
    """Causal grouped-query self-attention of x [seq, hidden] in layer prefix ``p``."""
    seq, d = x.shape[0], config.head_dim
    q = _linear(x, t, p + "q_proj").reshape(seq, config.num_attention_heads, d)
    k = _linear(x, t, p + "k_proj").reshape(seq, config.num_key_value_heads, d)
    v = _linear(x, t, p + "v_proj").reshape(seq, config.num_key_value_heads, d)
    pos = np.arange(seq)
    q, k = rope(q, config.rope_theta, pos), rope(k, config.rope_theta, pos)
    group = config.num_attention_heads // config.num_key_value_heads
    future = np.triu(np.ones((seq, seq), dtype=bool), k=1)
    out = np.empty_like(q)
    for h in range(config.num_attention_heads):
        kv = h // group  # repeat_kv: each KV head serves `group` consecutive query heads
        scores = q[:, h] @ k[:, kv].T / np.sqrt(d)
        scores[future] = -np.inf
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        out[:, h] = scores / scores.sum(axis=-1, keepdims=True) @ v[:, kv]
    return _linear(out.reshape(seq, -1), t, p + "o_proj")


def _silu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


def reference_logits(config: LLMConfig, tensors: Mapping[str, np.ndarray],
                     token_ids: Sequence[int]) -> np.ndarray:
    """Logits [seq, vocab] (float64) for every position of ``token_ids``."""
    t, eps = tensors, config.rms_norm_eps
    embed = np.asarray(t["model.embed_tokens.weight"], np.float64)
    x = embed[np.asarray(token_ids, dtype=np.int64)]
    for n in range(config.num_hidden_layers):
        p = f"model.layers.{n}."
        h = rms_norm(x, t[p + "input_layernorm.weight"], eps)
        x = x + attention(config, t, p + "self_attn.", h)
        h = rms_norm(x, t[p + "post_attention_layernorm.weight"], eps)
        gated = _silu(_linear(h, t, p + "mlp.gate_proj")) * _linear(h, t, p + "mlp.up_proj")
        x = x + _linear(gated, t, p + "mlp.down_proj")
    x = rms_norm(x, t["model.norm.weight"], eps)
    head = embed if config.tie_word_embeddings else np.asarray(t["lm_head.weight"], np.float64)
    return x @ head.T


def reference_generate(config: LLMConfig, tensors: Mapping[str, np.ndarray],
                       prompt_ids: Sequence[int], n: int) -> list[int]:
    """``n`` greedy (argmax) tokens after ``prompt_ids``, the full forward recomputed each step."""
    ids, out = list(prompt_ids), []
    for _ in range(n):
        token = int(np.argmax(reference_logits(config, tensors, ids)[-1]))
        out.append(token)
        ids.append(token)
    return out
