"""The legacy front door: graph.json + a Relay/NNVM-era model.so -> the one (debug) executor.

Mirrors ``tvm.contrib.graph_runtime.create(graph_json, lib, ctx)`` + ``load_params`` of TVM
<= 0.20: the graph is parsed and planned like any other, the kernels are the library's own
(kernels.py, loaded by loader.py), and the executor is the same one the other
doors build (``module=None``: time_evaluator cannot call old-ABI kernels, so the profiler's
warm and cold modes time them with minigraph's own loop). Without a graph.json, the graph and
params a Relay ``export_library`` embedded in the library are used.

Before any kernel runs, every op's argument count is checked against the count the kernel's
own check demands (the ``num_args should be N`` text compiled into it).
"""
from __future__ import annotations

import os

from ...artifacts.graph import Graph
from ...artifacts.graph_json import in_file, load_graph, parse_graph
from ...artifacts.library import LibraryFacts
from ...artifacts.model_files import ModelFiles
from ...artifacts.params import load_params
from ...errors import GraphError, InputError
from ..bind import kernel_names
from ..debug import DebugExecutor
from ..sources import Source
from ..storage import plan_storage
from .kernels import kernel_table
from .loader import loaded_legacy


def check_arity(graph: Graph, arity: dict[str, int]) -> None:
    """GraphError for the first op that passes a kernel a different number of arguments than
    the kernel checks for (its inputs plus outputs)."""
    for node in graph.op_nodes():
        want = arity.get(node.func_name)
        have = node.num_inputs + node.num_outputs
        if want is not None and want != have:
            raise GraphError(f"legacy kernel '{node.func_name}' checks for {want} arguments but "
                             f"this node passes {node.num_inputs} inputs + {node.num_outputs} "
                             "outputs; was graph.json built together with this library?",
                             node_index=node.index, node_name=node.name, field="inputs")


def _graph(files: ModelFiles, lib) -> tuple[Graph, str, bytes | None]:
    """(graph, where it came from, embedded params blob or None)."""
    if files.graph is not None:
        return load_graph(files.graph), os.fspath(files.graph), None
    factory = lib.facts.factory
    if factory is None:
        raise InputError(f"{files.lib}: an old-ABI TVM library needs its graph.json (it embeds "
                         "none); pass MODEL.so GRAPH.json")
    where = f"{files.lib} (embedded graph)"
    with in_file(where):
        return parse_graph(factory.graph_json), where, factory.params_blob


def open_legacy(files: ModelFiles, facts: LibraryFacts, *, force: bool = False,
                executor_class: type[DebugExecutor] = DebugExecutor) -> DebugExecutor:
    """The executor over a legacy library's kernels, params bound, every check done;
    ``facts``: what the classifier read of the library; ``executor_class``: what to make."""
    lib = loaded_legacy(facts)  # vetted first: refuses what it cannot serve, saying why
    graph, where, embedded = _graph(files, lib)
    with in_file(where):
        plan = plan_storage(graph)
        kernels = kernel_table(lib, kernel_names(graph))
        check_arity(graph, dict(lib.facts.arity))
        ex = executor_class(graph, kernels, module=None, force=force, plan=plan)
    if files.params is not None:
        ex.load_params(files.params)
    elif embedded is not None:
        ex.load_params(load_params(embedded),
                       Source("params", f"{files.lib} (embedded by export_library)"))
    return ex
