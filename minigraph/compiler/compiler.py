"""``minigraph build``: model -> model.so + graph.json + model.params (+ model.vm.so, build.json).

The counterpart of ``relay.build`` + ``lib.export_library`` from TVM <= 0.19, on TVM 0.27 Relax:
LegalizeOps -> AnnotateTIROpPattern -> FoldConstant -> FuseOps -> FuseTIR, a default CPU schedule
per fused kernel, one shared library of kernels named ``tvmgen_default_fused_*``, and the
graph-executor JSON that calls them. The same scheduled kernels are also built into a Relax VM
executable so minigraph can be compared with TVM's own executor on identical code.
"""
from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path

import tvm
import tvm_ffi
from tvm import relax
from tvm.s_tir.analysis import estimate_tir_flops

from ..artifacts.buildinfo import file_digests
from ..artifacts.cpu_features import target_features
from ..artifacts.graph import Graph, Node
from ..artifacts.graph_json import dump_graph
from ..artifacts.params import save_params
from ..errors import InputError
from ..fileio import same_file, write_atomic
from ..fileio.staging import Staging, install_dir, staging_area
from ..measure.inflight import FLIGHT
from ..measure.interrupt import interrupts_kept
from ..threadpool.config import default_threads
from . import machine_rates
from .algorithm_tuning import AlgorithmTuner
from .conv_algorithms import choose_algorithms
from .onnx_import import load_onnx
from .packing import apply_packs, packable_args
from .planner import MemoryPlan, plan_memory
from .prepare import prepare_for_inference
from .relax_to_graph import LoweredGraph, lower_main
from .schedules import POLICIES, schedule_func
from .target import VectorUnit, is_host, make_target, vector_unit
from .tuning import TileChoice, TileTuner
from .vm_main import rebuild_main
from .zoo import ZOO, load_zoo_model


@dataclasses.dataclass(frozen=True)
class KernelInfo:
    symbol: str
    relax_name: str
    flops: float
    schedule: tuple[str, ...]
    hash: str                          # structural hash of the unscheduled PrimFunc
    attrs: tuple[tuple[str, str], ...]  # extra node attrs, e.g. data_layout


@dataclasses.dataclass(frozen=True)
class BuildResult:
    out_dir: Path
    graph: Graph
    plan: MemoryPlan
    kernels: tuple[KernelInfo, ...]
    build_json: dict


def fuse(mod):
    """The Relax pipeline up to fused PrimFuncs (TVM's ``zero`` pipeline minus tuning)."""
    seq = tvm.transform.Sequential([
        relax.transform.LegalizeOps(), relax.transform.AnnotateTIROpPattern(),
        relax.transform.FoldConstant(), relax.transform.FuseOps(), relax.transform.FuseTIR()])
    return seq(mod)


def symbol_for(relax_name: str) -> str:
    """TVM's graph-executor kernel naming: ``tvmgen_default_fused_<ops>``."""
    stem = relax_name if relax_name.startswith("fused_") else f"fused_{relax_name}"
    return f"tvmgen_default_{stem}"


def _schedule_kernels(mod, lowered: LoweredGraph, policy: str, unit: VectorUnit, lanes: int,
                      params: dict, tuner: TileTuner | None = None):
    """Schedules each kernel once; structurally identical kernels (with the same constant
    arguments) share one symbol; with a tuner, a conv's tile is the measured one. Returns
    symbols, funcs, the scheduled module and the packs."""
    tiles: dict[tuple, TileChoice | None] = {}
    by_hash: dict[tuple, KernelInfo] = {}
    symbols: dict[str, KernelInfo] = {}
    funcs: dict[str, object] = {}
    packs: dict[str, tuple] = {}
    packable = packable_args(lowered.nodes, params)
    scheduled_mod = mod.clone()  # the Relax VM build gets the same scheduled kernels
    for name, gv in lowered.kernels.items():
        func = mod[gv]
        const = packable.get(name, frozenset())
        key = (tvm_ffi.structural_hash(func), const)
        if key not in tiles:
            tiles[key] = tuner.choose(func, const) if tuner and policy == "default" else None
        res = schedule_func(func, policy, lanes, unit, const, tiles[key] and tiles[key].tile)
        scheduled_mod[gv] = res.func
        packs[name] = res.packs
        if key not in by_hash:
            symbol = symbol_for(name)
            flops = float(estimate_tir_flops(tvm.IRModule({"main": func})))
            notes = res.applied + ((tiles[key].note(tuner.threads),) if tiles[key] else ())
            by_hash[key] = KernelInfo(symbol, name, flops, notes,
                                      f"{key[0] & (2**64 - 1):016x}", _layout_attrs(func))
            funcs[symbol] = res.func.with_attr("global_symbol", symbol)
        symbols[name] = by_hash[key]
    return symbols, funcs, scheduled_mod, packs


def _layout_attrs(func) -> tuple[tuple[str, str], ...]:
    """Layout attrs as TVM's graph JSON carried them, read off the kernel's block names."""
    text = func.script(show_meta=False) if hasattr(func, "script") else ""
    for layout in ("nhwc", "nchw"):
        if f"conv2d_{layout}" in text or f"conv2d_winograd_{layout}" in text:
            return (("data_layout", layout.upper()),)
    return ()


def _to_graph(lowered: LoweredGraph, symbols: dict[str, KernelInfo]) -> tuple[Graph, MemoryPlan]:
    nodes, seen = [], {}
    for node in lowered.nodes:
        if not node.is_op:
            nodes.append(node)
            continue
        info = symbols[node.name]
        count = seen[info.symbol] = seen.get(info.symbol, -1) + 1
        name = info.symbol if count == 0 else f"{info.symbol}_{count}"
        attrs = dict(node.attrs) | dict(info.attrs) | {"func_name": info.symbol, "hash": info.hash}
        nodes.append(Node(node.index, "tvm_op", name, node.inputs, tuple(sorted(attrs.items()))))
    row_ptr = [0]
    for node in nodes:
        row_ptr.append(row_ptr[-1] + (node.num_outputs if node.is_op else 1))
    arg_nodes = tuple(n.index for n in nodes if not n.is_op)
    draft = Graph(tuple(nodes), arg_nodes, tuple(lowered.heads), tuple(row_ptr),
                  tuple(lowered.shapes), tuple(lowered.dltypes), tuple([0] * len(lowered.shapes)))
    plan = plan_memory(draft)
    return Graph(draft.nodes, arg_nodes, draft.heads, draft.node_row_ptr, draft.shapes,
                 draft.dltypes, plan.storage_ids), plan


def _load_model(model: str, batch: int, dtype: str):
    """A zoo name or an .onnx path -> (IRModule, params, inputs, source, preparation steps).
    An imported model is prepared for inference (prepare.py); zoo models are built prepared."""
    if model.endswith(".onnx") or os.path.sep in model:
        mod, params, inputs, source = load_onnx(model, batch, dtype)
        mod, params, steps = prepare_for_inference(mod, params)
        return mod, params, inputs, source, steps
    zm = load_zoo_model(model, batch, dtype)
    return zm.mod, zm.params, zm.inputs, {"zoo": model, "seed": 0}, []


def _export(executable, path: Path, work: Path) -> None:
    """Exports into ``path``; TVM's temporaries (lib0.o, devc.o) go to ``work``, inside the
    staging area, so a build killed outright leaves none in /tmp."""
    executable.export_library(str(path), workspace_dir=str(work))


ARTIFACTS = ("model.so", "model.vm.so", "graph.json", "model.params", "build.json")


def _check_model(model: str, out_dir: str | os.PathLike) -> None:
    """An unknown zoo name or a missing .onnx file, or an .onnx file the build would write
    over, before anything is built or written."""
    if model.endswith(".onnx") or os.path.sep in model:
        if not Path(model).is_file():
            raise InputError(f"{model}: no such ONNX file")
        clash = next((n for n in ARTIFACTS if same_file(Path(out_dir) / n, model)), None)
        if clash is not None:
            raise InputError(f"-o {out_dir}: would write its {clash} over the model {model} "
                             "it builds; name another directory")
        return
    if model not in ZOO:
        raise InputError(f"unknown model '{model}': expected an .onnx file or one of "
                         f"{', '.join(sorted(ZOO))}")


def build(model: str, out_dir: str | os.PathLike, *, batch: int = 1, dtype: str = "float32",
          target: str | None = None, policy: str = "default", vm: bool = True,
          tune: bool = False, winograd: bool = True) -> BuildResult:
    """Builds the classic artifacts into out_dir; returns what was built and planned.

    Everything is written into a staging directory first and moved into ``out_dir`` as one
    complete set (fileio.install_dir): a failed or interrupted build leaves ``out_dir`` as it
    was (absent, or holding the previous build), never a new model.so beside an old graph.json.
    Ctrl-C ends as KeyboardInterrupt even when it lands inside TVM. ``tune``: each conv's
    register tile and each 3x3 conv's algorithm measured on this host (compiler/tuning.py,
    algorithm_tuning.py), cached per machine.
    ``winograd``: the 3x3 stride-1 convs where it pays computed by Winograd's algorithm
    (conv_algorithms.py; with the default schedule policy only, as is the padding of output
    channels to whole vectors, channel_padding.py)."""
    if policy not in POLICIES:
        raise InputError(f"unknown schedule policy '{policy}': expected one of {', '.join(POLICIES)}")
    _check_model(model, out_dir)
    FLIGHT.phase(f"building {model} (TVM's compiler)")  # what a crash report says was running
    with interrupts_kept():
        tgt = make_target(target)
        with staging_area(out_dir) as area:  # removed however the block ends
            res = _build_into(area, model, tgt, batch=batch, dtype=dtype, policy=policy, vm=vm,
                              tune=tune, winograd=winograd)
            install_dir(area.files, out_dir, owned=ARTIFACTS)
    return dataclasses.replace(res, out_dir=Path(out_dir))


def _build_into(area: Staging, model: str, tgt, *, batch: int, dtype: str, policy: str,
                vm: bool, tune: bool, winograd: bool) -> BuildResult:
    out = area.files
    t0 = time.perf_counter()
    unit = vector_unit(tgt)
    mod, params, inputs, source, steps = _load_model(model, batch, dtype)
    algorithms, measured = [], None
    if policy == "default":
        measured = AlgorithmTuner(tgt, unit, unit.lanes(dtype), default_threads()) \
            if tune else None
        mod, params, algorithms = _algorithms(mod, params, tgt, unit.lanes(dtype), winograd,
                                              measured)
    fused = fuse(mod)
    lowered = lower_main(fused)
    params = {**params, **lowered.constants}
    tuner = TileTuner(tgt, unit, unit.lanes(dtype), default_threads()) if tune else None
    symbols, funcs, scheduled, packs = _schedule_kernels(fused, lowered, policy, unit,
                                                         unit.lanes(dtype), params, tuner)
    packed = apply_packs(lowered, params, packs)
    if packed:
        scheduled = rebuild_main(scheduled, lowered, list(inputs))
    graph, plan = _to_graph(lowered, symbols)
    t_lib = time.perf_counter()
    _export(tvm.compile(tvm.IRModule(funcs), target=tgt), out / "model.so", area.work)
    if vm:
        _export(tvm.compile(scheduled, target=tgt, relax_pipeline="default_build"),
                out / "model.vm.so", area.work)
    t_end = time.perf_counter()
    write_atomic(out / "graph.json", dump_graph(graph))
    write_atomic(out / "model.params", save_params(params))
    info = _build_json(model, source, tgt, policy, batch, dtype, inputs, symbols, graph, plan,
                       frontend_s=t_lib - t0, codegen_s=t_end - t_lib)
    info["vector_unit"] = {"isa": unit.isa, "bits": unit.bits, "registers": unit.registers}
    info["preparation"] = steps
    info["packed_params"] = packed
    info.update(_choices(info["total_flops"], algorithms, tuner, measured))
    info["files"] = file_digests(out, ("model.so", "model.vm.so") if vm else ("model.so",))
    write_atomic(out / "build.json", json.dumps(info, indent=2))
    return BuildResult(out, graph, plan, tuple({k.symbol: k for k in symbols.values()}.values()),
                       info)


def _choices(total_flops: float, algorithms: list, tuner: TileTuner | None,
             measured: AlgorithmTuner | None) -> dict:
    """build.json's conv algorithms, the network's FLOPs as direct convs compute them (what
    another runtime executes; ``total_flops`` is what these kernels execute: fewer where a
    conv is Winograd's, more where its output channels are padded, the zero channels
    computed too) and what ``--tune`` measured."""
    return {
        "conv_algorithms": [c.to_dict() for c in algorithms],
        "direct_flops": total_flops + sum(c.direct_flops - c.flops for c in algorithms),
        "tuning": tuner and {"threads": tuner.threads, "measured": tuner.measured,
                             "cached": tuner.cached, "seconds": round(tuner.seconds, 2),
                             "algorithms": {"measured": measured.measured if measured else 0,
                                            "cached": measured.cached if measured else 0}},
    }


def _algorithms(mod, params: dict, tgt, lanes: int, winograd: bool,
                measured: AlgorithmTuner | None):
    """Each conv's algorithm (conv_algorithms.py) at this machine's rate of multiply-adds per
    weight byte (machine_rates.py; measured on first need), or measured with ``--tune``."""
    rates = machine_rates.for_build(is_host(tgt), default_threads(), lanes)
    return choose_algorithms(mod, params, lanes, rates if winograd else None, measured)


def _build_json(model, source, tgt, policy, batch, dtype, inputs, symbols, graph, plan, *,
                frontend_s: float, codegen_s: float) -> dict:
    kernels = {k.symbol: k for k in symbols.values()}
    return {
        "format": "minigraph-build/1",
        "tvm_version": tvm.__version__,
        "model": model, "source": source, "batch": batch, "dtype": dtype,
        "inputs": {n: {"shape": list(s), "dtype": t} for n, (s, t) in inputs.items()},
        "target": str(tgt), "schedule_policy": policy,
        "cpu_features": target_features(tgt),  # checked before dlopen (artifacts/cpu_features)
        "build_time_s": round(frontend_s + codegen_s, 3),
        "frontend_and_schedule_s": round(frontend_s, 3), "codegen_s": round(codegen_s, 3),
        "memory": {"planned_activation_nbytes": plan.activation_nbytes,
                   "one_buffer_per_entry_nbytes": plan.naive_nbytes,
                   "ratio": round(plan.saving, 4), "num_storage_ids": len(plan.pool_nbytes)},
        "kernels": {s: {"relax_name": k.relax_name, "flops": k.flops, "hash": k.hash,
                        "schedule": list(k.schedule)} for s, k in kernels.items()},
        "vm_names": {name: k.symbol for name, k in symbols.items()},
        "total_flops": sum(kernels[n.func_name].flops for n in graph.op_nodes()),
    }
