"""The Executor: TVM's ``GraphExecutor`` (and its Python face, ``GraphModule``) over the
pure-Python stages.

Graph -> StoragePlan -> pools/views -> BoundOps -> run loop: it plans, allocates, binds and
runs, and answers GraphModule's questions about inputs and outputs. ``run`` is the whole of
GraphExecutor::Run: call each bound op in order; the loop carries no hook and no timing.
It reads no library and measures nothing (a test walks its imports): loading and checking the
files is load.py's; ops called one at a time with failures and crashes named, ``benchmark`` and
``from_files`` are the debug executor's, a subclass (debug.py, as ``GraphExecutorDebug :
GraphExecutor``); where each input's value came from is sources.py.
"""
from __future__ import annotations

import os
import sys
from typing import Callable, Mapping

import numpy as np

from ..artifacts.bounds import params_bound
from ..artifacts.graph import Graph
from ..artifacts.params import check_params, load_params, load_params_file
from ..errors import InputError
from .bind import BoundOp, KernelTable, bind_ops
from .sources import GIVEN, UNSET, Source
from .storage import StoragePlan, allocate, available_nbytes, check_fits, plan_storage


class Executor:
    """Runs a graph with kernels from a kernel table (normally model.so) on one CPU device;
    the debug executor (runtime/debug.py) calls its ops one at a time, failures named."""

    def __init__(self, graph: Graph, kernels: KernelTable, device=None, module=None, *,
                 force: bool = False, plan: StoragePlan | None = None) -> None:
        """Plans storage, refuses a plan larger than available memory (unless ``force``),
        then allocates and binds; nothing is allocated for a graph that cannot fit."""
        import tvm  # lazy: TVM-free commands load this module (TVM: ~1.2 s to import)
        self.graph = graph
        self.device = device if device is not None else tvm.cpu(0)
        self.module = module  # the runtime Module the kernels came from, for time_evaluator
        self.plan: StoragePlan = plan if plan is not None else plan_storage(graph)
        if not force:  # forced, check_fits ignores the figure: do not ask the OS for it
            check_fits(self.plan, available_nbytes())
        self.pools, self.views = allocate(graph, self.plan, self.device)
        self.ops: tuple[BoundOp, ...] = bind_ops(graph, self.views, kernels)
        # the run loop's own list: (packed function, bound arguments) per op, nothing else
        self.calls: tuple[tuple[Callable, tuple], ...] = tuple(op.call for op in self.ops)
        self._index = {graph.nodes[n].name: graph.eid(n) for n in graph.arg_nodes}
        self.bound_params: frozenset[str] = frozenset()
        # where each arg node's value came from (runtime/sources.py); all unset until given
        self.sources: dict[str, Source] = {name: UNSET for name in graph.input_names()}

    # -- inputs and params ------------------------------------------------------------------
    def entry_of(self, key: str | int) -> int:
        """The entry id of an input (by name, or by arg-node position)."""
        if isinstance(key, int):
            if not 0 <= key < len(self.graph.arg_nodes):
                raise InputError(f"input index {key} out of range (0..{len(self._index) - 1})")
            return self.graph.eid(self.graph.arg_nodes[key])
        if key not in self._index:
            raise InputError(f"no input named '{key}'; inputs: {', '.join(self.input_names())}")
        return self._index[key]

    def input_names(self) -> tuple[str, ...]:
        return self.graph.input_names()

    def set_input(self, key: str | int | None = None, value=None, **params) -> None:
        """``set_input(name, value)`` and/or ``set_input(**{name: value})``; copies the data."""
        if key is not None:
            params = {key: value, **params}
        self.set_values(params, GIVEN)

    def set_values(self, values: Mapping, source: Source) -> None:
        """Copies ``values`` (name or index -> array) in and records where they came from."""
        for key, val in values.items():
            eid = self.entry_of(key)
            self.views[eid].copyfrom(self.as_input(key, val, eid))
            self.sources[self.input_names()[key] if isinstance(key, int) else key] = source

    def as_input(self, name, value, eid: int) -> np.ndarray:
        """``value`` as the host array ``set_input`` copies in: native byte order, C order,
        checked against the entry's shape and dtype."""
        arr = value.numpy() if hasattr(value, "numpy") else np.asarray(value)
        if arr.dtype.byteorder == (">" if sys.byteorder == "little" else "<"):
            arr = arr.astype(arr.dtype.newbyteorder("="))  # TVM copies raw bytes: go native
        shape, dtype = self.graph.shapes[eid], self.graph.dltypes[eid]
        if tuple(arr.shape) != shape or str(arr.dtype) != dtype:
            raise InputError(f"input '{name}': expected {dtype}{list(shape)}, "
                             f"got {arr.dtype}{list(arr.shape)}")
        return np.require(arr, requirements="C")  # ascontiguousarray makes 0-d arrays 1-d

    def load_params(self, params: bytes | str | os.PathLike | Mapping[str, np.ndarray],
                    origin: Source | None = None) -> None:
        """Binds a param blob (bytes or path) or a dict to the arg nodes, checked by name;
        ``origin``: where they came from (default: params, with the file's path)."""
        source = "params"
        if isinstance(params, (bytes, bytearray)):
            params = load_params(bytes(params), copy=False)  # copied into the views below
        elif not isinstance(params, Mapping):
            # read no more than this graph's arg nodes can hold (a stream, e.g. /dev/zero,
            # no further than that; a larger file not at all)
            source, params = os.fspath(params), load_params_file(
                params, copy=False, bound=params_bound(self.graph))
        check_params(self.graph, params, input_names=self.input_names()).refuse_misfits(source)
        self.set_values(params, origin or Source("params", source))
        self.bound_params = self.bound_params | frozenset(params)

    # -- running ------------------------------------------------------------------------------
    def run(self, **inputs) -> None:
        """GraphExecutor::Run: every bound op, in order."""
        if inputs:
            self.set_input(**inputs)
        for fn, args in self.calls:
            fn(*args)

    # -- GraphModule's questions about inputs and outputs ------------------------------------
    def get_input(self, key: str | int):
        return self.views[self.entry_of(key)]

    def get_num_inputs(self) -> int:
        """GraphModule.get_num_inputs: every arg node, params included (as GraphExecutor)."""
        return len(self.graph.arg_nodes)

    def get_input_index(self, name: str) -> int:
        """GraphModule.get_input_index: the arg-node position of ``name``, -1 if none."""
        names = self.input_names()
        return names.index(name) if name in names else -1

    def get_input_name(self, index: int) -> str:
        self.entry_of(index)  # range check, with the project's error
        return self.input_names()[index]

    def get_input_info(self) -> tuple[dict[str, tuple[int, ...]], dict[str, str]]:
        """GraphModule.get_input_info: (shape by input name, dtype by input name)."""
        eids = {name: self.entry_of(name) for name in self.input_names()}
        return ({n: self.graph.shapes[e] for n, e in eids.items()},
                {n: self.graph.dltypes[e] for n, e in eids.items()})

    def get_num_outputs(self) -> int:
        return len(self.graph.heads)

    def get_output(self, index: int):
        if not 0 <= index < len(self.graph.heads):
            raise InputError(f"output index {index} out of range (0..{len(self.graph.heads) - 1})")
        return self.views[self.graph.entry_id(self.graph.heads[index])]
