"""The decoder as a ``relax.frontend.nn`` module: embed / prefill / decode / KV-cache creation,
the four functions of TVM's ``optimize_llm`` tutorial, with minigraph's packed linear layers.

Parameters are named as Hugging Face names them, except two horizontal fusions (one kernel
each, one pass over the activations): ``self_attn.qkv_proj`` (q, k, v concatenated by output
rows) and ``mlp.gate_up_proj`` (gate, up). Every linear weight is packed ``[ceil(N/P), K, P]``
(kernels.py); ``lm_head.weight`` is a packed copy of the embedding when they are tied.
Attention is the paged KV cache's, called through ``attention_with_fused_qkv``: the cache TVM's
``TIRPagedKVCache`` creates for an llvm target (rotary embedding applied as keys are appended,
RoPE in Hugging Face's rotate-half convention, GQA head h -> h // group), with minigraph's
parallel, vectorised attention and RoPE kernels (attention.py) in place of TVM's serial ones;
``CausalLM.attention_kernels = "tvm"`` builds TVM's kernels instead.
"""
from __future__ import annotations

from typing import Any

from tvm import te
from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import Tensor, op
from tvm.relax.frontend.nn.llm.kv_cache import PagedKVCache

from .attention import paged_kv_cache
from .config import LLMConfig
from .kernels import linear_te

# TVM's Relax is imported at the top (seconds): only build.py imports this module

FUNCTIONS = ("embed", "prefill", "decode", "create_tir_paged_kv_cache")


class PackedLinear(nn.Module):
    """``nn.Linear`` over a packed weight: ``y = x @ W.T (+ b)`` as one TE compute."""

    def __init__(self, in_features: int, out_features: int, lanes: int, bias: bool = False):
        self.out_features = out_features
        self.weight = nn.Parameter((-(-out_features // lanes), in_features, lanes), "float32")
        self.bias = nn.Parameter((out_features,), "float32") if bias else None

    def forward(self, x: Tensor) -> Tensor:
        n = self.out_features
        y = op.tensor_expr_op(lambda a, w: linear_te(a, w, n), "linear", [x, self.weight])
        return y + self.bias if self.bias is not None else y


class Attention(nn.Module):
    def __init__(self, c: LLMConfig, lanes: int):
        self.c = c
        self.qkv_proj = PackedLinear(c.hidden_size, c.qkv_features, lanes, c.attention_bias)
        self.o_proj = PackedLinear(c.num_attention_heads * c.head_dim, c.hidden_size, lanes)

    def forward(self, x: Tensor, cache: PagedKVCache, layer: int) -> Tensor:
        c = self.c
        b, s, _ = x.shape
        qkv = op.reshape(self.qkv_proj(x),
                         (b, s, c.num_attention_heads + 2 * c.num_key_value_heads, c.head_dim))
        out = cache.attention_with_fused_qkv(layer, qkv, c.num_attention_heads,
                                             sm_scale=c.head_dim ** -0.5)
        return self.o_proj(op.reshape(out, (b, s, c.num_attention_heads * c.head_dim)))


class MLP(nn.Module):
    def __init__(self, c: LLMConfig, lanes: int):
        self.gate_up_proj = PackedLinear(c.hidden_size, 2 * c.intermediate_size, lanes)
        self.down_proj = PackedLinear(c.intermediate_size, c.hidden_size, lanes)

    def forward(self, x: Tensor) -> Tensor:
        gate, up = op.split(self.gate_up_proj(x), 2, axis=-1)
        return self.down_proj(op.silu(gate) * up)


class DecoderLayer(nn.Module):
    def __init__(self, c: LLMConfig, lanes: int):
        self.self_attn = Attention(c, lanes)
        self.mlp = MLP(c, lanes)
        self.input_layernorm = nn.RMSNorm(c.hidden_size, -1, c.rms_norm_eps, bias=False)
        self.post_attention_layernorm = nn.RMSNorm(c.hidden_size, -1, c.rms_norm_eps,
                                                   bias=False)

    def forward(self, x: Tensor, cache: PagedKVCache, layer: int) -> Tensor:
        x = x + self.self_attn(self.input_layernorm(x), cache, layer)
        return x + self.mlp(self.post_attention_layernorm(x))


class Decoder(nn.Module):
    def __init__(self, c: LLMConfig, lanes: int):
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = nn.ModuleList([DecoderLayer(c, lanes) for _ in range(c.num_hidden_layers)])
        self.norm = nn.RMSNorm(c.hidden_size, -1, c.rms_norm_eps, bias=False)

    def forward(self, x: Tensor, cache: PagedKVCache) -> Tensor:
        for i, layer in enumerate(self.layers):
            x = layer(x, cache, i)
        return self.norm(x)


class CausalLM(nn.Module):
    """embed(ids) -> [s, hidden]; prefill(embeds [1, s, hidden], cache) -> logits of the last
    position [1, 1, vocab]; decode(embeds [1, 1, hidden], cache) -> [1, 1, vocab]."""

    def __init__(self, c: LLMConfig, lanes: int, target: Any):
        self.c, self.target = c, target
        self.model = Decoder(c, lanes)
        self.lm_head = PackedLinear(c.hidden_size, c.vocab_size, lanes)

    def embed(self, input_ids: Tensor) -> Tensor:
        return self.model.embed_tokens(input_ids)

    def prefill(self, input_embed: Tensor, paged_kv_cache: PagedKVCache):
        def last(x: te.Tensor) -> te.Tensor:  # the last position only: [b, 1, hidden]
            b, s, d = x.shape
            return te.compute((b, 1, d), lambda i, _, k: x[i, s - 1, k], name="index")
        h = self.model(input_embed, paged_kv_cache)
        h = op.tensor_expr_op(last, name_hint="index", args=[h])
        return self.lm_head(h), paged_kv_cache

    def decode(self, input_embed: Tensor, paged_kv_cache: PagedKVCache):
        return self.lm_head(self.model(input_embed, paged_kv_cache)), paged_kv_cache

    # whose attention kernels the KV cache gets: "minigraph" (attention.py: parallel, vectorised)
    # or "tvm" (TIRPagedKVCache's serial ones, kept to compare against)
    attention_kernels = "minigraph"

    def create_tir_paged_kv_cache(self, max_batch_size, max_total_seq_len, prefill_chunk_size,
                                  page_size) -> PagedKVCache:
        """The paged KV cache (TIRPagedKVCache's ``paged_attention_kv_cache_create`` call)
        with ``attention_kernels``' attention kernels."""
        return paged_kv_cache(self.c, self.target, max_batch_size, max_total_seq_len,
                              prefill_chunk_size, page_size, kernels=self.attention_kernels)

    def spec(self) -> "nn.spec.ModuleSpec":
        """export_tvm's spec: the prompt length symbolic ("seq_len"), params packed."""
        h = self.c.hidden_size
        packed = {"param_mode": "packed", "effect_mode": "none"}
        cache = nn.spec.Object(object_type=PagedKVCache)
        raw = {
            "embed": {"input_ids": nn.spec.Tensor(["seq_len"], "int32"), "$": packed},
            "prefill": {"input_embed": nn.spec.Tensor([1, "seq_len", h], "float32"),
                        "paged_kv_cache": cache, "$": packed},
            "decode": {"input_embed": nn.spec.Tensor([1, 1, h], "float32"),
                       "paged_kv_cache": cache, "$": packed},
            "create_tir_paged_kv_cache": {
                "max_batch_size": int, "max_total_seq_len": int, "prefill_chunk_size": int,
                "page_size": int, "$": {"param_mode": "none", "effect_mode": "none"}},
        }
        return nn.spec.ModuleSpec.from_raw(raw, self)
