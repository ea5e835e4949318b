"""``minigraph build`` for LLMs: a Hugging Face folder or a built-in config -> a Relax VM
executable (embed / prefill / decode / create_tir_paged_kv_cache), its weights and build.json.

Counterpart: TVM's ``optimize_llm`` tutorial (``export_tvm`` + ``tvm.compile``) and MLC-LLM's
``mlc_llm compile`` + ``convert_weight``, with the CPU pipeline's own passes (legalize, fuse,
lower, finalize) and one step of minigraph's between FuseTIR and lowering: the linear layers'
schedules (kernels.py). The files are written into a staging area and moved into place
together (fileio/staging.py), as for every build.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import tvm
from tvm.relax.backend.cpu_generic import pipeline as cpu

from ..compiler.target import make_target, vector_unit
from ..errors import InputError
from ..fileio import write_atomic
from ..fileio.staging import install_dir, staging_area
from .config import BUILTIN, LLMConfig
from .files import ARTIFACTS, BUILD_JSON, FORMAT, LIBRARY, PARAMS, TOKENIZER
from .kernels import LOOP_PARTITION, schedule_module
from .layout import build_params, ordered
from .model import CausalLM
from .weights import read_hf_folder, seeded_weights

# this module imports TVM's Relax at the top (seconds): the CLI imports it only to build


@dataclass(frozen=True)
class LLMBuild:
    out_dir: Path
    config: LLMConfig
    build_json: dict


def is_llm_source(model: str) -> bool:
    """A built-in LLM config name, or a folder holding a Hugging Face config.json."""
    return model in BUILTIN or (Path(model).is_dir() and (Path(model) / "config.json").is_file())


def _source(model: str):
    """(config, Hugging Face tensors, tokenizer path or None, what build.json says it was)."""
    if model in BUILTIN:
        c = BUILTIN[model]
        return c, seeded_weights(c, seed=0), None, {"builtin": model, "seed": 0}
    ckpt = read_hf_folder(model)
    return ckpt.config, ckpt.tensors, ckpt.tokenizer, {
        "huggingface": str(Path(model).resolve()), "dtypes": list(ckpt.source_dtypes)}


# The PrimFuncs of an LLM build that TVM 0.27 leaves without ``tirx.noalias``, for which it is
# a fact: the VM's shape functions and ``compute_symbolic_expr`` (at most one buffer), and the
# paged KV cache's kernels for features minigraph's engine never uses (sliding-window and tree
# attention, page copy, compaction), whose runtime (src/runtime/vm/paged_kv_cache.cc) gives
# each a distinct tensor per parameter, writing only its own outputs or, in place, its one
# ``pages`` buffer.
NOALIAS_FACT = ("shape_func", "compute_symbolic_expr", "batch_decode_paged_kv",
                "batch_prefill_paged_kv", "batch_tree_attn", "tree_attn_paged_kv",
                "copy_single_page", "compact_kv_copy")


def mark_noalias(mod) -> tuple[object, list[str]]:
    """``tirx.noalias`` on the PrimFuncs of ``NOALIAS_FACT`` that lack it; returns the others
    still without it. Why: measured on TVM 0.27 (Zen 4), one function without the attribute
    in the LLVM module makes the parallel GEMMs' register tiles go through memory on every FMA
    (the accumulators stored each iteration): prefill's linear layers ran at 45 instead of
    105 GFLOP/s at one thread, as when compiled alone."""
    left = []
    for gv, func in list(mod.functions.items()):
        if not isinstance(func, tvm.tirx.PrimFunc) or (func.attrs and "tirx.noalias" in func.attrs):
            continue
        if gv.name_hint.startswith(NOALIAS_FACT):
            mod[gv] = func.with_attr("tirx.noalias", True)
        else:
            left.append(gv.name_hint)
    return mod, left


def _pipeline(target, lanes: int, registers: int, notes: dict):
    """The CPU backend's default passes with the linear schedules after FuseTIR."""
    @tvm.transform.module_pass(opt_level=0, name="MinigraphLinearSchedules")
    def schedules(mod, _ctx):
        mod, info = schedule_module(mod, lanes, registers)
        notes.update(info)
        return mod

    @tvm.transform.module_pass(opt_level=0, name="MinigraphLLMPipeline")
    def run(mod, _ctx):
        with target:
            mod = tvm.transform.Sequential(
                cpu.library_dispatch_passes(target) + cpu.legalize_passes(target)
                + [schedules] + cpu.dataflow_lower_passes(target)
                + cpu.finalize_passes(target))(mod)
        mod, left = mark_noalias(mod)
        notes["_without_noalias"] = left  # build.json says which, if any (they slow the GEMMs)
        return mod
    return run


def compile_llm(config: LLMConfig, target, work: Path, out: Path) -> tuple[list, dict]:
    """Exports and compiles the model into ``out/model.vm.so``; returns the executable's
    parameters (name, shape) in export order and each kernel's schedule and costs."""
    unit = vector_unit(target)
    lanes = unit.lanes("float32")
    model = CausalLM(config, lanes, target)
    mod, named = model.export_tvm(spec=model.spec())
    notes: dict = {}
    with tvm.transform.PassContext(config=LOOP_PARTITION):
        exe = tvm.compile(mod, target=target,
                          relax_pipeline=_pipeline(target, lanes, unit.registers, notes))
    exe.export_library(str(out / LIBRARY), workspace_dir=str(work))
    return [(n, tuple(int(d) for d in p.shape)) for n, p in named], notes


def build_llm(model: str, out_dir: str | os.PathLike, target: str | None = None) -> LLMBuild:
    """Builds ``model`` (a built-in config name or a Hugging Face folder) into ``out_dir``."""
    t0 = time.perf_counter()
    config, tensors, tokenizer, source = _source(model)
    tgt = make_target(target)
    lanes = vector_unit(tgt).lanes("float32")
    params = build_params(config, tensors, lanes)
    with staging_area(out_dir) as area:
        names_shapes, kernels = compile_llm(config, tgt, area.work, area.files)
        without_noalias = kernels.pop("_without_noalias", [])
        for k in kernels.values():  # which layer each linear kernel is, for the profile's rows
            if "in_features" in k:
                k["layer"] = config.linear_role(k["in_features"], k["out_features"])
        arrays = ordered(params, names_shapes)
        np.savez(area.files / PARAMS, **dict(arrays))  # zip order = the executable's order
        if tokenizer is not None:
            shutil.copyfile(tokenizer, area.files / TOKENIZER)
        info = {"format": FORMAT, "kind": "llm", "model": model, "source": source,
                "config": config.to_dict(), "target": str(tgt), "lanes": lanes,
                "params": [[n, list(s)] for n, s in names_shapes],
                "param_bytes": int(sum(a.nbytes for _, a in arrays)),
                "kernels": kernels, "kernels_without_noalias": without_noalias,
                "build_time_s": round(time.perf_counter() - t0, 3),
                "tvm_version": tvm.__version__}
        write_atomic(area.files / BUILD_JSON, json.dumps(info, indent=2))
        install_dir(area.files, out_dir, owned=ARTIFACTS)
    return LLMBuild(Path(out_dir), config, info)


def check_source(model: str) -> None:
    """Refuses, before any work, a path that is neither a built-in name nor an HF folder."""
    if not is_llm_source(model):
        raise InputError(f"{model}: not a built-in LLM ({', '.join(BUILTIN)}) nor a folder "
                         "with a Hugging Face config.json")

