"""RoPE and the q / k / v split for the paged KV cache: minigraph's kernel in place of TVM 0.27's
``llama_rope_with_position_map`` (relax/frontend/nn/llm/position_embedding.py; the cache's
``tir_split_rotary``, called on the fused qkv before K and V are appended), same signature and
results for ``RopeMode.NORMAL``, ``rope_scaling={}`` and ``rotary_dim == head_dim``.

The contract (TVM's ``fused_rope``): ``qkv`` [tokens, q heads + 2 KV heads, head_dim] is split
into q, k, v; under ``apply_rope > 0`` the q and k heads of token s are rotated by its position
``position_map[s]``, in Hugging Face's rotate-half convention: for i < head_dim / 2, with angle
``pos * scale / theta^(2i / head_dim)``, ``x'[i] = cos x[i] - sin x[i + half]`` and
``x'[i + half] = cos x[i + half] + sin x[i]``. TVM's kernel is three serial loops over
(token, head, dim) that compute cos and sin for every element: 2 x 20 x 64 libm calls a token
on llama-100m. Here tokens are parallel tasks; each computes the head_dim / 2 angles' cos and
sin once (the angle by TVM's own expression, ``rope_freq_default``, so the same float32 value)
and rotates every q and k head with them, vectorised over the half head.
"""
from __future__ import annotations

from tvm import tirx
from tvm.relax.frontend.nn.llm.position_embedding import rope_freq_default
from tvm.script import tirx as T

from ..errors import BuildError
from .attention_common import kernel_attrs

# TVM's Relax and TVMScript are imported at the top (seconds): only attention.py imports this

# a token is ~0.4 us of work (llama-100m, Zen 4); a parallel region costs ~1-3 us to wake and
# join the pool: fewer tokens than this run on the calling thread
PARALLEL_TOKENS = 16
ROPE = (f"split_rotary (RoPE): parallel over tokens (from {PARALLEL_TOKENS}), cos/sin once per "
        "(token, frequency) for all heads, vectorised over head_dim")


def _angle(pos, i, d: int, theta: float, scale: float):
    """The rotation angle of frequency i at position pos: TVM's ``rope_freq_default`` value
    (``pos * scale / theta^(2i mod d / d)`` in float32), so cos and sin match TVM's."""
    _, _, bound = rope_freq_default(pos * tirx.const(scale, "float32"), i, d, theta, "float32")
    return next(iter(bound.values()))


def _token(d: int, h_q: int, h_kv: int, theta: float, scale: float):
    """Token s: the angles' cos and sin (cs, sn: [d / 2]) once, every q and k head rotated with
    them, the v heads copied; without ``apply_rope`` q and k are copied as they are."""
    half = d // 2

    @T.macro
    def rotate(qkv, s, src, dst, h, cs, sn, apply_rope):
        if apply_rope > 0:  # TVM's expression: cos * x + sin * (-x[i + half] or x[i - half])
            for i in T.vectorized(half):
                dst[s, h, i] = cs[i] * qkv[s, src, i] + sn[i] * (-qkv[s, src, i + half])
                dst[s, h, i + half] = cs[i] * qkv[s, src, i + half] + sn[i] * qkv[s, src, i]
        else:
            for i in T.vectorized(d):
                dst[s, h, i] = qkv[s, src, i]

    @T.macro
    def token(qkv, position_map, q, k, v, apply_rope, s):
        with T.sblock("rope"):
            T.reads()
            T.writes()
            cs = T.sblock_alloc_buffer((half,), "float32")
            sn = T.sblock_alloc_buffer((half,), "float32")
            ang = T.sblock_alloc_buffer((1,), "float32")
            if apply_rope > 0:
                for i in T.serial(half):  # scalar libm calls, as TVM's: the same cos and sin
                    ang[0] = _angle(position_map[s], i, d, theta, scale)
                    cs[i] = T.cos(ang[0])
                    sn[i] = T.sin(ang[0])
            for h in T.serial(h_q):
                rotate(qkv, s, h, q, h, cs, sn, apply_rope)
            for h in T.serial(h_kv):
                rotate(qkv, s, h_q + h, k, h, cs, sn, apply_rope)
                for i in T.vectorized(d):
                    v[s, h, i] = qkv[s, h_q + h_kv + h, i]
    return token


def rope_kernel(theta: float, scale: float, d: int, h_q: int, h_kv: int):
    """``llama_rope_with_position_map(theta, scale, d, h_q, h_kv, "float32", {}, d)``'s
    signature and results: tokens in parallel, cos and sin once per (token, frequency)."""
    if d % 2:
        raise BuildError(f"RoPE over head_dim {d}: rotate-half needs an even head_dim")
    token = _token(d, h_q, h_kv, theta, scale)
    attrs = {"op_pattern": 8, **kernel_attrs(ROPE)}  # 8: opaque, as TVM's

    @T.prim_func(s_tir=True)
    def mg_split_rotary(var_qkv: T.handle, var_position_map: T.handle, var_q: T.handle,
                        var_k: T.handle, var_v: T.handle, apply_rope: T.int64):
        T.func_attr(attrs)
        seq_len, e_pos = T.int32(), T.int32()
        qkv = T.match_buffer(var_qkv, (seq_len, h_q + 2 * h_kv, d), "float32")
        q = T.match_buffer(var_q, (seq_len, h_q, d), "float32")
        k = T.match_buffer(var_k, (seq_len, h_kv, d), "float32")
        v = T.match_buffer(var_v, (seq_len, h_kv, d), "float32")
        position_map = T.match_buffer(var_position_map, (seq_len,), "int32", elem_offset=e_pos)
        if seq_len < PARALLEL_TOKENS:  # decode's one token: no wake-up of the pool
            for s in T.serial(seq_len):
                token(qkv, position_map, q, k, v, apply_rope, s)
        else:
            for s in T.parallel(seq_len):
                token(qkv, position_map, q, k, v, apply_rope, s)
    return mg_split_rotary
