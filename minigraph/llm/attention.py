"""Paged-KV attention kernels that use the machine: parallel (over context slices, or KV heads
and query tiles), vectorised over head_dim, for the paged KV cache on CPU.

TVM 0.27's ``TIRPagedKVCache`` on an llvm target gives the cache scalar ``T.serial`` kernels
(``_attention_decode_cpu``, ``_attention_prefill_cpu``, ``_attention_prefill_ragged_cpu``,
``_merge_state_inplace_cpu``): one thread, no vector register, so attention's share of a
decode step grows with the context. ``MinigraphPagedKVCache`` makes the same
``vm.builtin.paged_attention_kv_cache_create`` call (the same argument places, which
minigraph/llm/inside.py names) with minigraph's kernels in the four attention places; the
other places (RoPE, append, page copies, tree and sliding-window attention) hold TVM's. What
the cache calls (gdb on a llama-tiny library): a new sequence's prefill, the ragged kernel
only; decode, the paged decode kernel only (the token is appended first); a prefill onto
cached tokens, ragged (causal, over the new tokens), paged prefill (over the cached ones), merge.

Each kernel computes what TVM's computes: softmax in base 2 (scores times ``sm_scale*log2 e``),
the log-sum-exp ``lse = max + log2(sum)`` beside the output, output 0 and lse -5e4 for a row
with no key. One block update (``_attend``) serves the three: up to 16 keys (one page) against
the G query heads of one KV head (times a tile's query positions in prefill), scores as 16-lane
partial dot products folded in a tree, online softmax rescaled once per block, P.V accumulated
over head_dim in vector registers, 2^x as a polynomial (libm's exp2f is scalar). Decode has one
query row per sequence, so its tasks are CHUNKS slices of the context: each reads whole pages
(every KV head) in order, prefetching its next page (4 KiB blocks of K or V defeat the hardware
prefetcher), and the slices' states are merged after. Prefill tasks are (sequence, KV head, a
tile of query positions). RoPE inside attention (``rotary_mode`` 1, sliding-window caches
only) is not implemented: the kernels assert ``rotary_mode == 0``; the builder makes no
sliding-window cache.
"""
from __future__ import annotations

import math
from typing import Any

from tvm import relax as rx
from tvm.ir import StringImm
from tvm.relax.frontend.nn.llm import kv_cache as tvm_kv
from tvm.script import tirx as T

from ..errors import BuildError
from .config import LLMConfig

# TVM's Relax and TVMScript are imported at the top (seconds): only model.py imports this module
PAGE = 16             # tokens per KV page: TVM's CPU kernels are built for 16 (engine.PAGE_SIZE)
LANES = 16            # float32 lanes of a partial dot product; LLVM halves it on AVX2
LOG2E = math.log2(math.e)
EMPTY = -5e4          # the running max before any key (log2 units), TVM's value
CUTOFF = -64.0        # 2^x under 2^-64 is 0: far below float32 rounding, never subnormal
EXP2_POLY = [math.log(2) ** k / math.factorial(k) for k in range(8)]  # 2^f for |f| <= 1/2
TILE_ROWS = 16        # query rows (positions x heads of a group) per prefill task
CHUNKS = 8            # decode tasks per sequence: slices of its pages, merged after
SLIDING_WINDOW = 1024  # TVM's layer_sliding_window_size default (unused: no sliding window)
KERNELS = ("minigraph", "tvm")


def exp2(x):
    """2^x for x <= 0: n = round(x), 2^(x - n) by Taylor to degree 7 (< 1e-8 relative), 2^n
    written into the exponent bits; exactly 0 under CUTOFF."""
    y = T.max(x, T.float32(CUTOFF))
    n = T.round(y)
    p = T.float32(EXP2_POLY[-1])
    for c in reversed(EXP2_POLY[:-1]):
        p = p * (y - n) + T.float32(c)
    scale = T.reinterpret("float32", T.shift_left(T.Cast("int32", n) + 127, 23))
    return T.Select(x < T.float32(CUTOFF), T.float32(0), p * scale)


def _prefetch(buf, *index):
    """A hint to load the 64-byte line holding buf[index] into every cache level."""
    return T.call_llvm_intrin("void", "llvm.prefetch.p0", T.address_of(buf[index]), 0, 3, 1)


def _attend(d: int, rows: int, prefetch: bool = False):
    """The block update: rows r0 <= r < r0 + rows with lim[r] > 0 see keys kblk[0:lim[r]]
    (scores in s, the state m, l, o in place; acc: 16 lanes + 2 scalars of scratch).
    ``prefetch``: key j's turn of the first row also prefetches row j of kpf and vpf."""
    @T.macro
    def attend(qt, kblk, vblk, s, o, m, l, lim, acc, r0, kpf, vpf):
        for r in T.serial(r0, r0 + rows):
            if lim[r] > 0:
                for j in T.vectorized(PAGE):
                    s[r, j] = T.float32(EMPTY)
                for j in T.serial(lim[r]):
                    if prefetch:  # noqa: SIM102 - decided when parsed; `r == r0` at run time
                        if r == r0:
                            for i in T.serial((d + 15) // 16):
                                T.evaluate(_prefetch(kpf, j, i * 16))
                                T.evaluate(_prefetch(vpf, j, i * 16))
                    for i in T.vectorized(LANES):
                        acc[i] = T.float32(0)
                    for c in T.unroll(d // LANES):
                        for i in T.vectorized(LANES):
                            acc[i] = acc[i] + qt[r, c * LANES + i] * kblk[j, c * LANES + i]
                    for i in T.serial(d % LANES):  # head_dim past a multiple of 16
                        acc[i] = acc[i] + qt[r, d - d % LANES + i] * kblk[j, d - d % LANES + i]
                    for i in T.vectorized(8):  # the fold: lanes pairwise, no reassociation
                        acc[i] = acc[i] + acc[i + 8]
                    for i in T.vectorized(4):
                        acc[i] = acc[i] + acc[i + 4]
                    for i in T.vectorized(2):
                        acc[i] = acc[i] + acc[i + 2]
                    s[r, j] = acc[0] + acc[1]
                for i in T.vectorized(8):
                    acc[i] = T.max(s[r, i], s[r, i + 8])
                for i in T.vectorized(4):
                    acc[i] = T.max(acc[i], acc[i + 4])
                for i in T.vectorized(2):
                    acc[i] = T.max(acc[i], acc[i + 2])
                acc[16] = T.max(m[r], T.max(acc[0], acc[1]))  # the new running max
                acc[17] = exp2(m[r] - acc[16])                 # what the old state is worth now
                for j in T.vectorized(PAGE):
                    s[r, j] = T.Select(j < lim[r], exp2(s[r, j] - acc[16]), T.float32(0))
                for i in T.vectorized(8):
                    acc[i] = s[r, i] + s[r, i + 8]
                for i in T.vectorized(4):
                    acc[i] = acc[i] + acc[i + 4]
                for i in T.vectorized(2):
                    acc[i] = acc[i] + acc[i + 2]
                l[r] = l[r] * acc[17] + (acc[0] + acc[1])
                m[r] = acc[16]
                for dd in T.vectorized(d):
                    o[r, dd] = o[r, dd] * acc[17]
                for j in T.serial(lim[r]):
                    for dd in T.vectorized(d):
                        o[r, dd] = o[r, dd] + s[r, j] * vblk[j, dd]
    return attend


def _tile(d: int, group: int, rows: int):
    """start: the state of ``rows`` query rows (row r: position row0 + r // group, query head
    h * group + r % group) cleared and their queries loaded, scaled; rows past nq positions
    are zeros. store: output o / l and lse of the valid rows."""
    @T.macro
    def start(q, row0, nq, h, scale, qt, o, m, l):
        for r in T.serial(rows):
            m[r] = T.float32(EMPTY)
            l[r] = T.float32(0)
            for dd in T.vectorized(d):
                o[r, dd] = T.float32(0)
                qt[r, dd] = T.float32(0)
            if r // group < nq:
                for dd in T.vectorized(d):
                    qt[r, dd] = q[row0 + r // group, h * group + r % group, dd] * scale

    @T.macro
    def store(output, lse, row0, nq, h, o, m, l, acc):
        for r in T.serial(rows):
            if r // group < nq:
                acc[16] = T.if_then_else(l[r] > T.float32(0), T.float32(1) / l[r], T.float32(0))
                for dd in T.vectorized(d):
                    output[row0 + r // group, h * group + r % group, dd] = o[r, dd] * acc[16]
                lse[row0 + r // group, h * group + r % group] = T.if_then_else(
                    l[r] > T.float32(0), m[r] + T.log2(l[r]), T.float32(EMPTY))
    return start, store


def _limits(rows: int, group: int):
    """lim[r]: keys of the block (k0, brows keys) that row r sees: all of them, or under
    ``causal`` those before its own position (TVM's mask: key < klen - qlen + qi + 1)."""
    @T.macro
    def limits(lim, causal, klen, qlen, first, nq, k0, brows):
        for r in T.serial(rows):
            lim[r] = T.if_then_else(r // group < nq, T.max(T.min(T.if_then_else(
                causal > 0, klen - qlen + first + r // group + 1, klen) - k0, brows), 0), 0)
    return limits


def decode_kernel(h_kv: int, h_q: int, d: int):
    """Decode over the pages (``_attention_decode_cpu``'s signature): tasks are (sequence,
    one of CHUNKS slices of its pages), each reading whole pages (every KV head) in order and
    prefetching the next; the slices' partial states are merged after."""
    group = h_q // h_kv
    attend, (start, _) = _attend(d, group, prefetch=True), _tile(d, h_q, h_q)

    @T.prim_func(s_tir=True)
    def mg_attention_decode(
            var_q: T.handle, var_pages: T.handle, var_page_indptr: T.handle,
            var_page_values: T.handle, var_length_info: T.handle, _k_rope: T.handle,
            _q_rope: T.handle, var_output: T.handle, var_lse: T.handle, rotary_mode: T.int32,
            rope_scale: T.float32, rope_theta: T.float32, sm_scale: T.float32):
        T.func_attr({"tirx.is_scheduled": True, "tirx.noalias": True})
        batch, nnz, max_pages = T.int32(), T.int32(), T.int32()
        e_pi, e_pv, e_len = T.int32(), T.int32(), T.int32()
        q = T.match_buffer(var_q, (batch, h_q, d), "float32")
        pages = T.match_buffer(var_pages, (max_pages, 2, h_kv, PAGE, d), "float32")
        page_indptr = T.match_buffer(var_page_indptr, (batch + 1,), "int32", elem_offset=e_pi)
        page_values = T.match_buffer(var_page_values, (nnz,), "int32", elem_offset=e_pv)
        last_len = T.match_buffer(var_length_info, (batch,), "int32", elem_offset=e_len)
        output = T.match_buffer(var_output, (batch, h_q, d), "float32")
        lse = T.match_buffer(var_lse, (batch, h_q), "float32")
        assert rotary_mode == 0, "minigraph's attention takes keys rotated as they are appended"
        part_o = T.sblock_alloc_buffer((batch, CHUNKS, h_q, d), "float32")
        part_m = T.sblock_alloc_buffer((batch, CHUNKS, h_q), "float32")
        part_l = T.sblock_alloc_buffer((batch, CHUNKS, h_q), "float32")
        for t in T.parallel(batch * CHUNKS):
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
                    for r in T.serial(h_q):
                        lim[r] = T.if_then_else(p0 + pg == page_indptr[b + 1] - 1,
                                                last_len[b], PAGE)
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
                for r in T.serial(h_q):
                    part_m[b, t % CHUNKS, r] = m[r]
                    part_l[b, t % CHUNKS, r] = l[r]
                    for dd in T.vectorized(d):
                        part_o[b, t % CHUNKS, r, dd] = o[r, dd]
        # the merge is serial: a second parallel region costs more than its ~2 us of work
        for t in T.serial(batch * h_q):
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
    return mg_attention_decode


def _prefill_task(h_kv: int, group: int, d: int, paged: bool):
    """(query positions per task, the task): state, queries, every block of keys, output.
    Keys come in blocks of 16: page ``table[base + kb]`` of ``kdata`` (K and V, ``paged``),
    or rows ``base + 16 kb ...`` of ``kdata`` / ``vdata`` ([len, h_kv, d], ragged)."""
    tq = max(1, TILE_ROWS // group)  # query positions: about TILE_ROWS rows, whole groups
    rows = tq * group
    attend, (start, store), limits = _attend(d, rows), _tile(d, group, rows), _limits(rows, group)

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
                store(output, lse, q0 + first, T.min(tq, qlen - first), h, o, m, l, acc)
    return tq, task


def prefill_paged_kernel(h_kv: int, h_q: int, d: int):
    """Prefill over the pages (``_attention_prefill_cpu``'s signature, no sliding window):
    tasks are (sequence, KV head, tile of query positions); one page is one block."""
    tq, task = _prefill_task(h_kv, h_q // h_kv, d, paged=True)

    @T.prim_func(s_tir=True)
    def mg_attention_prefill_paged(
            var_q: T.handle, var_q_indptr: T.handle, var_pages: T.handle,
            var_page_indptr: T.handle, var_page_values: T.handle, var_length_info: T.handle,
            _k_rope: T.handle, _q_rope: T.handle, var_output: T.handle, var_lse: T.handle,
            causal: T.int32, rotary_mode: T.int32, rope_scale: T.float32,
            rope_theta: T.float32, sm_scale: T.float32):
        T.func_attr({"tirx.is_scheduled": True, "tirx.noalias": True})
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
        assert rotary_mode == 0, "minigraph's attention takes keys rotated as they are appended"
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

    @T.prim_func(s_tir=True)
    def mg_attention_prefill_ragged(
            var_q: T.handle, var_q_indptr: T.handle, var_k: T.handle, var_v: T.handle,
            var_kv_indptr: T.handle, _q_rope: T.handle, var_k_rope: T.handle,
            var_output: T.handle, var_lse: T.handle, causal: T.int32, rotary_mode: T.int32,
            rope_scale: T.float32, rope_theta: T.float32, sm_scale: T.float32):
        T.func_attr({"tirx.is_scheduled": True, "tirx.noalias": True})
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
        assert rotary_mode == 0, "minigraph's attention takes keys rotated as they are appended"
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
        T.func_attr({"tirx.is_scheduled": True, "tirx.noalias": True})
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


def _create_args(c: LLMConfig, sizes: list, page_size: Any) -> list:
    """``paged_attention_kv_cache_create``'s arguments as TIRPagedKVCache's llvm branch makes
    them (multi-head attention, every layer; RoPE applied when K is appended; no sliding
    window, no disaggregation), minigraph's kernels in the four attention places."""
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
        bb.add_func(tv.llama_rope_with_position_map(c.rope_theta, 1, d, h_q, h_kv, f32, {}, d),
                    "tir_split_rotary"),
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
    """The model's KV cache: minigraph's attention kernels, or TVM's (``kernels="tvm"``,
    TIRPagedKVCache as TVM builds it for an llvm target: the serial ones)."""
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
