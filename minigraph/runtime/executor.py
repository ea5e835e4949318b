"""The Executor: TVM's old ``GraphModule`` API over the pure-Python stages.

graph.json -> Graph -> StoragePlan -> pools/views -> BoundOps -> run loop. ``run`` is the whole
of GraphExecutor::Run: call each bound op in order; the loop carries no hook and no timing.
What is not executing sits in its own module: loading and checking the files (load.py), ops
called one at a time with failures named (checked.py, the debug executor's part), where each
input's value came from (sources.py), GraphModule.benchmark (benchmark.py), GraphModule's
questions about inputs and outputs (queries.py).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Callable, Mapping

import numpy as np

from ..artifacts.bounds import params_bound
from ..artifacts.graph import Graph
from ..artifacts.graph_json import in_file
from ..artifacts.model_files import ModelFiles
from ..artifacts.read_once import ModelArtifacts, read_artifacts
from ..artifacts.params import check_params, load_params, load_params_file
from ..errors import InputError
from .benchmark import graph_module_benchmark
from .bind import BoundOp, KernelTable, bind_ops
from .checked import CheckedCalls
from .load import check_params_complete, default_params, load_model
from .queries import GraphModuleQueries
from .sources import GIVEN, UNSET, Source
from .storage import StoragePlan, allocate, available_nbytes, check_fits, plan_storage


class Executor(CheckedCalls, GraphModuleQueries):
    """Runs a graph with kernels from a kernel table (normally model.so) on one CPU device;
    ``run_op``/``run_checked`` (runtime/checked.py) call ops one at a time, failures named."""

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
        self.record_ops()  # a parent names the op a crash killed (measure/inflight.py)

    @classmethod
    def from_files(cls, lib_path: str | os.PathLike, graph_path: str | os.PathLike,
                   params: str | os.PathLike | bytes | None = None, *,
                   force: bool = False, complete: bool = True) -> "Executor":
        """Loads model.so + graph.json (+ params; default: model.params beside graph.json),
        every check before the first kernel call made (runtime/load.py), the plan against
        available memory too; ``complete`` as in ``from_artifacts``."""
        art = read_artifacts(ModelFiles(Path(lib_path), Path(graph_path), None))
        return cls.from_artifacts(art, params, force=force, complete=complete)

    @classmethod
    def from_artifacts(cls, art: ModelArtifacts, params: str | os.PathLike | bytes | None, *,
                       force: bool = False, complete: bool = True) -> "Executor":
        """The graph door's executor from what was read once (artifacts/read_once.py);
        ``complete`` False: a weight build.json expects and no params give is left for the
        caller to decide (values/policy.py, ``--fill``)."""
        parts = load_model(art)
        graph_path = art.files.graph
        with in_file(graph_path):
            ex = cls(parts.graph, parts.kernels, module=parts.module, force=force,
                     plan=parts.plan)
        params = default_params(graph_path, params)
        if params is not None:
            ex.load_params(params)
        shown = None if params is None else \
            "params" if isinstance(params, (bytes, bytearray)) else os.fspath(params)
        if complete:
            check_params_complete(ex.input_names(), ex.bound_params, shown, parts.graph_build)
        return ex

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

    benchmark = graph_module_benchmark  # GraphModule.benchmark (runtime/benchmark.py)
