"""Hugging Face folders read back as written (float32 exactly, half precision as rounded),
every malformed folder refused by name, and the numpy reference forward pass checked against
properties any causal decoder has."""
from __future__ import annotations

import json
import math
import os
import struct
from dataclasses import replace

import numpy as np
import pytest
from hf_folders import STORED, write_hf_folder
from llm_reference import reference_generate, reference_logits, rope
from safetensors.numpy import save_file
from tokenizers import Tokenizer

from minigraph.errors import InputError
from minigraph.llm import weights
from minigraph.llm.config import LLMConfig
from minigraph.llm.weights import HFCheckpoint, hf_shapes, read_hf_folder, seeded_weights

LLAMA = LLMConfig("t-llama", "LlamaForCausalLM", hidden_size=64, intermediate_size=128,
                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                  head_dim=16, vocab_size=128, context_window_size=256)
# Qwen2: q/k/v biases, tied embeddings, one KV head, a head_dim the hidden size does not give
QWEN = LLMConfig("t-qwen", "Qwen2ForCausalLM", hidden_size=64, intermediate_size=128,
                 num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1,
                 head_dim=32, vocab_size=128, rms_norm_eps=1e-6, rope_theta=1e6,
                 tie_word_embeddings=True, attention_bias=True, context_window_size=512)


def _same(ck: HFCheckpoint, expected: dict[str, np.ndarray]) -> None:
    assert list(ck.tensors) == list(hf_shapes(ck.config))
    for name, a in ck.tensors.items():
        assert a.dtype == np.float32 and np.array_equal(a, expected[name]), name


def test_hf_shapes_hold_every_parameter_the_config_counts():
    for config in (LLAMA, QWEN):
        assert sum(math.prod(s) for s in hf_shapes(config).values()) == config.n_params()
    s = hf_shapes(QWEN)
    assert s["model.layers.1.self_attn.q_proj.weight"] == (128, 64)
    assert s["model.layers.1.self_attn.k_proj.bias"] == (32,)
    assert s["model.layers.0.self_attn.o_proj.weight"] == (64, 128)
    assert s["model.layers.0.mlp.down_proj.weight"] == (64, 128)
    assert "lm_head.weight" not in s and "lm_head.weight" in hf_shapes(LLAMA)
    assert "model.layers.0.self_attn.q_proj.bias" not in hf_shapes(LLAMA)


def test_seeded_weights_are_deterministic_and_norms_are_not_all_ones():
    a, b, c = seeded_weights(LLAMA), seeded_weights(LLAMA), seeded_weights(LLAMA, seed=1)
    assert all(np.array_equal(a[n], b[n]) for n in a)
    assert not np.array_equal(a["model.embed_tokens.weight"], c["model.embed_tokens.weight"])
    assert all(v.dtype == np.float32 and v.shape == hf_shapes(LLAMA)[n] for n, v in a.items())
    norm = a["model.layers.0.input_layernorm.weight"]
    assert abs(norm.mean() - 1) < 0.01 and norm.std() > 0.01
    assert abs(a["model.layers.0.mlp.up_proj.weight"].std() - 0.02) < 0.002


def test_float32_folder_reads_back_exactly_with_its_tokenizer(tmp_path):
    w = seeded_weights(LLAMA)
    folder = write_hf_folder(tmp_path / "my-llama", LLAMA, w, tokenizer=True)
    ck = read_hf_folder(folder)
    assert ck.config == replace(LLAMA, name="my-llama")
    _same(ck, w)
    assert ck.source_dtypes == ("float32",) and ck.tokenizer == folder / "tokenizer.json"
    ids = Tokenizer.from_file(str(ck.tokenizer)).encode("the quick brown fox").ids
    assert len(ids) == 4 and max(ids) < LLAMA.vocab_size


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_folder_reads_back_as_rounded(tmp_path, dtype):
    w = seeded_weights(LLAMA)
    ck = read_hf_folder(write_hf_folder(tmp_path / "m", LLAMA, w, dtype=dtype))
    _same(ck, {n: a.astype(STORED[dtype]).astype(np.float32) for n, a in w.items()})
    assert ck.source_dtypes == (dtype,) and ck.tokenizer is None


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_raw_bytes_reader_equals_the_rounded_weights(tmp_path, dtype):
    """The reader used for BF16 (header offsets, no loader) is right for every dtype."""
    w = seeded_weights(LLAMA)
    folder = write_hf_folder(tmp_path / "m", LLAMA, w, dtype=dtype)
    for name, entry in weights._read_header(folder / "model.safetensors").items():
        want = w[name].astype(STORED[dtype]).astype(np.float32)
        assert np.array_equal(weights._read_raw(entry), want), name


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_sharded_folder_reads_through_its_index(tmp_path, dtype):
    w = seeded_weights(LLAMA)
    folder = write_hf_folder(tmp_path / "m", LLAMA, w, dtype=dtype, sharded=True)
    assert len(list(folder.glob("*.safetensors"))) == 2
    _same(read_hf_folder(folder), {n: a.astype(STORED[dtype]).astype(np.float32)
                                   for n, a in w.items()})


def test_any_safetensors_file_is_read_when_there_is_no_model_safetensors(tmp_path):
    w = seeded_weights(LLAMA)
    folder = write_hf_folder(tmp_path / "m", LLAMA, w)
    os.rename(folder / "model.safetensors", folder / "consolidated.safetensors")
    _same(read_hf_folder(folder), w)


def test_qwen2_biases_and_tied_embedding_read_and_extras_are_ignored(tmp_path):
    w = seeded_weights(QWEN)
    extra = {"lm_head.weight": w["model.embed_tokens.weight"] + 1,
             "model.layers.0.self_attn.rotary_emb.inv_freq": np.ones(16, np.float32)}
    ck = read_hf_folder(write_hf_folder(tmp_path / "q", QWEN, {**w, **extra}))
    assert ck.config == replace(QWEN, name="q")
    _same(ck, w)
    assert "lm_head.weight" not in ck.tensors


def _folder(tmp_path, config=LLAMA, w=None, **kw):
    return write_hf_folder(tmp_path / "m", config, seeded_weights(config) if w is None else w,
                           **kw)


def test_a_missing_tensor_is_named(tmp_path):
    w = seeded_weights(LLAMA)
    del w["model.layers.1.mlp.up_proj.weight"]
    with pytest.raises(InputError, match=r"model\.layers\.1\.mlp\.up_proj\.weight \(expected "
                                         r"shape \(128, 64\)\) is missing from .*model\.saf"):
        read_hf_folder(_folder(tmp_path, w=w))


def test_a_tensor_missing_from_the_index_is_named(tmp_path):
    folder = _folder(tmp_path, sharded=True)
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    del index["weight_map"]["model.norm.weight"]
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(InputError, match=r"model\.norm\.weight .* missing from .*weight_map"):
        read_hf_folder(folder)


def test_a_wrong_shape_names_the_tensor_and_both_shapes(tmp_path):
    w = seeded_weights(LLAMA)
    w["model.layers.0.self_attn.k_proj.weight"] = np.zeros((16, 64), np.float32)
    with pytest.raises(InputError, match=r"k_proj\.weight has shape \(16, 64\), expected "
                                         r"\(32, 64\)"):
        read_hf_folder(_folder(tmp_path, w=w))


def test_a_tensor_of_integers_is_refused(tmp_path):
    folder = _folder(tmp_path)
    w = {n: a for n, a in seeded_weights(LLAMA).items()}
    w["model.norm.weight"] = np.ones(64, np.int32)
    save_file(w, str(folder / "model.safetensors"))
    with pytest.raises(InputError, match=r"model\.norm\.weight is stored as I32"):
        read_hf_folder(folder)


@pytest.mark.parametrize("extra, problem", [
    ({"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2"}, "GPT2LMHeadModel"),
    ({"rope_scaling": {"rope_type": "llama3", "factor": 8.0}}, "rope_scaling .*llama3"),
])
def test_configs_the_build_does_not_implement_are_refused(tmp_path, extra, problem):
    with pytest.raises(InputError, match=r"config\.json.*" + problem):
        read_hf_folder(_folder(tmp_path, extra_config=extra))


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory"])
def test_a_weights_file_that_is_not_a_regular_file_is_refused(tmp_path, kind):
    folder = _folder(tmp_path)
    target = folder / "model.safetensors"
    target.unlink()
    {"fifo": os.mkfifo, "dev-zero": lambda p: os.symlink("/dev/zero", p),
     "directory": os.mkdir}[kind](target)
    with pytest.raises(InputError, match=r"model\.safetensors' is not a regular file"):
        read_hf_folder(folder)


def test_a_config_json_that_is_not_a_regular_file_or_too_big_is_refused(tmp_path):
    folder = _folder(tmp_path)
    (folder / "config.json").unlink()
    os.mkfifo(folder / "config.json")
    with pytest.raises(InputError, match=r"config\.json' is not a regular file"):
        read_hf_folder(folder)
    (folder / "config.json").unlink()
    (folder / "config.json").write_text("{" + " " * (1 << 20) + "}")
    with pytest.raises(InputError, match=r"config\.json.*(MiB|bytes is more than)"):
        read_hf_folder(folder)


def test_offsets_past_the_end_of_the_file_are_refused_before_reading(tmp_path):
    folder = _folder(tmp_path)
    path = folder / "model.safetensors"
    os.truncate(path, path.stat().st_size - 4)
    with pytest.raises(InputError, match=r"model\.safetensors'.*past the end of the file"):
        read_hf_folder(folder)


def test_a_header_length_beyond_the_bound_is_refused(tmp_path):
    folder = _folder(tmp_path)
    with open(folder / "model.safetensors", "r+b") as f:
        f.write(struct.pack("<Q", 1 << 40))
    with pytest.raises(InputError, match=r"model\.safetensors' is not a safetensors file: "
                                         r"its header length"):
        read_hf_folder(folder)


def test_an_index_naming_a_shard_outside_the_folder_is_refused(tmp_path):
    folder = _folder(tmp_path, sharded=True)
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    index["weight_map"]["model.norm.weight"] = "../elsewhere.safetensors"
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(InputError, match=r"model\.norm\.weight is in '\.\./elsewhere"):
        read_hf_folder(folder)


def test_missing_folder_config_or_weights_are_clear(tmp_path):
    with pytest.raises(InputError, match="no such directory"):
        read_hf_folder(tmp_path / "absent")
    with pytest.raises(InputError, match="has no config.json"):
        read_hf_folder(tmp_path)
    folder = _folder(tmp_path)
    (folder / "model.safetensors").unlink()
    with pytest.raises(InputError, match="has no weights"):
        read_hf_folder(folder)


# --- the numpy reference itself ---

def test_reference_is_causal_and_generate_is_greedy():
    w, ids = seeded_weights(LLAMA), [5, 17, 99, 3, 64, 2, 7, 120]
    full = reference_logits(LLAMA, w, ids)
    assert full.shape == (8, LLAMA.vocab_size)
    np.testing.assert_allclose(reference_logits(LLAMA, w, ids[:3]), full[:3], rtol=1e-12)
    assert not np.allclose(reference_logits(LLAMA, w, ids[1:])[0], full[1])  # position matters
    first, second = reference_generate(LLAMA, w, ids, 2)
    assert first == int(np.argmax(full[-1]))
    assert second == int(np.argmax(reference_logits(LLAMA, w, ids + [first])[-1]))


@pytest.mark.parametrize("config", [LLAMA, QWEN], ids=["llama", "qwen2"])
def test_reference_gqa_equals_attention_over_repeated_kv_heads(config):
    """Query head h reads KV head h // group, as HF's repeat_kv: repeating each KV head's
    weights `group` times into a multi-head model gives the same logits."""
    w, group = seeded_weights(config), config.group
    mha = replace(config, num_key_value_heads=config.num_attention_heads)
    wide = dict(w)
    for name, a in w.items():
        if ".k_proj." in name or ".v_proj." in name:
            heads = a.reshape(config.num_key_value_heads, config.head_dim, *a.shape[1:])
            wide[name] = np.repeat(heads, group, axis=0).reshape(-1, *a.shape[1:])
    ids = [1, 2, 3, 4, 5]
    np.testing.assert_allclose(reference_logits(mha, wide, ids),
                               reference_logits(config, w, ids), rtol=1e-10, atol=1e-12)


def test_reference_tied_head_is_the_embedding():
    w = seeded_weights(QWEN)
    untied = {**w, "lm_head.weight": w["model.embed_tokens.weight"]}
    np.testing.assert_array_equal(
        reference_logits(replace(QWEN, tie_word_embeddings=False), untied, [4, 8]),
        reference_logits(QWEN, w, [4, 8]))


def test_reference_rope_scores_depend_only_on_relative_position():
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((1, 1, 16)), rng.standard_normal((1, 1, 16))

    def score(m: int, n: int) -> float:
        return float(np.sum(rope(q, 1e4, np.array([m])) * rope(k, 1e4, np.array([n]))))
    assert score(7, 3) == pytest.approx(score(107, 103), rel=1e-9)
    assert score(7, 3) != pytest.approx(score(3, 7), rel=1e-3)
    assert np.linalg.norm(rope(q, 1e4, np.array([9]))) == pytest.approx(np.linalg.norm(q))
