"""compare's verdict on two LLM profiles, rule by rule, on documents made here (the rules read
samples and what the documents record; no timing is measured in this file)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from minigraph.analysis.comparison import Comparison
from minigraph.report.llm_compare import format_llm_comparison
from minigraph.results.llm import LLMProfile, OpRow, PhaseResult

QUIET = {"wall_s": 10.0, "others_cpus": 0.01, "steal_cpus": 0.0, "cpus": 2.0}
BUSY = {**QUIET, "others_cpus": 1.4}


def _phase(name: str, tokens: int, depth: int, linear_ms: float, attn_ms: float, seed: int,
           spread: float = 0.01) -> PhaseResult:
    rng = np.random.default_rng(seed)

    def samples(ms: float) -> tuple[int, ...]:
        return tuple(int(ms * 1e6 * (1 + spread * x)) for x in rng.standard_normal(8))
    linear = samples(linear_ms)
    attn = samples(attn_ms)
    ops = (OpRow("fused_linear_add", "kernel", name, 4, linear, flops=10**9, bytes=10**8),
           OpRow("vm.builtin.attention_kv_cache_attention_with_fused_qkv", "kv", name, 2, attn))
    e2e = tuple(a + b + 50_000 for a, b in zip(linear, attn))
    return PhaseResult(name, tokens, depth, ops, e2e, (20_000,) * 8, 100_000, e2e[0])


def _profile(threads: int = 1, linear: tuple[float, float] = (400, 15), seed: int = 0,
             prompt: int = 128, contention: dict = QUIET, spread: float = 0.01) -> LLMProfile:
    phases = (_phase("prefill", prompt, 0, linear[0], 50, seed, spread),
              _phase("decode", 1, prompt, linear[1], 1, seed + 1, spread))
    return LLMProfile("llama-100m", threads, "Test CPU", prompt, 8, phases,
                      (16_000_000,) * 8, 500_000_000, 400_000_000, 100_000,
                      {"gflops": 200.0, "gbps": 20.0}, contention=contention)


def test_one_thread_against_two_is_threads_where_the_parallel_kernels_moved():
    c = Comparison(_profile(1), _profile(2, linear=(200, 14), seed=7)).phases
    assert c.verdict == "threads"
    assert "the linear layers 0.50x" in c.because
    assert "the other ops (attention, norms, VM builtins) 1.0" in c.because


def test_the_same_run_twice_is_no_real_difference():
    c = Comparison(_profile(1, seed=1), _profile(1, seed=2)).phases
    assert c.verdict == "no real difference"


def test_a_busy_machine_that_hides_the_move_is_contention_not_a_guess():
    a = _profile(1, contention=BUSY, spread=0.6, seed=3)
    b = _profile(2, linear=(380, 15), contention=BUSY, spread=0.6, seed=4)
    c = Comparison(a, b).phases
    assert c.verdict == "contention" and "other processes used 1.40 CPUs" in c.because


def test_another_request_is_named_before_threads():
    c = Comparison(_profile(1), _profile(2, linear=(150, 14), prompt=64, seed=9)).phases
    assert c.verdict == "request" and "prompt 128 -> 64" in c.because


def test_the_report_says_the_verdict_and_each_phase():
    a, b = _profile(1), _profile(2, linear=(200, 14), seed=7)
    text = format_llm_comparison(Comparison(a, b))
    assert text.splitlines()[2].startswith("verdict: threads")
    assert "prefill:" in text and "decode:" in text and "fused_linear_add" in text


def test_a_saved_profile_reads_back_through_the_format_registry(tmp_path):
    from minigraph.fileio.jsontext import document_text
    from minigraph.readers.documents import load_document
    path = tmp_path / "p.json"
    p = replace(_profile(2), environment={"cpu": {"model": "Test CPU"}})
    path.write_text(document_text(p.to_dict(), indent=1))
    doc = load_document(str(path))
    assert doc.kind == "llm-profile" and doc.value == p


def test_more_threads_and_slower_on_a_busy_machine_is_contention():
    a = _profile(1, contention=BUSY)
    b = _profile(2, linear=(700, 30), seed=5, contention=BUSY)
    assert Comparison(a, b).phases.verdict == "contention"
    assert Comparison(_profile(1), _profile(2, linear=(700, 30), seed=5)).phases.verdict == \
        "threads"
