"""minigraph's RoPE / qkv split kernel (minigraph/llm/rope.py) computes what TVM's
``llama_rope_with_position_map`` computes (RopeMode.NORMAL, no rope_scaling, rotary_dim =
head_dim): on random fused qkv and random positions up to 4096, for 1 token (decode, the serial
branch), counts around the parallel threshold and not multiples of anything, GQA groups 1 to 4,
head_dim 24 to 128, with and without ``apply_rope``. Inside built LLMs the kernel is covered by
tests/llm/test_attention.py's logits checks (minigraph's cache against TIRPagedKVCache's own
kernels, prompt positions 0-335). Nothing here is timed."""
from __future__ import annotations

import functools

import numpy as np
import pytest
import tvm
from tvm.relax.frontend.nn.llm import kv_cache as tvm_kv

from minigraph.compiler.target import make_target
from minigraph.errors import BuildError
from minigraph.llm.rope import PARALLEL_TOKENS, rope_kernel

# (query heads, KV heads, head_dim, theta)
SHAPES = [(12, 4, 64, 10000.0), (4, 2, 32, 10000.0), (3, 3, 24, 500000.0), (8, 2, 128, 1e6)]
TOKENS = [1, 5, PARALLEL_TOKENS - 1, PARALLEL_TOKENS, 131]


def _compile(func):
    mod = tvm.IRModule({"main": func.with_attr("global_symbol", "main")})
    return tvm.compile(mod, target=make_target(None))["main"]


@functools.cache
def _pair(h_q: int, h_kv: int, d: int, theta: float) -> tuple:
    """TVM's kernel and minigraph's, compiled once per shape."""
    theirs = tvm_kv.llama_rope_with_position_map(theta, 1, d, h_q, h_kv, "float32", {}, d)
    return _compile(theirs), _compile(rope_kernel(theta, 1, d, h_q, h_kv))


@pytest.mark.parametrize("h_q,h_kv,d,theta", SHAPES)
@pytest.mark.parametrize("n", TOKENS)
@pytest.mark.parametrize("apply_rope", [1, 0])
def test_rope_kernel_equals_tvms(h_q, h_kv, d, theta, n, apply_rope):
    rng = np.random.default_rng(n * 7 + d)
    qkv = rng.standard_normal((n, h_q + 2 * h_kv, d)).astype("float32")
    pos = rng.integers(0, 4096, n).astype("int32")
    results = []
    for func in _pair(h_q, h_kv, d, theta):
        outs = [tvm.runtime.tensor(np.full(s, np.nan, "float32"), tvm.cpu())
                for s in ((n, h_q, d), (n, h_kv, d), (n, h_kv, d))]
        func(tvm.runtime.tensor(qkv, tvm.cpu()), tvm.runtime.tensor(pos, tvm.cpu()), *outs,
             apply_rope)
        results.append([o.numpy() for o in outs])
    for theirs, ours in zip(*results):
        # the angle is TVM's expression and cos / sin the same libm calls: equal to the bit
        # here; 1e-6 relative allows another LLVM's contraction of cos * x + sin * y
        assert np.max(np.abs(ours - theirs)) <= 1e-6 * np.max(np.abs(theirs))
    if not apply_rope:
        split = np.split(qkv, [h_q, h_q + h_kv], axis=1)
        assert all(np.array_equal(a, b) for a, b in zip(results[1], split))


def test_rope_is_the_rotate_half_convention():
    """Against numpy: Hugging Face's rotate_half with inv_freq = theta^(-2i/d), position p."""
    h_q, h_kv, d, theta = 4, 2, 32, 10000.0
    rng = np.random.default_rng(9)
    qkv = rng.standard_normal((3, h_q + 2 * h_kv, d)).astype("float32")
    pos = np.array([0, 17, 300], "int32")
    outs = [tvm.runtime.tensor(np.zeros(s, "float32"), tvm.cpu())
            for s in ((3, h_q, d), (3, h_kv, d), (3, h_kv, d))]
    _pair(h_q, h_kv, d, theta)[1](tvm.runtime.tensor(qkv, tvm.cpu()),
                                  tvm.runtime.tensor(pos, tvm.cpu()), *outs, 1)
    angle = pos[:, None] * theta ** (-np.arange(0, d, 2) / d)           # [tokens, d / 2]
    cos, sin = (np.concatenate([f(angle)] * 2, axis=-1)[:, None] for f in (np.cos, np.sin))
    x = qkv[:, :h_q + h_kv].astype(np.float64)
    half = np.concatenate([-x[..., d // 2:], x[..., :d // 2]], axis=-1)
    want = x * cos + half * sin
    got = np.concatenate([outs[0].numpy(), outs[1].numpy()], axis=1)
    assert np.max(np.abs(got - want)) <= 1e-4 * np.max(np.abs(want))
    assert np.array_equal(outs[2].numpy(), qkv[:, h_q + h_kv:])


def test_odd_head_dim_is_refused():
    with pytest.raises(BuildError, match="even head_dim"):
        rope_kernel(10000.0, 1, 25, 2, 1)
