"""Prefill attention and the state merge: minigraph's kernels in place of TVM 0.27's
``_attention_prefill_ragged_cpu`` (new tokens against themselves), ``_attention_prefill_cpu``
(new tokens against the cached pages) and ``_merge_state_inplace_cpu`` (same signatures, same
results).

Prefill tasks are (sequence, KV head, a tile of about TILE_ROWS query rows: whole groups of the
query heads that share the KV head, times consecutive positions): a tile reads each block of 16
keys once for all its rows (attention_common.py's block update), and under the causal mask stops
at the block holding its last row's own position. The merge is parallel over (token, head).
"""
from __future__ import annotations

from tvm.script import tirx as T

from .attention_common import (
    LANES,
    LOG2E,
    NO_ROPE,
    PAGE,
    attend_block,
    causal_limits,
    exp2,
    kernel_attrs,
    tile_state,
)

# TVMScript is imported at the top (seconds): only attention.py imports this module
TILE_ROWS = 16        # query rows (positions x heads of a group) per prefill task
TILES = ("parallel over sequence x KV head x tile of {tq} positions ({rows} query rows), blocks "
         "of 16 keys, vectorised over head_dim")
MERGE = "attention_merge_state: parallel over token x head, vectorised over head_dim"


def _blocks(h_kv: int, d: int, rows: int, tq: int, group: int, paged: bool):
    """Every block of keys a tile sees, through the block update. Keys come in blocks of 16:
    page ``table[base + kb]`` of ``kdata`` (K and V, ``paged``), or rows ``base + 16 kb ...``
    of ``kdata`` / ``vdata`` ([len, h_kv, d], ragged)."""
    attend, limits = attend_block(d, rows), causal_limits(rows, group)

    @T.macro
    def blocks(h, first, qlen, kdata, vdata, table, base, klen, causal, qt, s, o, m, l, lim, acc):
        # causal: no block past the last row's own position
        for kb in T.serial((T.if_then_else(causal > 0, T.max(T.min(
                klen - qlen + first + T.min(tq, qlen - first), klen), 0), klen)
                + PAGE - 1) // PAGE):
            if paged:
                kblk = T.decl_buffer((PAGE, d), "float32", data=kdata, elem_offset=(
                    table[base + kb] * 2 * h_kv + h) * PAGE * d)
                vblk = T.decl_buffer((PAGE, d), "float32", data=kdata, elem_offset=(
                    (table[base + kb] * 2 + 1) * h_kv + h) * PAGE * d)
            else:
                kblk = T.decl_buffer((PAGE, d), "float32", data=kdata, strides=(
                    h_kv * d, 1), elem_offset=((base + kb * PAGE) * h_kv + h) * d)
                vblk = T.decl_buffer((PAGE, d), "float32", data=vdata, strides=(
                    h_kv * d, 1), elem_offset=((base + kb * PAGE) * h_kv + h) * d)
            limits(lim, causal, klen, qlen, first, T.min(tq, qlen - first),
                   kb * PAGE, T.min(PAGE, klen - kb * PAGE))
            attend(qt, kblk, vblk, s, o, m, l, lim, acc, 0, kblk, vblk)
    return blocks


def _prefill_task(h_kv: int, group: int, d: int, paged: bool):
    """(query positions per task, the task): state, queries, every block of keys, output."""
    tq = max(1, TILE_ROWS // group)  # query positions: about TILE_ROWS rows, whole groups
    rows = tq * group
    (start, store), blocks = tile_state(d, group, rows), _blocks(h_kv, d, rows, tq, group, paged)

    @T.macro
    def task(t, tiles, q, q0, qlen, kdata, vdata, table, base, klen, causal, sm_scale, output, lse):
        with T.sblock("tile"):
            T.reads()
            T.writes()
            qt = T.sblock_alloc_buffer((rows, d), "float32")
            s = T.sblock_alloc_buffer((rows, PAGE), "float32")
            o = T.sblock_alloc_buffer((rows, d), "float32")
            m = T.sblock_alloc_buffer((rows,), "float32")
            l = T.sblock_alloc_buffer((rows,), "float32")
            lim = T.sblock_alloc_buffer((rows,), "int32")
            acc = T.sblock_alloc_buffer((LANES + 2,), "float32")
            h: T.let[T.int32] = t // tiles % h_kv
            first: T.let[T.int32] = t % tiles * tq
            if first < qlen:
                start(q, q0 + first, T.min(tq, qlen - first), h, sm_scale * T.float32(LOG2E),
                      qt, o, m, l)
                blocks(h, first, qlen, kdata, vdata, table, base, klen, causal, qt, s, o, m, l,
                       lim, acc)
                store(output, lse, q0 + first, T.min(tq, qlen - first), h, o, m, l, acc)
    return tq, task


def prefill_paged_kernel(h_kv: int, h_q: int, d: int):
    """Prefill over the pages (``_attention_prefill_cpu``'s signature, no sliding window):
    tasks are (sequence, KV head, tile of query positions); one page is one block."""
    tq, task = _prefill_task(h_kv, h_q // h_kv, d, paged=True)
    what = "attention_prefill (paged): " + TILES.format(tq=tq, rows=tq * (h_q // h_kv))

    @T.prim_func(s_tir=True)
    def mg_attention_prefill_paged(
            var_q: T.handle, var_q_indptr: T.handle, var_pages: T.handle,
            var_page_indptr: T.handle, var_page_values: T.handle, var_length_info: T.handle,
            _k_rope: T.handle, _q_rope: T.handle, var_output: T.handle, var_lse: T.handle,
            causal: T.int32, rotary_mode: T.int32, rope_scale: T.float32,
            rope_theta: T.float32, sm_scale: T.float32):
        T.func_attr(kernel_attrs(what))
        batch, total, nnz, max_pages = T.int32(), T.int32(), T.int32(), T.int32()
        e_qi, e_pi, e_pv, e_len = T.int32(), T.int32(), T.int32(), T.int32()
        q = T.match_buffer(var_q, (total, h_q, d), "float32")
        q_indptr = T.match_buffer(var_q_indptr, (batch + 1,), "int32", elem_offset=e_qi)
        pages = T.match_buffer(var_pages, (max_pages, 2, h_kv, PAGE, d), "float32")
        page_indptr = T.match_buffer(var_page_indptr, (batch + 1,), "int32", elem_offset=e_pi)
        page_values = T.match_buffer(var_page_values, (nnz,), "int32", elem_offset=e_pv)
        last_len = T.match_buffer(var_length_info, (batch,), "int32", elem_offset=e_len)
        output = T.match_buffer(var_output, (total, h_q, d), "float32")
        lse = T.match_buffer(var_lse, (total, h_q), "float32")
        assert rotary_mode == 0, NO_ROPE
        for t in T.parallel(batch * h_kv * ((total + tq - 1) // tq)):
            b: T.let[T.int32] = t // (h_kv * ((total + tq - 1) // tq))
            npages: T.let[T.int32] = page_indptr[b + 1] - page_indptr[b]
            task(t, (total + tq - 1) // tq, q, q_indptr[b], q_indptr[b + 1] - q_indptr[b],
                 pages.data, pages.data, page_values, page_indptr[b],
                 T.if_then_else(npages > 0, (npages - 1) * PAGE + last_len[b], 0), causal,
                 sm_scale, output, lse)
    return mg_attention_prefill_paged


def prefill_ragged_kernel(h_kv: int, h_q: int, d: int):
    """Prefill of new tokens against themselves (``_attention_prefill_ragged_cpu``'s
    signature): tasks are (sequence, KV head, tile of query positions); blocks of 16 keys."""
    tq, task = _prefill_task(h_kv, h_q // h_kv, d, paged=False)
    what = "attention_prefill_ragged: " + TILES.format(tq=tq, rows=tq * (h_q // h_kv))

    @T.prim_func(s_tir=True)
    def mg_attention_prefill_ragged(
            var_q: T.handle, var_q_indptr: T.handle, var_k: T.handle, var_v: T.handle,
            var_kv_indptr: T.handle, _q_rope: T.handle, var_k_rope: T.handle,
            var_output: T.handle, var_lse: T.handle, causal: T.int32, rotary_mode: T.int32,
            rope_scale: T.float32, rope_theta: T.float32, sm_scale: T.float32):
        T.func_attr(kernel_attrs(what))
        batch, qo_len, kv_len = T.int32(), T.int32(), T.int32()
        e_qi, e_ki, e_kr = T.int32(), T.int32(), T.int32()
        q = T.match_buffer(var_q, (qo_len, h_q, d), "float32")
        q_indptr = T.match_buffer(var_q_indptr, (batch + 1,), "int32", elem_offset=e_qi)
        k = T.match_buffer(var_k, (kv_len, h_kv, d), "float32")
        v = T.match_buffer(var_v, (kv_len, h_kv, d), "float32")
        kv_indptr = T.match_buffer(var_kv_indptr, (batch + 1,), "int32", elem_offset=e_ki)
        T.match_buffer(var_k_rope, (batch,), "int32", elem_offset=e_kr)  # gives `batch`
        output = T.match_buffer(var_output, (qo_len, h_q, d), "float32")
        lse = T.match_buffer(var_lse, (qo_len, h_q), "float32")
        assert rotary_mode == 0, NO_ROPE
        for t in T.parallel(batch * h_kv * ((qo_len + tq - 1) // tq)):
            b: T.let[T.int32] = t // (h_kv * ((qo_len + tq - 1) // tq))
            task(t, (qo_len + tq - 1) // tq, q, q_indptr[b], q_indptr[b + 1] - q_indptr[b],
                 k.data, v.data, kv_indptr, kv_indptr[b], kv_indptr[b + 1] - kv_indptr[b],
                 causal, sm_scale, output, lse)
    return mg_attention_prefill_ragged


def merge_kernel(d: int):
    """Two partial attention states merged into the first (``_merge_state_inplace_cpu``):
    parallel over (token, head), vectorised over head_dim."""
    @T.prim_func(s_tir=True)
    def mg_attention_merge_state(var_v: T.handle, var_s: T.handle, var_v_other: T.handle,
                                 var_s_other: T.handle):
        T.func_attr(kernel_attrs(MERGE))
        n_tok, heads = T.int32(), T.int32()
        v = T.match_buffer(var_v, (n_tok, heads, d), "float32")
        s = T.match_buffer(var_s, (n_tok, heads), "float32")
        v_other = T.match_buffer(var_v_other, (n_tok, heads, d), "float32")
        s_other = T.match_buffer(var_s_other, (n_tok, heads), "float32")
        for t in T.parallel(n_tok * heads):
            with T.sblock("merge"):
                T.reads()
                T.writes()
                acc = T.sblock_alloc_buffer((4,), "float32")
                acc[0] = T.max(s[t // heads, t % heads], s_other[t // heads, t % heads])
                acc[1] = exp2(s[t // heads, t % heads] - acc[0])
                acc[2] = exp2(s_other[t // heads, t % heads] - acc[0])
                acc[3] = T.float32(1) / (acc[1] + acc[2])
                for dd in T.vectorized(d):
                    v[t // heads, t % heads, dd] = (v[t // heads, t % heads, dd] * acc[1]
                                                    + v_other[t // heads, t % heads, dd]
                                                    * acc[2]) * acc[3]
                s[t // heads, t % heads] = T.log2(acc[1] + acc[2]) + acc[0]
    return mg_attention_merge_state
