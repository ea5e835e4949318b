"""``minigraph build`` / ``minigraph run`` for LLMs (issue 47), through the CLI's ``main``:
a built-in config, Hugging Face folders (Llama and Qwen2, float32 and bfloat16), a prompt as
text, and an executable built with plain TVM as TVM's ``optimize_llm`` tutorial builds one.
Every generated token is checked against the numpy reference (tests/helpers/llm_reference.py)
and the prefill logits against its last position; refusals are one ``error:`` line."""
from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import numpy as np
import pytest
from hf_folders import write_hf_folder
from llm_reference import reference_generate, reference_logits
from tokenizers import Tokenizer

from minigraph.cli import main
from minigraph.llm.config import BUILTIN, LLMConfig
from minigraph.llm.weights import read_hf_folder, seeded_weights

PROMPT = [7, 301, 42, 5, 99]
# test_attention.py's head_dim-64 shapes: the session compiles their library once for both
# (conftest.py shared_llm_compiles)
LLAMA = LLMConfig("t-llama", "LlamaForCausalLM", hidden_size=256, intermediate_size=256,
                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                  head_dim=64, vocab_size=256, context_window_size=512)
QWEN = LLMConfig("t-qwen", "Qwen2ForCausalLM", hidden_size=64, intermediate_size=128,
                 num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                 head_dim=16, vocab_size=256, rms_norm_eps=1e-6, rope_theta=1e6,
                 tie_word_embeddings=True, attention_bias=True, context_window_size=256)
CONFIGS = {"llama": LLAMA, "qwen2": QWEN}


def _cli(capsys, *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _generated(out: str) -> list[int]:
    lines = [ln for ln in out.splitlines() if ln.startswith("generated:")]
    assert len(lines) == 1, out
    return [int(t) for t in lines[0].split()[1:]]


def _close(logits: np.ndarray, ref: np.ndarray, rel: float = 1e-4) -> None:
    assert logits.dtype == np.float32 and logits.shape == ref.shape
    assert np.max(np.abs(logits - ref)) <= rel * np.max(np.abs(ref))


def _error(code: int, err: str, *words: str) -> None:
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, err
    assert all(w in err for w in words), err


@pytest.fixture(scope="module")
def tiny(llama_tiny) -> Path:
    """llama-tiny as ``minigraph build`` built it (once per session: conftest.py)."""
    assert (llama_tiny / "model.vm.so").is_file() and (llama_tiny / "params.npz").is_file()
    return llama_tiny


def test_build_and_run_builtin_matches_the_reference(tiny, tmp_path, capsys):
    code, out, _ = _cli(capsys, "run", tiny, "--tokens", ",".join(map(str, PROMPT)),
                        "--generate", 16, "--out", tmp_path / "o")
    assert code == 0, out
    c, w = BUILTIN["llama-tiny"], seeded_weights(BUILTIN["llama-tiny"], seed=0)
    expected = reference_generate(c, w, PROMPT, 16)
    assert _generated(out) == expected
    assert np.array_equal(np.load(tmp_path / "o" / "tokens.npy"), np.array(expected, np.int64))
    _close(np.load(tmp_path / "o" / "prefill_logits.npy"), reference_logits(c, w, PROMPT)[-1])


@pytest.fixture(scope="module")
def hf_build(tmp_path_factory, shared_llm_compiles):
    """hf_build(arch, dtype) -> (folder, build dir, what build printed): a Hugging Face folder
    (with a tokenizer.json) built through ``minigraph build``, at most once per module; an
    architecture's float32 and bfloat16 folders hold one config, compiled once."""
    cache: dict[tuple[str, str], tuple[Path, Path, str]] = {}

    def get(arch: str, dtype: str) -> tuple[Path, Path, str]:
        if (arch, dtype) not in cache:
            config, root = CONFIGS[arch], tmp_path_factory.mktemp(f"{arch}_{dtype}")
            folder = write_hf_folder(root / f"t-{arch}", config, seeded_weights(config, 2),
                                     dtype=dtype, tokenizer=True)
            with contextlib.redirect_stdout(io.StringIO()) as printed, shared_llm_compiles():
                assert main(["build", str(folder), "-o", str(root / "b")]) == 0
            cache[arch, dtype] = folder, root / "b", printed.getvalue()
        return cache[arch, dtype]

    return get


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_hf_folder_build_and_run_matches_the_reference(hf_build, arch, dtype, tmp_path, capsys):
    config = CONFIGS[arch]
    folder, build, printed = hf_build(arch, dtype)
    assert re.fullmatch(
        rf"built t-{arch} \({config.architecture}, 0\.\d\dM params, 2 layers\) for .+ in "
        r"[\d.]+ s: \d+ kernels, \d+ linear kernels scheduled \(GEMM for prefill, GEMV for "
        rf"decode\)\nwrote model.vm.so, params.npz, build.json, tokenizer.json to {build}\n",
        printed), printed
    weights = read_hf_folder(folder).tensors  # bfloat16: the rounded values the build reads
    code, out, err = _cli(capsys, "run", build, "--tokens", "3,17,200,64", "--out",
                          tmp_path / "o")
    assert code == 0, err
    assert _generated(out) == reference_generate(config, weights, [3, 17, 200, 64], 16)
    _close(np.load(tmp_path / "o" / "prefill_logits.npy"),
           reference_logits(config, weights, [3, 17, 200, 64])[-1])


def test_prompt_text_through_the_builds_tokenizer(hf_build, tiny, capsys):
    folder, build, _ = hf_build("llama", "float32")
    assert (build / "tokenizer.json").is_file()
    code, out, err = _cli(capsys, "run", build, "--prompt", "the quick brown fox",
                          "--generate", 6)
    assert code == 0, err
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    ids = tok.encode("the quick brown fox").ids
    expected = reference_generate(LLAMA, read_hf_folder(folder).tensors, ids, 6)
    assert _generated(out) == expected
    assert f"\ntext: {tok.decode(expected)}\n" in out, out
    if any(t >= tok.get_vocab_size() for t in expected):  # the model's vocabulary is larger
        assert "not in the tokenizer's vocabulary" in err, err
    code, out, err = _cli(capsys, "run", tiny, "--tokens", "1,2", "--generate", 3,
                          "--tokenizer", folder / "tokenizer.json")  # any build, any tokenizer
    assert code == 0 and _generated(out) and "\ntext: " in out, err


def test_tutorial_executable_runs_as_tvms_vm_runs_it(tmp_path, capsys):
    from llm_tutorial import vm_generate, write_tutorial_executable
    weights = seeded_weights(LLAMA, 3)
    lib, params = write_tutorial_executable(tmp_path, LLAMA, weights)
    prompt = [9, 250, 31, 4, 77, 128]
    code, out, err = _cli(capsys, "run", lib, "--params", params, "--tokens",
                          ",".join(map(str, prompt)), "--generate", 8, "--out", tmp_path / "o")
    assert code == 0, err
    tvm_logits, tvm_tokens = vm_generate(lib, params, prompt, 8)
    assert _generated(out) == tvm_tokens == reference_generate(LLAMA, weights, prompt, 8)
    _close(np.load(tmp_path / "o" / "prefill_logits.npy"), tvm_logits, 1e-6)
    _close(np.load(tmp_path / "o" / "prefill_logits.npy"),
           reference_logits(LLAMA, weights, prompt)[-1])
    _error(*_cli(capsys, "run", lib, "--tokens", "1,2")[::2], "--params")


def test_refusals_are_one_error_line(tiny, tmp_path, capsys):
    odd = write_hf_folder(tmp_path / "mistral", LLAMA, {}, extra_config={
        "architectures": ["MistralForCausalLM"], "model_type": "mistral"})
    code, _, err = _cli(capsys, "build", odd, "-o", tmp_path / "b")
    _error(code, err, "MistralForCausalLM", "not built")
    code, _, err = _cli(capsys, "run", tiny, "--tokens", "1,512")
    _error(code, err, "512", "vocabulary")
    _error(*_cli(capsys, "run", tiny, "--tokens", "1,x")[::2], "'x'", "--tokens")
    _error(*_cli(capsys, "run", tiny)[::2], "--tokens", "--prompt")
    _error(*_cli(capsys, "run", tiny, "--prompt", "hi")[::2], "tokenizer")
    _error(*_cli(capsys, "run", tiny, "--tokens", "1,2", "--generate", 2048)[::2], "context")
    _error(*_cli(capsys, "run", tmp_path / "nothing", "--tokens", "1")[::2], "--tokens", "LLM")
    _error(*_cli(capsys, "run", tiny, "--tokens", "1", "--input", "x=y.npy")[::2], "--input")
    _error(*_cli(capsys, "build", "llama-tiny", "-o", tmp_path / "t", "--tune")[::2], "--tune")
    with pytest.raises(SystemExit) as usage:  # argparse's usage error: exit 2, one line
        main(["run", str(tiny), "--tokens", "1", "--prompt", "a"])
    _error(usage.value.code, capsys.readouterr().err, "--prompt", "not allowed with")


def test_out_is_never_clobbered_unasked(tiny, tmp_path, capsys):
    out = tmp_path / "o"
    assert _cli(capsys, "run", tiny, "--tokens", "1,2", "--generate", 2, "--out", out)[0] == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    code, _, err = _cli(capsys, "run", tiny, "--tokens", "3", "--generate", 3, "--out", out)
    _error(code, err, "prefill_logits.npy", "tokens.npy", "--force")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert _cli(capsys, "run", tiny, "--tokens", "3", "--generate", 3, "--out", out,
                "--force")[0] == 0
    assert np.load(out / "tokens.npy").shape == (3,)
