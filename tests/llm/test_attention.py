"""minigraph's paged-KV attention kernels (minigraph/llm/attention*.py) compute what TVM's serial
CPU kernels compute: kernel by kernel on random pages (batches, partial and empty sequences,
causal or not, GQA groups of 1 to 3, head_dim 24 / 32 / 64), and inside built LLMs, where the
prefill logits and 16 decode steps' logits of a build with minigraph's kernels (attention and
RoPE, minigraph/llm/rope.py) are within 1e-5 relative of the same build with TVM's kernels (and
1e-4 of the numpy reference). The prompt spans 19 pages (16 tokens each), decode reads up to 20
pages in 8 merged slices, and a second prefill onto the cached tokens takes the paged-prefill +
merge path. Nothing here is timed."""
from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pytest
import tvm
from hf_folders import write_hf_folder
from llm_reference import reference_logits
from tvm.relax.frontend.nn.llm import kv_cache as tvm_kv

from minigraph.compiler.target import make_target
from minigraph.llm import attention, attention_common as common
from minigraph.llm.config import BUILTIN, LLMConfig
from minigraph.llm.engine import Engine
from minigraph.llm.files import BUILD_JSON
from minigraph.llm.opened import open_llm
from minigraph.llm.weights import seeded_weights

PROMPT, DECODE, CHUNK = 300, 16, 20  # tokens: 19 pages, decode to 20, then 21 pages
# head_dim 64, GQA 4 query heads / 2 KV heads; q/k weights scaled so softmax is far from uniform
HD64 = LLMConfig("t-hd64", "LlamaForCausalLM", hidden_size=256, intermediate_size=256,
                 num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=64,
                 vocab_size=256, context_window_size=512)
SHARP = 6.0
# against the float64 reference, float32 scores of sharp attention round to ~2e-5 relative
# in TVM's kernels as in minigraph's: the reference's bound is test_cli_run's
REF_REL = 1e-4


def _close(a: np.ndarray, ref: np.ndarray, rel: float = 1e-5) -> None:
    assert a.shape == ref.shape
    assert np.max(np.abs(a - ref)) <= rel * np.max(np.abs(ref)), np.max(np.abs(a - ref))


# --- kernel by kernel -------------------------------------------------------------------

def _compile(func):
    mod = tvm.IRModule({"main": func.with_attr("global_symbol", "main")})
    return tvm.compile(mod, target=make_target(None))["main"]


# kind -> (TVM's kernel, minigraph's kernel), each made from (KV heads, query heads, head_dim)
PAIRS = {
    "decode": (lambda kv, q, d: tvm_kv._attention_decode_cpu(kv, q, d, "float32", False, {}),
               attention.decode_kernel),
    "ragged": (lambda kv, q, d: tvm_kv._attention_prefill_ragged_cpu(kv, q, d, d, "float32", {}),
               attention.prefill_ragged_kernel),
    "paged": (lambda kv, q, d: tvm_kv._attention_prefill_cpu(kv, q, d, "float32", False, {}),
              attention.prefill_paged_kernel),
}


@functools.cache
def _pair(kind: str, h_kv: int, h_q: int, d: int) -> tuple:
    """Both kernels compiled once per shape (a compile is ~1 s)."""
    return tuple(_compile(make(h_kv, h_q, d)) for make in PAIRS[kind])


def _both(kind: str, shape: tuple, inputs: list, outputs: list[tuple], scalars: list) -> None:
    """TVM's kernel and minigraph's on the same inputs: outputs within 1e-5 relative."""
    dev = tvm.cpu()
    results = []
    for func in _pair(kind, *shape):
        outs = [tvm.runtime.tensor(np.zeros(s, "float32"), dev) for s in outputs]
        func(*[tvm.runtime.tensor(a, dev) for a in inputs], *outs, *scalars)
        results.append([o.numpy() for o in outs])
    for theirs, ours in zip(*results):
        _close(ours, theirs)


def _pages(rng, h_kv: int, d: int, lens: list[int]) -> list[np.ndarray]:
    """pages (shuffled, two spare), page_indptr, page_values, last page lengths."""
    n = [-(-k // common.PAGE) for k in lens]
    pages = rng.standard_normal((sum(n) + 2, 2, h_kv, common.PAGE, d)).astype("float32")
    values = rng.permutation(sum(n) + 2)[:sum(n)].astype("int32")
    last = [k - (p - 1) * common.PAGE if p else 0 for k, p in zip(lens, n)]
    return [pages, np.cumsum([0, *n]).astype("int32"), values, np.array(last, "int32")]


CASES = [(2, 4, 32), (1, 3, 24), (4, 12, 64)]  # (KV heads, query heads, head_dim)


@pytest.mark.parametrize("h_kv,h_q,d", CASES)
@pytest.mark.parametrize("lens", [[40], [0, 33, 300, 16], [600]])
def test_decode_kernel_equals_tvms(h_kv, h_q, d, lens):
    rng = np.random.default_rng(0)
    pages, indptr, values, last = _pages(rng, h_kv, d, lens)
    b = len(lens)
    q = rng.standard_normal((b, h_q, d)).astype("float32")
    inputs = [q, pages, indptr, values, last, np.zeros(b, "int32"), np.zeros(b, "int32")]
    _both("decode", (h_kv, h_q, d), inputs, [(b, h_q, d), (b, h_q)], [0, 1.0, 1e4, d ** -0.5])


@pytest.mark.parametrize("h_kv,h_q,d", CASES)
@pytest.mark.parametrize("qlens,klens,causal", [
    ([40], [40], 1), ([5, 1, 33], [5, 1, 33], 1), ([7, 20], [30, 20], 1), ([7, 20], [30, 20], 0)])
def test_ragged_prefill_kernel_equals_tvms(h_kv, h_q, d, qlens, klens, causal):
    rng = np.random.default_rng(1)
    q = rng.standard_normal((sum(qlens), h_q, d)).astype("float32")
    k, v = (rng.standard_normal((sum(klens), h_kv, d)).astype("float32") for _ in range(2))
    inputs = [q, np.cumsum([0, *qlens]).astype("int32"), k, v,
              np.cumsum([0, *klens]).astype("int32"), np.zeros(sum(qlens), "int32"),
              np.zeros(len(qlens), "int32")]
    _both("ragged", (h_kv, h_q, d), inputs, [(sum(qlens), h_q, d), (sum(qlens), h_q)],
          [causal, 0, 1.0, 1e4, d ** -0.5])


@pytest.mark.parametrize("h_kv,h_q,d", CASES)
@pytest.mark.parametrize("qlens,klens,causal", [
    ([5], [42], 0), ([5, 1, 20], [42, 16, 3], 0), ([5, 20], [42, 30], 1)])
def test_paged_prefill_kernel_equals_tvms(h_kv, h_q, d, qlens, klens, causal):
    rng = np.random.default_rng(2)
    pages, indptr, values, last = _pages(rng, h_kv, d, klens)
    q = rng.standard_normal((sum(qlens), h_q, d)).astype("float32")
    inputs = [q, np.cumsum([0, *qlens]).astype("int32"), pages, indptr, values, last,
              np.zeros(len(qlens), "int32"), np.zeros(sum(qlens), "int32")]
    _both("paged", (h_kv, h_q, d), inputs, [(sum(qlens), h_q, d), (sum(qlens), h_q)],
          [causal, 0, 1.0, 1e4, d ** -0.5])


@pytest.mark.parametrize("n,h,d", [(7, 4, 32), (1, 3, 24), (129, 12, 64)])
def test_merge_kernel_equals_tvms(n, h, d):
    rng = np.random.default_rng(3)
    v, v_other = (rng.standard_normal((n, h, d)).astype("float32") for _ in range(2))
    s, s_other = ((rng.standard_normal((n, h)) * 5).astype("float32") for _ in range(2))
    s[0, 0] = s_other[0, 0] = common.EMPTY  # both states empty, as for a sequence with none
    merged = []
    for func in (tvm_kv._merge_state_inplace_cpu("float32"), attention.merge_kernel(d)):
        args = [tvm.runtime.tensor(a, tvm.cpu()) for a in (v, s, v_other, s_other)]
        _compile(func)(*args)
        merged.append((args[0].numpy(), args[1].numpy()))
    _close(merged[1][0], merged[0][0])
    _close(merged[1][1], merged[0][1])


def test_exp2_polynomial_is_exp2():
    """The kernels' 2^x (round, degree-7 Taylor, exponent bits) against numpy's, x <= 0."""
    from tvm.script import tirx as T

    @T.prim_func(s_tir=True)
    def f(x: T.Buffer((4096,), "float32"), y: T.Buffer((4096,), "float32")):
        for i in T.vectorized(4096):
            with T.sblock("e"):
                y[i] = common.exp2(x[i])
    x = np.concatenate([-np.linspace(0, 70, 4000), [-63.9, -64.1, -5e4] + [0.0] * 93])
    x = x.astype("float32")
    y = tvm.runtime.tensor(np.zeros(4096, "float32"), tvm.cpu())
    _compile(f)(tvm.runtime.tensor(x, tvm.cpu()), y)
    want = np.where(x < common.CUTOFF, 0, np.exp2(x.astype(np.float64)))
    assert np.all(np.abs(y.numpy() - want) <= 2e-7 * want)


# --- the KV cache's creation call -------------------------------------------------------

def test_creation_call_is_tvms_but_the_attention_kernels():
    """The same argument list as TIRPagedKVCache builds (same places, same kernels and values)
    except the four attention places and RoPE's, which hold minigraph's PrimFuncs."""
    from tvm import relax as rx
    c = BUILTIN["llama-tiny"]
    target = tvm.target.Target({"kind": "llvm"})
    sizes = [tvm.tirx.Var(n, "int64") for n in ("batch", "total", "chunk", "page")]
    bb = rx.BlockBuilder()
    with bb.function("main", []):
        ours, theirs = ([bb.lookup_binding(a) if isinstance(a, rx.Var) else a
                         for a in bb.lookup_binding(attention.paged_kv_cache(
                             c, target, *sizes, kernels=k)._expr).args[1:]]
                        for k in ("minigraph", "tvm"))  # a Var (the zeros): its value
        bb.emit_func_output(rx.Tuple([]))
    mod = bb.get()
    assert len(ours) == len(theirs) == 28
    replaced = {15: "mg_attention_prefill_ragged", 16: "mg_attention_prefill_paged",
                17: "mg_attention_decode", 23: "mg_attention_merge_state", 24: "mg_split_rotary"}
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if i in replaced:  # ("tirx", function) or, for RoPE, the function
            gv, tvms = (x.fields[-1] if isinstance(x, rx.Tuple) else x for x in (a, b))
            assert gv.name_hint == replaced[i] and "mg_" not in tvms.name_hint
            assert isinstance(mod[gv], tvm.tirx.PrimFunc)
        else:
            tvm.ir.assert_structural_equal(a, b)


def test_build_json_says_whose_kernels_they_are(llama_tiny):
    """minigraph's attention and RoPE kernels are labelled with what they are (their PrimFunc's
    ``minigraph.kernel`` attribute); TVM's kernels of the cache keep TVM's default."""
    kernels = json.loads((llama_tiny / BUILD_JSON).read_text())["kernels"]
    for name, what in (("mg_attention_decode", "attention_decode: parallel"),
                       ("mg_attention_prefill_ragged", "attention_prefill_ragged: parallel"),
                       ("mg_attention_prefill_paged", "attention_prefill (paged): parallel"),
                       ("mg_attention_merge_state", "attention_merge_state: parallel"),
                       ("mg_split_rotary", "split_rotary (RoPE): parallel")):
        assert kernels[name]["schedule"].startswith(f"minigraph's {what}"), kernels[name]
    assert kernels["tir_kv_cache_transpose_append"]["schedule"] == "TVM's default (serial loops)"


def test_unknown_kernels_are_refused():
    from minigraph.errors import BuildError
    with pytest.raises(BuildError, match="attention kernels 'fast'"):
        attention.paged_kv_cache(BUILTIN["llama-tiny"], None, 1, 1, 1, 16, kernels="fast")


# --- inside built LLMs ------------------------------------------------------------------

def _build(source: str, out: Path, kernels: str, shared) -> Path:
    """``shared``: conftest.py's shared_llm_compiles (test_cli_run.py's LLAMA has HD64's shapes)."""
    from minigraph.llm.build import build_llm
    from minigraph.llm.model import CausalLM
    with pytest.MonkeyPatch.context() as mp, shared():
        mp.setattr(CausalLM, "attention_kernels", kernels)
        build_llm(source, out)
    return out


def _request(build: Path, ids: list[int]) -> list[np.ndarray]:
    """Logits of: the prompt's prefill, DECODE steps, a prefill of CHUNK more tokens."""
    eng = Engine(open_llm(build))
    eng.new_cache()
    out = [eng.forward(ids[:PROMPT])]
    out += [eng.forward([t]) for t in ids[PROMPT:PROMPT + DECODE]]
    return out + [eng.forward(ids[PROMPT + DECODE:])]


def _check(config: LLMConfig, tensors, mine: Path, tvms: Path) -> None:
    for build, has in ((mine, True), (tvms, False)):  # whose kernels each library holds
        kernels = json.loads((build / BUILD_JSON).read_text())["kernels"]
        assert ("mg_attention_decode" in kernels) is has
        assert ("mg_split_rotary" in kernels) is has
    rng = np.random.default_rng(4)
    ids = [int(t) for t in rng.integers(0, config.vocab_size, PROMPT + DECODE + CHUNK)]
    ref = reference_logits(config, tensors, ids)
    ends = [PROMPT + i for i in range(DECODE + 1)] + [len(ids)]
    for ours, theirs, n in zip(_request(mine, ids), _request(tvms, ids), ends):
        _close(ours, theirs)
        _close(ours, ref[n - 1], REF_REL)


def test_llama_tiny_logits_equal_tvms_kernels_and_the_reference(llama_tiny, tmp_path,
                                                               shared_llm_compiles):
    """llama-tiny (GQA 4/2, head_dim 32): the session's build has minigraph's kernels."""
    c = BUILTIN["llama-tiny"]
    tvms = _build("llama-tiny", tmp_path / "tvm", "tvm", shared_llm_compiles)
    _check(c, seeded_weights(c, seed=0), llama_tiny, tvms)


def test_head_dim_64_logits_equal_tvms_kernels_and_the_reference(tmp_path, shared_llm_compiles):
    w = seeded_weights(HD64, seed=5)
    for name in w:  # sharper attention: scores x SHARP^2
        if name.endswith(("q_proj.weight", "k_proj.weight")):
            w[name] = w[name] * np.float32(SHARP)
    folder = write_hf_folder(tmp_path / "hf", HD64, w)
    mine = _build(str(folder), tmp_path / "mine", "minigraph", shared_llm_compiles)
    tvms = _build(str(folder), tmp_path / "tvm", "tvm", shared_llm_compiles)
    _check(HD64, w, mine, tvms)
