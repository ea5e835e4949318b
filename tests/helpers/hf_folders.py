"""Hugging Face model folders written for tests: config.json as ``transformers`` writes it,
the weights as ``model.safetensors`` (or two shards and ``model.safetensors.index.json``) in
float32, float16 or bfloat16, and optionally a real ``tokenizer.json`` (the ``tokenizers``
library), so the readers meet the files a downloaded model has."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import ml_dtypes
import numpy as np
from safetensors.numpy import save_file
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from minigraph.llm.config import LLMConfig

MODEL_TYPES = {"LlamaForCausalLM": "llama", "Qwen2ForCausalLM": "qwen2"}
STORED = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
SENTENCES = ["the quick brown fox jumps over the lazy dog",
             "a small model reads a few words and writes a few more",
             "prefill reads the prompt and decode writes one token at a time"]


def hf_config(config: LLMConfig, dtype: str = "float32") -> dict[str, Any]:
    """The config.json ``transformers`` would write for ``config``."""
    d = {"architectures": [config.architecture],
         "model_type": MODEL_TYPES.get(config.architecture, "llama"),
         "hidden_size": config.hidden_size, "intermediate_size": config.intermediate_size,
         "num_hidden_layers": config.num_hidden_layers,
         "num_attention_heads": config.num_attention_heads,
         "num_key_value_heads": config.num_key_value_heads, "vocab_size": config.vocab_size,
         "rms_norm_eps": config.rms_norm_eps, "rope_theta": config.rope_theta,
         "tie_word_embeddings": config.tie_word_embeddings,
         "max_position_embeddings": config.context_window_size, "hidden_act": "silu",
         "torch_dtype": dtype, "rope_scaling": None, "initializer_range": 0.02}
    if config.head_dim * config.num_attention_heads != config.hidden_size:
        d["head_dim"] = config.head_dim  # written only when it is not derivable, as HF does
    if d["model_type"] == "llama":
        d["attention_bias"] = config.attention_bias
    return d


def write_tokenizer(path: Path, vocab_size: int) -> Path:
    """A word-level tokenizer (whitespace pre-tokenizer) trained on SENTENCES, at most
    ``vocab_size`` tokens, saved as ``path``."""
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(SENTENCES, trainers.WordLevelTrainer(
        vocab_size=vocab_size, special_tokens=["[UNK]"]))
    tok.save(str(path))
    return path


def write_hf_folder(path: str | Path, config: LLMConfig, tensors: Mapping[str, np.ndarray],
                    dtype: str = "float32", tokenizer: bool = False, sharded: bool = False,
                    extra_config: Mapping[str, Any] | None = None) -> Path:
    """A Hugging Face model folder at ``path`` holding ``tensors`` stored as ``dtype``.
    ``sharded``: two shards and an index (tensors split in half, in ``tensors``' order).
    ``extra_config``: keys merged into config.json (a foreign architecture, rope_scaling)."""
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    cfg = {**hf_config(config, dtype), **(extra_config or {})}
    (folder / "config.json").write_text(json.dumps(cfg, indent=2))
    stored = {name: np.ascontiguousarray(np.asarray(a).astype(STORED[dtype]))
              for name, a in tensors.items()}
    if not sharded:
        save_file(stored, str(folder / "model.safetensors"), metadata={"format": "pt"})
    else:
        names = list(stored)
        halves = [names[:len(names) // 2], names[len(names) // 2:]]
        weight_map = {}
        for i, half in enumerate(halves):
            shard = f"model-{i + 1:05d}-of-{len(halves):05d}.safetensors"
            save_file({n: stored[n] for n in half}, str(folder / shard), metadata={"format": "pt"})
            weight_map.update(dict.fromkeys(half, shard))
        total = sum(a.nbytes for a in stored.values())
        (folder / "model.safetensors.index.json").write_text(json.dumps(
            {"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2))
    if tokenizer:
        write_tokenizer(folder / "tokenizer.json", config.vocab_size)
    return folder
