"""Decode attention over the paged KV cache, parallel over slices of the context: minigraph's
kernel in place of TVM 0.27's ``_attention_decode_cpu`` (same signature, same results).

Decode has one query row per sequence, so a task per (sequence, KV head) would leave cores idle
and read each page's K and V in 4 KiB pieces the hardware prefetcher does not follow. Tasks are
instead CHUNKS slices of each sequence's pages: a slice reads whole pages (every KV head) in
order, prefetching its next page while this one is computed, and keeps a partial state (output,
running max, sum) per query head. The slices' states are merged after, in base 2 as the block
update computes them (attention_common.py).
"""
from __future__ import annotations

from tvm.script import tirx as T

from .attention_common import (
    EMPTY,
    LANES,
    LOG2E,
    NO_ROPE,
    PAGE,
    attend_block,
    exp2,
    kernel_attrs,
    tile_state,
)

# TVMScript is imported at the top (seconds): only attention.py imports this module
CHUNKS = 8            # decode tasks per sequence: slices of its pages, merged after
DECODE = (f"attention_decode: parallel over sequence x {CHUNKS} KV slices (whole pages, the "
          "next prefetched), vectorised over head_dim, slices merged")


def _page(h_kv: int, h_q: int, d: int):
    """One page of a slice: every KV head's 16 keys against its group of query heads (the
    last page of the sequence holds last_len keys); the slice's next page prefetched."""
    group = h_q // h_kv
    attend = attend_block(d, group, prefetch=True)

    @T.macro
    def page(pages, page_indptr, page_values, last_len, b, p0, p1, pg, qt, s, o, m, l, lim, acc):
        for r in T.serial(h_q):
            lim[r] = T.if_then_else(p0 + pg == page_indptr[b + 1] - 1, last_len[b], PAGE)
        for h in T.serial(h_kv):
            kblk = T.decl_buffer((PAGE, d), "float32", data=pages.data, elem_offset=(
                page_values[p0 + pg] * 2 * h_kv + h) * PAGE * d)
            vblk = T.decl_buffer((PAGE, d), "float32", data=pages.data, elem_offset=(
                (page_values[p0 + pg] * 2 + 1) * h_kv + h) * PAGE * d)
            # the next page of this slice, fetched while this one is computed
            nxt: T.let[T.int32] = page_values[T.min(p0 + pg + 1, p1 - 1)]
            kpf = T.decl_buffer((PAGE, d), "float32", data=pages.data,
                                elem_offset=(nxt * 2 * h_kv + h) * PAGE * d)
            vpf = T.decl_buffer((PAGE, d), "float32", data=pages.data,
                                elem_offset=((nxt * 2 + 1) * h_kv + h) * PAGE * d)
            attend(qt, kblk, vblk, s, o, m, l, lim, acc, h * group, kpf, vpf)
    return page


def _slice(h_kv: int, h_q: int, d: int):
    """Task t: slice t % CHUNKS of sequence t // CHUNKS's pages, its partial state stored."""
    page, (start, _) = _page(h_kv, h_q, d), tile_state(d, h_q, h_q)

    @T.macro
    def chunk(t, q, pages, page_indptr, page_values, last_len, sm_scale, part_o, part_m, part_l):
        with T.sblock("chunk"):
            T.reads()
            T.writes()
            qt = T.sblock_alloc_buffer((h_q, d), "float32")
            s = T.sblock_alloc_buffer((h_q, PAGE), "float32")
            o = T.sblock_alloc_buffer((h_q, d), "float32")
            m = T.sblock_alloc_buffer((h_q,), "float32")
            l = T.sblock_alloc_buffer((h_q,), "float32")
            lim = T.sblock_alloc_buffer((h_q,), "int32")
            acc = T.sblock_alloc_buffer((LANES + 2,), "float32")
            b: T.let[T.int32] = t // CHUNKS
            npages: T.let[T.int32] = page_indptr[b + 1] - page_indptr[b]
            p0: T.let[T.int32] = page_indptr[b] + t % CHUNKS * npages // CHUNKS
            p1: T.let[T.int32] = page_indptr[b] + (t % CHUNKS + 1) * npages // CHUNKS
            start(q, b, 1, 0, sm_scale * T.float32(LOG2E), qt, o, m, l)
            for pg in T.serial(p1 - p0):
                page(pages, page_indptr, page_values, last_len, b, p0, p1, pg, qt, s, o, m, l,
                     lim, acc)
            for r in T.serial(h_q):
                part_m[b, t % CHUNKS, r] = m[r]
                part_l[b, t % CHUNKS, r] = l[r]
                for dd in T.vectorized(d):
                    part_o[b, t % CHUNKS, r, dd] = o[r, dd]
    return chunk


def _merge(h_q: int, d: int):
    """Row t (sequence t // h_q, query head t % h_q): its CHUNKS partial states merged into
    the output and lse (a slice with no key holds max EMPTY and sum 0, and weighs nothing)."""
    @T.macro
    def merge(t, part_o, part_m, part_l, output, lse):
        with T.sblock("merge"):
            T.reads()
            T.writes()
            o = T.sblock_alloc_buffer((d,), "float32")
            acc = T.sblock_alloc_buffer((4,), "float32")
            acc[0] = T.float32(EMPTY)
            acc[1] = T.float32(0)
            for c in T.serial(CHUNKS):
                acc[0] = T.max(acc[0], part_m[t // h_q, c, t % h_q])
            for dd in T.vectorized(d):
                o[dd] = T.float32(0)
            for c in T.serial(CHUNKS):
                acc[2] = exp2(part_m[t // h_q, c, t % h_q] - acc[0])
                acc[1] = acc[1] + part_l[t // h_q, c, t % h_q] * acc[2]
                for dd in T.vectorized(d):
                    o[dd] = o[dd] + part_o[t // h_q, c, t % h_q, dd] * acc[2]
            acc[3] = T.if_then_else(acc[1] > T.float32(0), T.float32(1) / acc[1], T.float32(0))
            for dd in T.vectorized(d):
                output[t // h_q, t % h_q, dd] = o[dd] * acc[3]
            lse[t // h_q, t % h_q] = T.if_then_else(
                acc[1] > T.float32(0), acc[0] + T.log2(acc[1]), T.float32(EMPTY))
    return merge


def decode_kernel(h_kv: int, h_q: int, d: int):
    """Decode over the pages (``_attention_decode_cpu``'s signature): tasks are (sequence,
    one of CHUNKS slices of its pages), each reading whole pages (every KV head) in order and
    prefetching the next; the slices' partial states are merged after."""
    chunk, merge = _slice(h_kv, h_q, d), _merge(h_q, d)

    @T.prim_func(s_tir=True)
    def mg_attention_decode(
            var_q: T.handle, var_pages: T.handle, var_page_indptr: T.handle,
            var_page_values: T.handle, var_length_info: T.handle, _k_rope: T.handle,
            _q_rope: T.handle, var_output: T.handle, var_lse: T.handle, rotary_mode: T.int32,
            rope_scale: T.float32, rope_theta: T.float32, sm_scale: T.float32):
        T.func_attr(kernel_attrs(DECODE))
        batch, nnz, max_pages = T.int32(), T.int32(), T.int32()
        e_pi, e_pv, e_len = T.int32(), T.int32(), T.int32()
        q = T.match_buffer(var_q, (batch, h_q, d), "float32")
        pages = T.match_buffer(var_pages, (max_pages, 2, h_kv, PAGE, d), "float32")
        page_indptr = T.match_buffer(var_page_indptr, (batch + 1,), "int32", elem_offset=e_pi)
        page_values = T.match_buffer(var_page_values, (nnz,), "int32", elem_offset=e_pv)
        last_len = T.match_buffer(var_length_info, (batch,), "int32", elem_offset=e_len)
        output = T.match_buffer(var_output, (batch, h_q, d), "float32")
        lse = T.match_buffer(var_lse, (batch, h_q), "float32")
        assert rotary_mode == 0, NO_ROPE
        part_o = T.sblock_alloc_buffer((batch, CHUNKS, h_q, d), "float32")
        part_m = T.sblock_alloc_buffer((batch, CHUNKS, h_q), "float32")
        part_l = T.sblock_alloc_buffer((batch, CHUNKS, h_q), "float32")
        for t in T.parallel(batch * CHUNKS):
            chunk(t, q, pages, page_indptr, page_values, last_len, sm_scale, part_o, part_m,
                  part_l)
        # the merge is serial: a second parallel region costs more than its ~2 us of work
        for t in T.serial(batch * h_q):
            merge(t, part_o, part_m, part_l, output, lse)
    return mg_attention_decode
