"""A "bring your own" LLM executable, made with plain TVM as TVM's ``optimize_llm`` tutorial
makes one (nothing of minigraph's): the tutorial's ``relax.frontend.nn`` Llama with
``nn.Linear`` layers over Hugging Face ``[out, in]`` weights, fused ``qkv_proj`` and
``gate_up_proj``, the attention of ``TIRPagedKVCache`` for an llvm target, ``export_tvm`` with
its four functions, ``tvm.compile`` with the default pipeline and ``export_library``; the
weights saved with ``np.savez`` in ``export_tvm``'s order. ``vm_generate`` drives the
executable with TVM's own VM, as the tutorial's engine does: the cross-check for minigraph.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import tvm
from tvm import relax, te
from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import Tensor, op
from tvm.relax.frontend.nn.llm.kv_cache import PagedKVCache, RopeMode, TIRPagedKVCache
from tvm.runtime import ShapeTuple

from minigraph.llm.config import LLMConfig

TARGET = {"kind": "llvm"}
PAGE_SIZE = 16


class LlamaFFN(nn.Module):
    def __init__(self, c: LLMConfig):
        self.gate_up_proj = nn.Linear(c.hidden_size, 2 * c.intermediate_size, bias=False)
        self.down_proj = nn.Linear(c.intermediate_size, c.hidden_size, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        x1, x2 = op.split(self.gate_up_proj(x), 2, axis=-1)
        return self.down_proj(op.silu(x1) * x2)


class LlamaAttention(nn.Module):
    def __init__(self, c: LLMConfig):
        self.c = c
        self.qkv_proj = nn.Linear(c.hidden_size, c.qkv_features, bias=c.attention_bias)
        self.o_proj = nn.Linear(c.num_attention_heads * c.head_dim, c.hidden_size, bias=False)

    def forward(self, x: Tensor, cache: PagedKVCache, layer_id: int) -> Tensor:
        c = self.c
        b, s, _ = x.shape
        qkv = op.reshape(self.qkv_proj(x),
                         (b, s, c.num_attention_heads + 2 * c.num_key_value_heads, c.head_dim))
        out = cache.attention_with_fused_qkv(layer_id, qkv, c.num_attention_heads,
                                             sm_scale=c.head_dim ** -0.5)
        return self.o_proj(op.reshape(out, (b, s, c.num_attention_heads * c.head_dim)))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, c: LLMConfig):
        self.self_attn = LlamaAttention(c)
        self.mlp = LlamaFFN(c)
        self.input_layernorm = nn.RMSNorm(c.hidden_size, -1, c.rms_norm_eps, bias=False)
        self.post_attention_layernorm = nn.RMSNorm(c.hidden_size, -1, c.rms_norm_eps,
                                                   bias=False)

    def forward(self, x: Tensor, cache: PagedKVCache, layer_id: int) -> Tensor:
        x = x + self.self_attn(self.input_layernorm(x), cache, layer_id)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaModel(nn.Module):
    def __init__(self, c: LLMConfig):
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = nn.ModuleList([LlamaDecoderLayer(c) for _ in range(c.num_hidden_layers)])
        self.norm = nn.RMSNorm(c.hidden_size, -1, c.rms_norm_eps, bias=False)

    def forward(self, x: Tensor, cache: PagedKVCache) -> Tensor:
        for i, layer in enumerate(self.layers):
            x = layer(x, cache, i)
        return self.norm(x)


class LlamaForCausalLM(nn.Module):
    """The tutorial's four functions: embed, prefill (last position's logits), decode and
    create_tir_paged_kv_cache."""

    def __init__(self, c: LLMConfig):
        self.c = c
        self.model = LlamaModel(c)
        self.lm_head = nn.Linear(c.hidden_size, c.vocab_size, bias=False)

    def embed(self, input_ids: Tensor) -> Tensor:
        return self.model.embed_tokens(input_ids)

    def prefill(self, input_embed: Tensor, paged_kv_cache: PagedKVCache):
        def _index(x: te.Tensor) -> te.Tensor:  # the last position: [b, 1, hidden]
            b, s, d = x.shape
            return te.compute((b, 1, d), lambda i, _, k: x[i, s - 1, k], name="index")
        h = op.tensor_expr_op(_index, name_hint="index",
                              args=[self.model(input_embed, paged_kv_cache)])
        return self.lm_head(h), paged_kv_cache

    def decode(self, input_embed: Tensor, paged_kv_cache: PagedKVCache):
        return self.lm_head(self.model(input_embed, paged_kv_cache)), paged_kv_cache

    def create_tir_paged_kv_cache(self, max_batch_size, max_total_seq_len, prefill_chunk_size,
                                  page_size) -> PagedKVCache:
        c = self.c
        return TIRPagedKVCache(
            attn_kind="mha", max_batch_size=max_batch_size, max_total_seq_len=max_total_seq_len,
            prefill_chunk_size=prefill_chunk_size, page_size=page_size,
            support_sliding_window=0, layer_partition=relax.ShapeExpr([0, c.num_hidden_layers]),
            num_hidden_layers=c.num_hidden_layers, num_attention_heads=c.num_attention_heads,
            num_key_value_heads=c.num_key_value_heads, qk_head_dim=c.head_dim,
            v_head_dim=c.head_dim, mla_original_qk_head_dim=0, mla_original_v_head_dim=0,
            rope_mode=RopeMode.NORMAL, rope_scale=1, rope_theta=c.rope_theta, rope_scaling={},
            rope_ext_factors=relax.prim_value(0), rotary_dim=c.head_dim, dtype="float32",
            target=tvm.target.Target(TARGET), enable_disaggregation=False)

    def get_default_spec(self) -> nn.spec.ModuleSpec:
        packed = {"param_mode": "packed", "effect_mode": "none"}
        h, cache = self.c.hidden_size, nn.spec.Object(object_type=PagedKVCache)
        return nn.spec.ModuleSpec.from_raw({
            "embed": {"input_ids": nn.spec.Tensor(["seq_len"], "int32"), "$": packed},
            "prefill": {"input_embed": nn.spec.Tensor([1, "seq_len", h], "float32"),
                        "paged_kv_cache": cache, "$": packed},
            "decode": {"input_embed": nn.spec.Tensor([1, 1, h], "float32"),
                       "paged_kv_cache": cache, "$": packed},
            "create_tir_paged_kv_cache": {
                "max_batch_size": int, "max_total_seq_len": int, "prefill_chunk_size": int,
                "page_size": int, "$": {"param_mode": "none", "effect_mode": "none"}},
        }, self)


def tutorial_param(name: str, t: Mapping[str, np.ndarray], tied: bool) -> np.ndarray:
    """The tutorial module's parameter ``name`` from Hugging Face tensors ``t``."""
    for fused, parts in (("self_attn.qkv_proj.", ("self_attn.q_proj.", "self_attn.k_proj.",
                                                   "self_attn.v_proj.")),
                         ("mlp.gate_up_proj.", ("mlp.gate_proj.", "mlp.up_proj."))):
        if fused in name:
            return np.concatenate([t[name.replace(fused, p)] for p in parts])
    if name == "lm_head.weight" and tied:
        return t["model.embed_tokens.weight"]
    return t[name]


def write_tutorial_executable(out: Path, config: LLMConfig, tensors: Mapping[str, np.ndarray]
                              ) -> tuple[Path, Path]:
    """(exe.so, params.npz) in ``out``: the tutorial's build of ``config`` with ``tensors``."""
    model = LlamaForCausalLM(config)
    mod, named = model.export_tvm(spec=model.get_default_spec())
    exe = tvm.compile(mod, target=tvm.target.Target(TARGET))
    lib, params = out / "exe.so", out / "params.npz"
    exe.export_library(str(lib))
    arrays = {n: np.ascontiguousarray(tutorial_param(n, tensors, config.tie_word_embeddings),
                                      dtype=np.float32) for n, _ in named}
    for n, p in named:
        assert arrays[n].shape == tuple(int(d) for d in p.shape), n
    np.savez(params, **arrays)  # zip order = export order
    return lib, params


def vm_generate(lib: Path, params: Path, prompt: Sequence[int], n: int, context: int = 256
                ) -> tuple[np.ndarray, list[int]]:
    """The tutorial's engine: TVM's VM over the executable, greedy; (prefill logits, tokens)."""
    dev = tvm.cpu()
    vm = relax.VirtualMachine(tvm.runtime.load_module(str(lib)), dev)
    data = np.load(params)
    weights = [tvm.runtime.tensor(data[k], dev) for k in data.files]
    f = {k: tvm.get_global_func(f"vm.builtin.{k}") for k in (
        "kv_state_add_sequence", "kv_state_begin_forward", "kv_state_end_forward", "reshape")}
    cache = vm["create_tir_paged_kv_cache"](ShapeTuple([1]), ShapeTuple([context]),
                                            ShapeTuple([context]), ShapeTuple([PAGE_SIZE]))
    f["kv_state_add_sequence"](cache, 0)

    def step(fn: str, ids: Sequence[int]) -> np.ndarray:
        x = vm["embed"](tvm.runtime.tensor(np.asarray(ids, np.int32), dev), weights)
        x = f["reshape"](x, ShapeTuple([1, len(ids), int(x.shape[-1])]))
        f["kv_state_begin_forward"](cache, ShapeTuple([0]), ShapeTuple([len(ids)]))
        logits = vm[fn](x, cache, weights)[0].numpy().reshape(-1)
        f["kv_state_end_forward"](cache)
        return logits

    first = step("prefill", prompt)
    tokens = [int(np.argmax(first))]
    while len(tokens) < n:
        tokens.append(int(np.argmax(step("decode", [tokens[-1]]))))
    return first, tokens
