"""The paged KV cache with minigraph's attention kernels: the
``vm.builtin.paged_attention_kv_cache_create`` call TVM 0.27's ``TIRPagedKVCache`` makes for an
llvm target (the same 28 argument places, which minigraph/llm/inside.py names), minigraph's
kernels in the four attention places and the RoPE place (``tir_split_rotary``, rope.py), TVM's
in the others (append, page copies, tree and sliding-window attention).

TVM's llvm branch gives the cache scalar ``T.serial`` kernels (``_attention_decode_cpu``,
``_attention_prefill_cpu``, ``_attention_prefill_ragged_cpu``, ``_merge_state_inplace_cpu``):
one thread, no vector register, so attention's share of a decode step grows with the context
(and RoPE, which computes cos and sin for every element, costs more than prefill attention).
minigraph's are parallel and vectorised over head_dim: decode over slices of the context
(attention_decode.py), prefill over (sequence, KV head, tile of query positions) and the merge
over (token, head) (attention_prefill.py), sharing one block update (attention_common.py).
What the cache calls (gdb on a llama-tiny library): a new sequence's prefill, the ragged kernel
only; decode, the paged decode kernel only (the token is appended first); a prefill onto cached
tokens, ragged (causal, over the new tokens), paged prefill (over the cached ones), merge.
RoPE inside attention (``rotary_mode`` 1, sliding-window caches only) is not implemented: the
kernels assert ``rotary_mode == 0``; the builder makes no sliding-window cache.
"""
from __future__ import annotations

from typing import Any

from tvm import relax as rx
from tvm.ir import StringImm
from tvm.relax.frontend.nn.llm import kv_cache as tvm_kv

from ..errors import BuildError
from .attention_decode import decode_kernel
from .attention_prefill import merge_kernel, prefill_paged_kernel, prefill_ragged_kernel
from .config import LLMConfig
from .rope import rope_kernel

# TVM's Relax and TVMScript are imported at the top (seconds): only model.py imports this module
SLIDING_WINDOW = 1024  # TVM's layer_sliding_window_size default (unused: no sliding window)
KERNELS = ("minigraph", "tvm")


def _create_args(c: LLMConfig, sizes: list, page_size: Any) -> list:
    """``paged_attention_kv_cache_create``'s arguments as TIRPagedKVCache's llvm branch makes
    them (multi-head attention, every layer; RoPE applied when K is appended; no sliding
    window, no disaggregation), minigraph's kernels in the four attention places and RoPE's."""
    bb, tv = rx.BlockBuilder.current(), tvm_kv
    h_q, h_kv, d, layers, f32 = (c.num_attention_heads, c.num_key_value_heads, c.head_dim,
                                 c.num_hidden_layers, "float32")

    def tir(func, name: str) -> rx.Tuple:
        return rx.Tuple([StringImm("tirx"), bb.add_func(func, name)])
    return [
        rx.ShapeExpr([*sizes, 0, SLIDING_WINDOW]), rx.ShapeExpr([0, layers]),
        rx.prim_value(h_q), rx.prim_value(h_kv), rx.prim_value(d), rx.prim_value(d),
        rx.ShapeExpr([int(tv.AttnKind.MHA)] * layers), rx.prim_value(False),
        rx.prim_value(tv.RopeMode.NORMAL), rx.prim_value(1), rx.prim_value(c.rope_theta),
        rx.prim_value(0), rx.op.zeros((), f32),
        bb.add_func(tv._kv_cache_transpose_append(h_kv, d, f32), "kv_cache_transpose_append"),
        bb.add_func(tv._kv_cache_transpose_append_mla(d, f32), "kv_cache_transpose_append_mla"),
        tir(prefill_ragged_kernel(h_kv, h_q, d), "mg_attention_prefill_ragged"),
        tir(prefill_paged_kernel(h_kv, h_q, d), "mg_attention_prefill_paged"),
        tir(decode_kernel(h_kv, h_q, d), "mg_attention_decode"),
        tir(tv._attention_prefill_cpu(h_kv, h_q, d, f32, True, {},
                                      sliding_window_size=SLIDING_WINDOW),
            "tir_attention_prefill_cpu_sliding_window"),
        tir(tv._attention_decode_cpu(h_kv, h_q, d, f32, True, {}),
            "tir_attention_decode_cpu_sliding_window"),
        tir(tv.tree_attn_cpu(h_kv, h_q, d, f32, {}), "tir_attention_prefill_with_tree_mask_cpu"),
        tir(tv.tree_attn_with_paged_kv_cache_cpu(h_kv, h_q, d, f32, {}),
            "tir_attention_prefill_with_tree_mask_with_paged_kv_cache_cpu"),
        rx.Tuple([]),  # no MLA prefill
        rx.Tuple([bb.add_func(merge_kernel(d), "mg_attention_merge_state")]),
        bb.add_func(rope_kernel(c.rope_theta, 1, d, h_q, h_kv), "mg_split_rotary"),
        bb.add_func(tv._copy_single_page_cpu(h_kv, page_size, d, f32),
                    "kv_cache_copy_single_page_cpu"),
        bb.add_func(tv._kv_cache_debug_get_kv(layers, h_kv, d, f32), "kv_cache_debug_get_kv"),
        bb.add_func(tv._compact_kv_copy_cpu(h_kv, d, f32), "kv_cache_compact_kv_copy_cpu"),
    ]


class MinigraphPagedKVCache(tvm_kv.PagedKVCache):
    """TIRPagedKVCache (llvm target) with minigraph's attention kernels."""

    def __init__(self, c: LLMConfig, max_batch_size, max_total_seq_len, prefill_chunk_size,
                 page_size, name: str = "paged_kv_cache") -> None:
        sizes = [max_batch_size, max_total_seq_len, prefill_chunk_size, page_size]
        super().__init__(_expr=rx.call_pure_packed(
            "vm.builtin.paged_attention_kv_cache_create", *_create_args(c, sizes, page_size),
            ty_args=rx.AnyType()), _name=name)


def paged_kv_cache(c: LLMConfig, target, max_batch_size, max_total_seq_len, prefill_chunk_size,
                   page_size, kernels: str = "minigraph") -> tvm_kv.PagedKVCache:
    """The model's KV cache: minigraph's attention and RoPE kernels, or TVM's
    (``kernels="tvm"``, TIRPagedKVCache as TVM builds it for an llvm target: the serial ones)."""
    if kernels not in KERNELS:
        raise BuildError(f"attention kernels {kernels!r}: not one of {', '.join(KERNELS)}")
    if kernels == "minigraph" and str(target.kind.name) == "llvm":
        return MinigraphPagedKVCache(c, max_batch_size, max_total_seq_len, prefill_chunk_size,
                                     page_size)
    return tvm_kv.TIRPagedKVCache(
        attn_kind="mha", max_batch_size=max_batch_size, max_total_seq_len=max_total_seq_len,
        prefill_chunk_size=prefill_chunk_size, page_size=page_size, support_sliding_window=0,
        layer_partition=rx.ShapeExpr([0, c.num_hidden_layers]),
        num_hidden_layers=c.num_hidden_layers, num_attention_heads=c.num_attention_heads,
        num_key_value_heads=c.num_key_value_heads, qk_head_dim=c.head_dim,
        v_head_dim=c.head_dim, mla_original_qk_head_dim=0, mla_original_v_head_dim=0,
        rope_mode=tvm_kv.RopeMode.NORMAL, rope_scale=1, rope_theta=c.rope_theta,
        rope_scaling={}, rope_ext_factors=rx.prim_value(0), rotary_dim=c.head_dim,
        dtype="float32", target=target, enable_disaggregation=False)
