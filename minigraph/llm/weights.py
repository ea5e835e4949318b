"""An LLM's weights by their Hugging Face tensor names: the shapes a checkpoint of an LLMConfig
holds, seeded weights for the built-in configs, and a Hugging Face folder (config.json +
*.safetensors) read into float32 arrays, every file checked before its data is read.

Counterpart: ``transformers``' ``from_pretrained`` weight loading (``model.safetensors``, or the
shards an ``model.safetensors.index.json`` weight_map names) and MLC-LLM's
``HuggingFaceLoader``. The safetensors format is the ``safetensors`` crate's: a u64
little-endian header length, a JSON header ``{name: {dtype, shape, data_offsets}}`` (offsets
count from the end of the header), then the data.
"""
from __future__ import annotations

import json
import math
import os
import stat
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from safetensors import SafetensorError, safe_open

from ..errors import InputError, last_line
from ..fileio import read_file
from .config import LLMConfig, from_hf

CONFIG_LIMIT = 1 << 20       # bytes: a config.json is ~1 KiB
INDEX_LIMIT = 16 << 20       # bytes: a 70B model's index.json is ~100 KiB
HEADER_LIMIT = 100_000_000   # bytes: the safetensors crate's own bound on a header
SEED_STD = 0.02              # the initializer_range of Llama and Qwen2 configs
# safetensors dtype -> (numpy dtype of the stored bytes, the name source_dtypes gives it)
DTYPES = {"F32": ("<f4", "float32"), "F16": ("<f2", "float16"),
          "BF16": ("<u2", "bfloat16"), "F64": ("<f8", "float64")}
WEIGHTS_HINT = "a Hugging Face model folder holds config.json and model.safetensors (or shards)"


@dataclass(frozen=True)
class HFCheckpoint:
    """A Hugging Face folder, read: its config, its weights as float32 by Hugging Face name
    (only those ``hf_shapes`` lists), its tokenizer.json if it has one, and the dtypes the
    weights were stored in (first seen first, e.g. ``("bfloat16",)``)."""

    config: LLMConfig
    tensors: dict[str, np.ndarray]
    tokenizer: Path | None
    source_dtypes: tuple[str, ...]


@dataclass(frozen=True)
class _Entry:
    """One tensor of a safetensors header; start/end are offsets in the file (bytes)."""

    path: Path
    name: str
    dtype: str
    shape: tuple[int, ...]
    start: int
    end: int


def hf_shapes(config: LLMConfig) -> dict[str, tuple[int, ...]]:
    """Every tensor a Hugging Face checkpoint of ``config`` holds, by name, in a fixed order
    (embedding, each layer, final norm, lm_head unless tied). Linear weights are [out, in]."""
    h, inter, d = config.hidden_size, config.intermediate_size, config.head_dim
    q, kv = config.num_attention_heads * d, config.num_key_value_heads * d
    shapes: dict[str, tuple[int, ...]] = {"model.embed_tokens.weight": (config.vocab_size, h)}
    for n in range(config.num_hidden_layers):
        p = f"model.layers.{n}."
        shapes[p + "input_layernorm.weight"] = (h,)
        shapes[p + "post_attention_layernorm.weight"] = (h,)
        for proj, rows in (("q", q), ("k", kv), ("v", kv)):
            shapes[f"{p}self_attn.{proj}_proj.weight"] = (rows, h)
            if config.attention_bias:
                shapes[f"{p}self_attn.{proj}_proj.bias"] = (rows,)
        shapes[p + "self_attn.o_proj.weight"] = (h, q)
        shapes[p + "mlp.gate_proj.weight"] = (inter, h)
        shapes[p + "mlp.up_proj.weight"] = (inter, h)
        shapes[p + "mlp.down_proj.weight"] = (h, inter)
    shapes["model.norm.weight"] = (h,)
    if not config.tie_word_embeddings:
        shapes["lm_head.weight"] = (config.vocab_size, h)
    return shapes


def seeded_weights(config: LLMConfig, seed: int = 0) -> dict[str, np.ndarray]:
    """Deterministic float32 weights, drawn tensor by tensor in ``hf_shapes`` order: normal
    with std 0.02 for matrices and biases; norms 1 + the same noise, so a norm weight applied
    to the wrong axis or element changes the output (all-ones would hide it)."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in hf_shapes(config).items():
        a = rng.standard_normal(shape, dtype=np.float32)  # float32 draws: no float64 temporary
        a *= SEED_STD
        if name.endswith("norm.weight"):
            a += 1.0
        out[name] = a
    return out


def read_hf_folder(path: str | os.PathLike[str]) -> HFCheckpoint:
    """A Hugging Face model folder -> its config and float32 weights. Every weights file's
    header is read and every expected tensor checked (present, shape, dtype, offsets within
    the file) before any tensor data is; other tensors (rotary inv_freq, a tied model's
    lm_head) are ignored."""
    folder = Path(path)
    if not folder.is_dir():
        state = "not a directory" if os.path.lexists(folder) else "no such directory"
        raise InputError(f"LLM folder {str(folder)!r}: {state} ({WEIGHTS_HINT})")
    cfg_path = folder / "config.json"
    if not os.path.lexists(cfg_path):
        raise InputError(f"LLM folder {str(folder)!r} has no config.json ({WEIGHTS_HINT})")
    name = os.path.basename(os.path.abspath(folder))  # abspath: "." names its folder
    config = from_hf(_read_json(cfg_path, CONFIG_LIMIT), name=name, where=str(cfg_path))
    expected = hf_shapes(config)
    found, where = _locate(folder, expected)
    entries = {n: _check(n, shape, found.get(n), where) for n, shape in expected.items()}
    tensors = _load(entries)
    tokenizer = folder / "tokenizer.json"
    dtypes = dict.fromkeys(DTYPES[e.dtype][1] for e in entries.values())
    return HFCheckpoint(config, tensors, tokenizer if tokenizer.is_file() else None,
                        tuple(dtypes))


def _read_json(path: Path, limit: int) -> dict:
    """A JSON object from a regular file of at most ``limit`` bytes."""
    try:
        st = os.stat(path)
    except OSError as err:
        raise InputError(f"cannot read {str(path)!r}: {err.strerror or err}") from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{str(path)!r} is not a regular file (a FIFO, device or directory)")
    data = read_file(path, path.name, limit)
    try:
        doc = json.loads(data)
    except ValueError as err:  # UnicodeDecodeError is a ValueError too
        raise InputError(f"{str(path)!r} is not JSON ({err})") from None
    if not isinstance(doc, dict):
        raise InputError(f"{str(path)!r} is not a JSON object")
    return doc


def _locate(folder: Path, expected: dict) -> tuple[dict[str, _Entry], str]:
    """Where each tensor is: from model.safetensors, else the index.json's weight_map, else
    every *.safetensors in the folder; and a phrase naming where it was looked for."""
    single, index = folder / "model.safetensors", folder / "model.safetensors.index.json"
    # lexists: a broken symlink or a FIFO by that name is refused, not passed over
    if not os.path.lexists(single) and os.path.lexists(index):
        return _from_index(index, expected), f"{str(index)!r}'s weight_map"
    files = [single] if os.path.lexists(single) else sorted(folder.glob("*.safetensors"))
    if not files:
        raise InputError(f"LLM folder {str(folder)!r} has no weights: no model.safetensors, "
                         "model.safetensors.index.json or *.safetensors")
    found: dict[str, _Entry] = {}
    for f in files:
        for name, entry in _read_header(f).items():
            if name in expected and name in found:
                raise InputError(f"tensor {name} is in both {str(found[name].path)!r} and "
                                 f"{str(f)!r}; which one is meant is unknown")
            found.setdefault(name, entry)
    return found, " and ".join(repr(str(f)) for f in files)


def _from_index(index: Path, expected: dict) -> dict[str, _Entry]:
    """The expected tensors' entries in the shards a sharded checkpoint's weight_map names
    (only the shards holding one are read)."""
    weight_map = _read_json(index, INDEX_LIMIT).get("weight_map")
    if not isinstance(weight_map, dict):
        raise InputError(f"{str(index)!r} has no weight_map object")
    headers: dict[str, dict[str, _Entry]] = {}
    found = {}
    for name in expected:
        shard = weight_map.get(name)
        if shard is None:
            continue  # reported by _check, with its expected shape
        # a shard is a file beside the index: no path may lead out of the folder
        if not isinstance(shard, str) or shard in ("", ".", "..") or Path(shard).name != shard:
            raise InputError(f"{str(index)!r}: tensor {name} is in {shard!r}, which is not "
                             "the name of a file in the folder")
        if shard not in headers:
            headers[shard] = _read_header(index.parent / shard)
        if name not in headers[shard]:
            raise InputError(f"{str(index)!r} puts tensor {name} in {shard!r}, which does "
                             "not hold it")
        found[name] = headers[shard][name]
    return found


def _read_header(path: Path) -> dict[str, _Entry]:
    """A safetensors file's tensors, from its header alone (bounded: the header is under
    HEADER_LIMIT bytes and inside the file, a regular file's size read by fstat first)."""
    try:  # O_NONBLOCK: opening a FIFO would otherwise wait for a writer
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        raise InputError(f"cannot read weights file {str(path)!r}: {err.strerror or err}") \
            from None
    try:
        st = os.fstat(fd)
        size = st.st_size
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"weights file {str(path)!r} is not a regular file (a FIFO, "
                             "device or directory); a safetensors file is a regular file")
        head = os.pread(fd, 8, 0)
        n = struct.unpack("<Q", head)[0] if len(head) == 8 else -1
        if not 0 < n < HEADER_LIMIT or 8 + n > size:
            raise InputError(f"weights file {str(path)!r} is not a safetensors file: its "
                             f"header length ({n} bytes) is not within its {size} bytes and "
                             f"under {HEADER_LIMIT} bytes")
        raw = os.pread(fd, n, 8)
    except OSError as err:
        raise InputError(f"cannot read weights file {str(path)!r}: {err.strerror or err}") \
            from None
    finally:
        os.close(fd)
    return _entries(path, raw, 8 + n, size)


def _entries(path: Path, raw: bytes, base: int, size: int) -> dict[str, _Entry]:
    """The header's tensors, each checked to be well formed and to lie within the file
    (``base``: where the data starts; ``size``: the file's size; both bytes)."""
    try:
        header = json.loads(raw)
    except ValueError as err:
        raise InputError(f"weights file {str(path)!r}: header is not JSON ({err})") from None
    if not isinstance(header, dict):
        raise InputError(f"weights file {str(path)!r}: header is not a JSON object")
    out = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        spec = spec if isinstance(spec, dict) else {}
        dtype, shape, offsets = spec.get("dtype"), spec.get("shape"), spec.get("data_offsets")
        ints = isinstance(shape, list) and isinstance(offsets, list) and len(offsets) == 2 \
            and all(type(v) is int and v >= 0 for v in shape + offsets)
        if not (isinstance(dtype, str) and ints and offsets[0] <= offsets[1]):
            raise InputError(f"weights file {str(path)!r}: tensor {name}'s header entry is "
                             f"malformed ({spec!r})")
        if base + offsets[1] > size:
            raise InputError(f"weights file {str(path)!r}: tensor {name}'s data ends at byte "
                             f"{base + offsets[1]}, past the end of the file ({size} bytes); "
                             "the file is truncated or not a safetensors file")
        out[name] = _Entry(path, name, dtype, tuple(shape), base + offsets[0], base + offsets[1])
    return out


def _check(name: str, shape: tuple[int, ...], entry: _Entry | None, where: str) -> _Entry:
    """``entry`` if it is the tensor the config expects: present, that shape, a float dtype,
    and exactly the bytes that shape needs."""
    if entry is None:
        raise InputError(f"tensor {name} (expected shape {shape}) is missing from {where}")
    at = f"weights file {str(entry.path)!r}: tensor {name}"
    if entry.dtype not in DTYPES:
        raise InputError(f"{at} is stored as {entry.dtype}; minigraph reads "
                         f"{', '.join(DTYPES)}")
    if entry.shape != shape:
        raise InputError(f"{at} has shape {entry.shape}, expected {shape} for this config")
    need = math.prod(shape) * np.dtype(DTYPES[entry.dtype][0]).itemsize
    if entry.end - entry.start != need:
        raise InputError(f"{at} holds {entry.end - entry.start} bytes; shape {shape} of "
                         f"{entry.dtype} needs {need}")
    return entry


def _load(entries: dict[str, _Entry]) -> dict[str, np.ndarray]:
    """The checked tensors as float32, each file opened once, in ``entries``' order."""
    by_file: dict[Path, list[_Entry]] = {}
    for e in entries.values():
        by_file.setdefault(e.path, []).append(e)
    out: dict[str, np.ndarray] = {}
    for path, group in by_file.items():
        try:
            with safe_open(str(path), framework="numpy") as f:
                for e in group:
                    # safetensors' numpy loader gives BF16 only in a process where ml_dtypes
                    # has registered the dtype ("'bfloat16' not understood" otherwise): the
                    # bytes are read directly instead, the same in every process
                    out[e.name] = _read_raw(e) if e.dtype == "BF16" else \
                        np.asarray(f.get_tensor(e.name), dtype=np.float32)
        except (SafetensorError, OSError) as err:
            raise InputError(f"weights file {str(path)!r}: {last_line(err)}") from None
    return {name: out[name] for name in entries}


def _read_raw(e: _Entry) -> np.ndarray:
    """One checked tensor as float32, from the file's bytes at its header offsets (no
    safetensors loader). bfloat16 is the top half of a float32: shifting it 16 bits up is
    exact."""
    try:
        with open(e.path, "rb") as f:
            f.seek(e.start)
            data = f.read(e.end - e.start)
    except OSError as err:
        raise InputError(f"cannot read weights file {str(e.path)!r}: {err.strerror or err}") \
            from None
    if len(data) != e.end - e.start:
        raise InputError(f"weights file {str(e.path)!r} shrank while tensor {e.name} was read")
    stored = np.frombuffer(data, dtype=DTYPES[e.dtype][0]).reshape(e.shape)
    if e.dtype == "BF16":
        return (stored.astype(np.uint32) << 16).view(np.float32)
    return stored.astype(np.float32)
