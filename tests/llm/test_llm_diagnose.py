"""The first request's warm-up ladder for LLMs: each rung a fresh process that measured its
first request op by op, the steps named by the rungs they span, the document and command.
No timing is compared here (tests/helpers/machine.py): only what was measured."""
from __future__ import annotations

import json

import cli_runner
import pytest

from minigraph.llm.diagnose import parse_rungs
from minigraph.errors import InputError
from minigraph.report.llm_diagnosis import format_llm_diagnosis
from minigraph.results.llm_diagnosis import LLMDiagnosis, steps

ATTENTION = "vm.builtin.attention_kv_cache_attention_with_fused_qkv"


@pytest.fixture(scope="module")
def command(llama_tiny, tmp_path_factory) -> tuple[str, dict]:
    """One ``minigraph diagnose`` of llama-tiny, a fresh process per rung (a, k, f): what it
    printed and the document it wrote (the tests below read both)."""
    out = tmp_path_factory.mktemp("llm_diagnosis") / "d.json"
    r = cli_runner.run(["diagnose", llama_tiny, "--prompt-len", 12, "--processes", 1,
                        "--rungs", "a,k,f", "--threads", 1, "--quiet", "--json", out])
    assert r.returncode == 0, r.stderr
    return r.stdout, json.loads(out.read_text())


@pytest.fixture(scope="module")
def diagnosis(command) -> LLMDiagnosis:
    return LLMDiagnosis.from_dict(command[1])


@pytest.mark.subprocess
def test_every_rung_measured_its_first_request_op_by_op(diagnosis):
    assert sorted(r["rung"] for r in diagnosis.records) == ["a", "f", "k"]
    for r in diagnosis.records:
        for phase in ("prefill", "decode"):
            ops = r[phase]["ops"]
            assert f"{phase}:{ATTENTION}" in ops and "engine:vm.builtin.kv_state_begin_forward" in ops
            assert r[phase]["ns"] >= sum(ops.values()) > 0 and r[phase]["faults"] >= 0
        assert r["ttft_ns"] == r["prefill"]["ns"] and r["load_ns"] > 0


@pytest.mark.subprocess
def test_steps_are_named_by_every_rung_they_span(diagnosis, command):
    found = steps(diagnosis)
    assert [s.what for s in found] == [
        "thread-pool creation + weights' first read + kernels' first call",
        "KV cache's first touch"]
    assert all(s.lo_ns <= s.ttft_ns <= s.hi_ns for s in found)
    text = format_llm_diagnosis(diagnosis)
    assert "Why the first token is slow: llama-tiny, prompt 12 tokens" in text
    assert text.splitlines()[-1].startswith("verdict:")
    again = LLMDiagnosis.from_dict(json.loads(json.dumps(diagnosis.to_dict())))
    assert again == diagnosis and json.loads(json.dumps(again.to_dict())) == command[1]


def test_rungs_are_checked_and_put_in_ladder_order():
    assert parse_rungs("f,a") == ("a", "f")
    for bad in ("a", "a,x", ""):
        with pytest.raises(InputError, match="rungs"):
            parse_rungs(bad)


@pytest.mark.subprocess
def test_diagnose_command_on_an_llm_build(command, diagnosis):
    printed, doc = command
    assert "first token" in printed and "verdict:" in printed
    assert format_llm_diagnosis(diagnosis) in printed
    assert doc["format"] == "minigraph-llm-diagnosis/1"
