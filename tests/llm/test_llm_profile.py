"""The LLM profile: every call of a request's phases is an op, minigraph's replay of a phase
computes what TVM's VM computes, and the document and the command hold what they promise.
Nothing here compares times (tests/helpers/machine.py): only what was measured, not how fast."""
from __future__ import annotations

import json

import cli_runner
import numpy as np
import pytest

from minigraph.llm.calls import kind_of
from minigraph.llm.engine import Engine
from minigraph.llm.opened import open_llm
from minigraph.llm.profile import Settings, record_phase, _replay, profile_llm
from minigraph.results.llm import Figures, LLMProfile

LAYERS = 2  # llama-tiny
ATTENTION = "vm.builtin.attention_kv_cache_attention_with_fused_qkv"


@pytest.fixture(scope="module")
def profile(llama_tiny) -> LLMProfile:
    eng = Engine(open_llm(llama_tiny))
    return profile_llm(eng, Settings(prompt_len=24, decode_steps=6, rounds=3, sweep=(16, 96)),
                       threads=1, cpu="test", peaks={"gflops": 100.0, "gbps": 10.0},
                       environment={})


def _vm_calls(eng: Engine, function: str, args) -> list[str]:
    """What TVM's VM itself calls (its own instrument, independent of calls.py's filter)."""
    seen: list[str] = []

    def instrument(func, name, before, ret, *a):
        if before:
            seen.append(name)
        return 0
    eng.vm.set_instrument(instrument)
    try:
        eng.vm[function](*args)
    finally:
        eng.vm.set_instrument(None)
    return seen


def test_every_kernel_and_kv_builtin_the_vm_calls_is_an_op(llama_tiny, profile):
    eng = Engine(open_llm(llama_tiny))
    eng.new_cache()
    x = eng.embed([1, 2, 3])
    from tvm.runtime import ShapeTuple
    eng._f["kv_state_begin_forward"](eng.cache, ShapeTuple([0]), ShapeTuple([3]))
    names = _vm_calls(eng, "prefill", [x, eng.cache, eng.params])
    work = {n for n in names if kind_of(n) != "vm"}
    ops = {o.name for o in profile.phase("prefill").ops if o.function == "prefill"}
    assert work == ops
    assert "vm.builtin.alloc_storage" in names and "vm.builtin.alloc_storage" not in ops


def test_phases_count_calls_per_token(profile):
    pre, dec = profile.phase("prefill"), profile.phase("decode")
    assert (pre.tokens, pre.depth, dec.tokens, dec.depth) == (24, 0, 1, 24)
    for ph in (pre, dec):
        by = {o.name: o for o in ph.ops}
        assert by[ATTENTION].calls == LAYERS and by[ATTENTION].kind == "kv"
        assert by["vm.builtin.kv_state_begin_forward"].calls == 1
        assert by["vm.builtin.kv_state_end_forward"].function == "engine"
        assert any(o.function == "embed" for o in ph.ops)
        assert all(len(o.inrun_ns) == 3 and min(o.inrun_ns) > 0 for o in ph.ops)
        assert len(ph.e2e_ns) == 3 and len(ph.overhead_ns) == 3 and ph.vm_between_ns > 0
        assert by[ATTENTION].warm_ns > 0 and by["vm.builtin.kv_state_begin_forward"].warm_ns is None
    linear = [o for o in dec.ops if o.flops]
    assert linear and all(o.bytes and o.flops == o.bytes // 2 for o in linear)  # 2 FLOPs / 4 B


def test_replayed_decode_computes_the_vms_logits(llama_tiny):
    """minigraph's loop over the recorded calls writes the logits TVM's VM returns for the
    same token at the same depth (the VM's own run is the reference)."""
    eng = Engine(open_llm(llama_tiny))
    eng.new_cache()
    eng.forward([3, 1, 4, 1, 5])
    ph, logits = record_phase(eng, [9])
    out = ph.calls[-2].args[-1]  # the model function's last kernel writes the logits
    out.copyfrom(np.zeros(out.shape, dtype="float32"))
    _replay(eng, ph)
    np.testing.assert_allclose(out.numpy().reshape(-1), logits, rtol=1e-6, atol=1e-6)
    eng._f["kv_state_popn"](eng.cache, eng.SEQ, 1)
    eng.depth -= 1
    np.testing.assert_allclose(eng.forward([9]), logits, rtol=1e-6, atol=1e-6)


def test_the_document_round_trips_and_gives_the_users_figures(profile):
    again = LLMProfile.from_dict(json.loads(json.dumps(profile.to_dict())))
    assert again == profile
    f = Figures.of(profile)
    assert f.ttft_ms > 0 and f.decode_tok_s == pytest.approx(1e3 / f.decode_ms)
    assert f.itl_p50_ms <= f.itl_p99_ms and len(profile.itl_ns) == 6
    assert [p.depth for p in profile.sweep] == [16, 96]
    assert all(any(ATTENTION in k for k in p.op_ns) for p in profile.sweep)


@pytest.mark.subprocess
def test_profile_command_on_an_llm_build(llama_tiny, tmp_path):
    out = tmp_path / "p.json"
    r = cli_runner.run(["profile", llama_tiny, "--prompt-len", 16, "--decode", 4, "--rounds", 2,
                        "--threads", 1, "--json", out, "--quiet"])
    assert r.returncode == 0, r.stderr
    assert "time to first token" in r.stdout and "prefill (16 tokens at depth 0)" in r.stdout
    assert "decode (1 token at depth 16)" in r.stdout and ATTENTION[:40] in r.stdout
    doc = json.loads(out.read_text())
    assert doc["format"] == "minigraph-llm-profile/1" and doc["threads"] == 1


@pytest.mark.subprocess
@pytest.mark.parametrize("argv, said", [
    (["--sweep", "n=1,2"], "sweeps the KV-cache depth"),
    (["--prompt-len", "5000"], "--prompt-len 5000"),
    (["--mode", "warm"], "--mode"),
])
def test_profile_command_refuses_what_an_llm_profile_cannot_do(llama_tiny, argv, said):
    r = cli_runner.run(["profile", llama_tiny, *argv])
    assert r.returncode == 2 and said in r.stderr and "Traceback" not in r.stderr


def test_inside_attention_the_caches_own_kernels_are_timed(profile):
    """The KV cache's kernels (called from C++, unseen by set_instrument): prefill from an
    empty cache runs the ragged prefill kernel, decode the decode kernel, both RoPE and the
    append, once per layer per phase run."""
    pre, dec = profile.phase("prefill"), profile.phase("decode")
    assert pre.inside_calls["attention_prefill_ragged"] == LAYERS
    assert dec.inside_calls["attention_decode"] == LAYERS
    for ph in (pre, dec):
        assert ph.inside_calls["split_rotary (RoPE)"] == LAYERS
        assert ph.inside_calls["kv_cache_transpose_append"] == LAYERS
        assert all(min(v) > 0 for v in ph.inside_ns.values())
