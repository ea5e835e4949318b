"""The LLM door: what an LLM executable is and what it needs, decided once, before any dlopen.

Two ways in: a directory ``minigraph build`` wrote (build.json of kind "llm", model.vm.so,
params.npz, maybe tokenizer.json), or a Relax VM executable a user built with plain TVM as in
TVM's ``optimize_llm`` tutorial (functions ``embed``, ``prefill``, ``decode`` and a KV-cache
creation function; its weights from ``--params``, an ``.npz`` in ``export_tvm``'s order). The
executable's function table is read from the file (runtime/relax_vm/bytecode.py); what cannot
run here is refused by name: device modules (CUDA and others), FlashInfer's KV cache.
Counterpart: ``relax.VirtualMachine(tvm.runtime.load_module(path), tvm.cpu())``.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from ..artifacts.library import classify
from ..artifacts.npy import NPZ_ERRORS, load_npz as npz_arrays
from ..errors import InputError
from ..fileio.bounded import memory_cap, read_bounded
from ..runtime.relax_vm.bytecode import read_executable
from .config import LLMConfig
from .files import BUILD_JSON, FORMAT, LIBRARY, PARAMS, TOKENIZER

# lazy: TVM (~1.2 s to import) is imported where the executable is loaded; is_llm needs none

NEEDED = ("embed", "prefill", "decode")
CACHE_FUNCTIONS = ("create_tir_paged_kv_cache", "create_paged_kv_cache")
BYO_CONTEXT = 2048  # tokens a user's executable's KV cache is created for (no build.json)
NPZ_SLACK = 1024  # bytes per array beside its data: zip and .npy headers, names
MAX_BUILD_JSON = 16 << 20  # bytes: a build.json is kilobytes; a larger one is not ours


@dataclass
class OpenedLLM:
    """An LLM executable and its weights, ready for an Engine."""

    library: Path
    executable: object           # tvm.runtime.Module (the VM executable)
    params: list[np.ndarray]     # in the executable's parameter order
    param_names: list[str]
    cache_function: str
    hidden: int
    vocab: int
    context: int
    config: LLMConfig | None = None
    build_json: dict | None = None
    tokenizer: Path | None = None
    kernels: dict = field(default_factory=dict)

    def check_tokens(self, ids: Sequence[int]) -> None:
        """Token ids inside the vocabulary (TVM's embedding lookup does not bound-check)."""
        bad = [i for i in ids if not 0 <= int(i) < self.vocab]
        if bad:
            raise InputError(f"token id {bad[0]} is outside the vocabulary (0..{self.vocab - 1})")
        if not ids:
            raise InputError("no tokens given")

    @property
    def name(self) -> str:
        return self.config.name if self.config else self.library.name


def _build_json(directory: Path) -> dict | None:
    """The directory's LLM build.json; None when absent or not one (a graph build's, say)."""
    p = directory / BUILD_JSON
    try:  # a FIFO or device named build.json is no build
        doc = json.loads(read_bounded(p, MAX_BUILD_JSON, "build.json", "a build.json may be")) \
            if p.is_file() else None
    except (OSError, ValueError, RecursionError, InputError):
        return None
    return doc if isinstance(doc, dict) and doc.get("format") == FORMAT else None


def _functions(library: Path) -> set[str]:
    exe = read_executable(library)
    return {f.name for f in exe.vm_functions()} if exe is not None else set()


def is_llm(path: str | os.PathLike) -> bool:
    """A build directory of kind llm, or an executable with the LLM functions."""
    p = Path(path)
    if p.is_dir():
        return _build_json(p) is not None
    if not p.is_file() or p.suffix != ".so":
        return False
    try:
        names = _functions(p)
    except Exception:  # noqa: BLE001 - not an executable at all: some other door's file
        return False
    return set(NEEDED) <= names


def load_npz(path: Path, what: str, limit: int | None = None
             ) -> tuple[list[str], list[np.ndarray]]:
    """An .npz of weights, in file order: read bounded by ``limit`` bytes (a build's own
    param_bytes with their headers, else a share of memory), every member's declared size
    checked before it is inflated (artifacts/npy.py)."""
    cap = limit if limit is not None else memory_cap()
    reason = "the executable's parameters take" if limit is not None else \
        "a weights file may take here (a quarter of memory)"
    blob = read_bounded(path, cap, what, reason)
    try:
        arrays = npz_arrays(blob, (cap, reason), (cap, reason))
    except NPZ_ERRORS as err:
        raise InputError(f"{what} {path}: not a readable .npz ({err})") from None
    return list(arrays), [np.ascontiguousarray(a) for a in arrays.values()]


def _refuse_foreign(library: Path, names: set[str]) -> str:
    """The KV-cache function to call; refuses device code and FlashInfer by name."""
    facts = classify(library)
    devices = [m for m in facts.modules if m not in ("library", "relax.VMExecutable")]
    if devices:
        raise InputError(f"{library}: holds device code ({', '.join(devices)}); minigraph runs "
                         "LLM executables built for the CPU (an llvm target)")
    cache = next((c for c in CACHE_FUNCTIONS if c in names), None)
    if cache is None:
        flash = [n for n in names if "flashinfer" in n]
        why = "FlashInfer's KV cache (GPU only)" if flash else "no KV-cache creation function"
        raise InputError(f"{library}: {why}; expected one of {', '.join(CACHE_FUNCTIONS)}")
    return cache


def open_llm(path: str | os.PathLike, params: str | os.PathLike | None = None) -> OpenedLLM:
    """Opens a build directory or a user's executable (+ ``params``, an .npz)."""
    import tvm
    p = Path(path)
    doc = _build_json(p) if p.is_dir() else None
    library = p / LIBRARY if doc else p
    names = _functions(library)
    missing = [n for n in NEEDED if n not in names]
    if missing:
        raise InputError(f"{library}: not an LLM executable (no {', '.join(missing)} function)")
    cache = _refuse_foreign(library, names)
    if params is None and doc is None:
        raise InputError(f"{library}: give its weights with --params FILE.npz (export_tvm's "
                         "parameter order)")
    sized = doc is not None and not params and isinstance(doc.get("param_bytes"), int) \
        and isinstance(doc.get("params"), list)
    limit = doc["param_bytes"] + NPZ_SLACK * len(doc["params"]) if sized else None  # type: ignore
    pnames, arrays = load_npz(Path(params) if params else p / PARAMS, "--params", limit)
    config = LLMConfig.from_dict(doc["config"]) if doc else None
    vocab, hidden = _vocab_hidden(config, pnames, arrays)
    tok = (p / TOKENIZER) if doc and (p / TOKENIZER).is_file() else None
    exe = tvm.runtime.load_module(str(library))
    return OpenedLLM(library, exe, arrays, pnames, cache, hidden, vocab,
                     config.context_window_size if config else BYO_CONTEXT, config, doc, tok,
                     (doc or {}).get("kernels", {}))


def _vocab_hidden(config: LLMConfig | None, names: list[str], arrays: list[np.ndarray]
                  ) -> tuple[int, int]:
    """From the config, else the embedding table: the first 2-D weight named *embed*."""
    if config is not None:
        return config.vocab_size, config.hidden_size
    for n, a in zip(names, arrays):
        if "embed" in n and a.ndim == 2:
            return int(a.shape[0]), int(a.shape[1])
    raise InputError("--params: no embedding table (a 2-D array named *embed*) to tell the "
                     "vocabulary size and hidden size from")
