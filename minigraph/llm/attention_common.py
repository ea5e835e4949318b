"""The pieces minigraph's paged-KV attention kernels share (attention_decode.py,
attention_prefill.py): 2^x as a polynomial, the block update, a tile's state, the causal limits.

Each kernel computes what TVM 0.27's ``_attention_*_cpu`` computes: softmax in base 2 (scores
times ``sm_scale*log2 e``), the log-sum-exp ``lse = max + log2(sum)`` beside the output, output
0 and lse -5e4 for a row with no key. One block update (``attend_block``) serves them all: up to 16
keys (one page) against the G query heads of one KV head (times a tile's query positions in
prefill), scores as 16-lane partial dot products folded in a tree, online softmax rescaled once
per block, P.V accumulated over head_dim in vector registers, 2^x as a polynomial (libm's exp2f
is scalar). The helpers are ``@T.macro``s: TVMScript inlines them into the PrimFunc that calls
them, so the generated code is that of one long PrimFunc.
"""
from __future__ import annotations

import math

from tvm.script import tirx as T

from .kernels import KERNEL_ATTR

# TVMScript is imported at the top (seconds): only the attention modules import this one
PAGE = 16             # tokens per KV page: TVM's CPU kernels are built for 16 (engine.PAGE_SIZE)
LANES = 16            # float32 lanes of a partial dot product; LLVM halves it on AVX2
LOG2E = math.log2(math.e)
EMPTY = -5e4          # the running max before any key (log2 units), TVM's value
CUTOFF = -64.0        # 2^x under 2^-64 is 0: far below float32 rounding, never subnormal
EXP2_POLY = [math.log(2) ** k / math.factorial(k) for k in range(8)]  # 2^f for |f| <= 1/2
NO_ROPE = "minigraph's attention takes keys rotated as they are appended"


def kernel_attrs(what: str) -> dict:
    """A kernel's ``T.func_attr``: scheduled by hand, no aliasing, and what it is (kernels.py
    ``schedule_module`` reports ``what`` as its schedule instead of TVM's default)."""
    return {"tirx.is_scheduled": True, "tirx.noalias": True, KERNEL_ATTR: what}


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


def _scores(d: int, prefetch: bool):
    """Row r's scores against keys kblk[0:lim[r]] into s[r, :] (acc: 16 lanes of scratch).
    ``prefetch``: key j's turn of the first row r0 also prefetches row j of kpf and vpf."""
    @T.macro
    def scores(qt, kblk, s, lim, acc, r, r0, kpf, vpf):
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
    return scores


def _update(d: int):
    """Row r's online softmax over its block of scores s[r, :lim[r]]: the running max m[r] and
    sum l[r] updated, the output o[r, :] rescaled once and P.V added (acc[16], acc[17]: the new
    max and what the old state is worth now)."""
    @T.macro
    def update(vblk, s, o, m, l, lim, acc, r):
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
    return update


def attend_block(d: int, rows: int, prefetch: bool = False):
    """The block update: rows r0 <= r < r0 + rows with lim[r] > 0 see keys kblk[0:lim[r]]
    (scores in s, the state m, l, o in place; acc: 16 lanes + 2 scalars of scratch).
    ``prefetch``: key j's turn of the first row also prefetches row j of kpf and vpf."""
    scores, update = _scores(d, prefetch), _update(d)

    @T.macro
    def attend(qt, kblk, vblk, s, o, m, l, lim, acc, r0, kpf, vpf):
        for r in T.serial(r0, r0 + rows):
            if lim[r] > 0:
                for j in T.vectorized(PAGE):
                    s[r, j] = T.float32(EMPTY)
                scores(qt, kblk, s, lim, acc, r, r0, kpf, vpf)
                update(vblk, s, o, m, l, lim, acc, r)
    return attend


def tile_state(d: int, group: int, rows: int):
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


def causal_limits(rows: int, group: int):
    """lim[r]: keys of the block (k0, brows keys) that row r sees: all of them, or under
    ``causal`` those before its own position (TVM's mask: key < klen - qlen + qi + 1)."""
    @T.macro
    def limits(lim, causal, klen, qlen, first, nq, k0, brows):
        for r in T.serial(rows):
            lim[r] = T.if_then_else(r // group < nq, T.max(T.min(T.if_then_else(
                causal > 0, klen - qlen + first + r // group + 1, klen) - k0, brows), 0), 0)
    return limits
