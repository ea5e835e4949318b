"""model.so + graph.json (+ build.json) -> the checked parts an Executor is made of.

What TVM's ``tvm.runtime.load_module`` + ``graph_executor.create`` did before the first run,
with every check that can be made before a kernel is called: the library file and the CPU it
was built for, every func_name, each op's argument shapes and dtypes against the kernel's
signature in model.so, and the storage plan. ``DebugExecutor.from_files`` (runtime/debug.py)
makes the executor from these parts and binds the params; the params' completeness against
build.json is checked here too.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from ..artifacts.buildinfo import declared_inputs
from ..artifacts.graph import Graph
from ..artifacts.graph_json import in_file, load_graph
from ..artifacts.read_once import ModelArtifacts
from ..artifacts.signatures import ArgSpec, read_signatures
from ..errors import GraphError, ParamsError
from .bind import KernelTable, kernel_names
from .kernels import kernel_module, open_library, resolve
from .storage import StoragePlan, plan_storage


@dataclass(frozen=True)
class LoadedModel:
    """A graph with its storage plan and its kernels, resolved and checked."""

    graph: Graph
    plan: StoragePlan
    module: object          # the runtime Module the kernels came from (for time_evaluator)
    kernels: KernelTable
    graph_build: dict       # the build.json beside graph.json ({}: none)


def load_model(art: ModelArtifacts) -> LoadedModel:
    """The graph door's parts from what was read once at the boundary (``art``): graph.json
    parsed and planned first (its errors before the library's), then the library loaded."""
    graph_path = art.files.graph
    assert graph_path is not None  # the graph door takes only files with a graph.json
    graph = load_graph(graph_path)
    with in_file(graph_path):  # later stages' GraphErrors name the file too
        plan = plan_storage(graph)  # storage-id errors before loading any native code
        facts = art.facts  # the classifier's error, if it could not read the library
        # checks the CPU it was built for; a VM executable's kernels are in its library
        module = kernel_module(open_library(art.files.lib, facts, art.lib_build))
        kernels = resolve(module, kernel_names(graph), art.files.lib, facts.kernels)
        check_graph_args(graph, read_signatures(art.files.lib, kernels))
    return LoadedModel(graph, plan, module, kernels, art.graph_build)


def default_params(graph_path: str | os.PathLike,
                   params: str | os.PathLike | bytes | None) -> str | os.PathLike | bytes | None:
    """``params``, else model.params beside graph.json if it exists (a directory there is an
    error when read, not "absent")."""
    default = Path(graph_path).with_name("model.params")
    return default if params is None and default.exists() else params


def check_params_complete(input_names: tuple[str, ...], bound: frozenset[str],
                          source: str | None, build: dict) -> None:
    """With a build.json (``build``, beside graph.json) naming the real inputs, every other
    arg node needs a param."""
    inputs = declared_inputs(input_names, build)
    if inputs is None:
        return
    supplied = inputs | bound
    missing = [n for n in input_names if n not in supplied]
    if missing:
        where = f"{source} lacks" if source is not None else \
            "no params file (model.params beside graph.json) for"
        raise ParamsError(f"{where} {len(missing)} param(s) graph.json needs: "
                          f"{', '.join(missing[:5])}; build.json lists only "
                          f"{', '.join(sorted(inputs)) or 'no'} as inputs. Pass --params with "
                          "the model.params built together with this graph.json")


def _fits(spec: ArgSpec, dtype: str, shape: tuple[int, ...]) -> bool:
    if spec.shape is None:  # not a Tensor parameter: nothing to compare
        return True
    return spec.dtype == dtype and len(spec.shape) == len(shape) and \
        all(want in (None, got) for want, got in zip(spec.shape, shape))


def check_graph_args(graph: Graph, sigs: dict[str, tuple[ArgSpec, ...]]) -> None:
    """GraphError for the first op whose arguments cannot be what its kernel expects."""
    hint = "was graph.json edited, or built together with another model.so?"
    for node in graph.op_nodes():  # __copy's own rule is a graph.json check (graph_checks)
        specs = sigs.get(node.func_name)
        if specs is None:
            continue
        in_eids, out_eids = graph.op_eids(node)
        eids = in_eids + out_eids
        where = {"node_index": node.index, "node_name": node.name}
        if len(specs) != len(eids):
            raise GraphError(f"kernel '{node.func_name}' takes {len(specs)} arguments but this "
                             f"node passes {len(node.inputs)} inputs + {node.num_outputs} "
                             f"outputs; {hint}", field="inputs", **where)
        for k, (spec, eid) in enumerate(zip(specs, eids)):
            dtype, shape = graph.dltypes[eid], graph.shapes[eid]
            got = (math.prod(shape),) if node.flatten_data else shape
            if _fits(spec, dtype, got):
                continue
            field = "dltype" if spec.dtype != dtype else "shape"
            flat = " (flattened: flatten_data is 1)" if node.flatten_data else ""
            raise GraphError(f"kernel '{node.func_name}' expects argument #{k} '{spec.name}' as "
                             f"{spec.describe()}, but entry {eid} is {dtype}{list(got)}{flat}; "
                             f"{hint}", field=f"attrs.{field}[{eid}]", **where)
