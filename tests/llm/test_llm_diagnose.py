"""The first request's warm-up ladder for LLMs: each rung a fresh process that measured its
first request op by op, the steps named by the rungs they span, the document and command.
No timing is compared here (tests/helpers/machine.py): only what was measured."""
from __future__ import annotations

import json

import cli_runner
import pytest

from minigraph.llm.diagnose import Settings, diagnose_llm, parse_rungs
from minigraph.errors import InputError
from minigraph.report.llm_diagnosis import format_llm_diagnosis
from minigraph.results.llm_diagnosis import LLMDiagnosis, steps

ATTENTION = "vm.builtin.attention_kv_cache_attention_with_fused_qkv"


@pytest.fixture(scope="module")
def diagnosis(llama_tiny) -> LLMDiagnosis:
    return diagnose_llm(str(llama_tiny), None, Settings(1, ("a", "k", "f"), 12, 1), "Test CPU",
                        "llama-tiny")


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
def test_steps_are_named_by_every_rung_they_span(diagnosis):
    found = steps(diagnosis)
    assert [s.what for s in found] == [
        "thread-pool creation + weights' first read + kernels' first call",
        "KV cache's first touch"]
    assert all(s.lo_ns <= s.ttft_ns <= s.hi_ns for s in found)
    text = format_llm_diagnosis(diagnosis)
    assert "Why the first token is slow: llama-tiny, prompt 12 tokens" in text
    assert text.splitlines()[-1].startswith("verdict:")
    again = LLMDiagnosis.from_dict(json.loads(json.dumps(diagnosis.to_dict())))
    assert again == diagnosis


def test_rungs_are_checked_and_put_in_ladder_order():
    assert parse_rungs("f,a") == ("a", "f")
    for bad in ("a", "a,x", ""):
        with pytest.raises(InputError, match="rungs"):
            parse_rungs(bad)


@pytest.mark.subprocess
def test_diagnose_command_on_an_llm_build(llama_tiny, tmp_path):
    out = tmp_path / "d.json"
    r = cli_runner.run(["diagnose", llama_tiny, "--prompt-len", 8, "--processes", 1,
                        "--rungs", "a,f", "--threads", 1, "--quiet", "--json", out])
    assert r.returncode == 0, r.stderr
    assert "first token" in r.stdout and "verdict:" in r.stdout
    assert json.loads(out.read_text())["format"] == "minigraph-llm-diagnosis/1"
