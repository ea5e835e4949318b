"""The Executor: TVM's old ``GraphModule`` API over the pure-Python stages.

graph.json -> Graph -> StoragePlan -> pools/views -> BoundOps -> run loop. ``run`` is the whole
of GraphExecutor::Run: call each bound op in order. Profilers use ``run_op`` and ``ops``; the
plain run loop carries no hook and no timing.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Callable, Mapping

import numpy as np

from .bind import BoundOp, bind_ops, kernel_names
from .errors import InputError, KernelError
from .graph import Graph, load_graph
from .kernels import KernelTable, load_library, resolve
from .params import check_params, load_params, load_params_file
from .storage import StoragePlan, allocate, plan_storage


class Executor:
    """Runs a graph with kernels from a kernel table (normally model.so) on one CPU device."""

    def __init__(self, graph: Graph, kernels: KernelTable, device=None, module=None) -> None:
        import tvm
        self.graph = graph
        self.device = device if device is not None else tvm.cpu(0)
        self.module = module  # the runtime Module the kernels came from, for time_evaluator
        self.plan: StoragePlan = plan_storage(graph)
        self.pools, self.views = allocate(graph, self.plan, self.device)
        self.ops: tuple[BoundOp, ...] = bind_ops(graph, self.views, kernels)
        self._calls = tuple((op.fn, op.args) for op in self.ops)
        self._index = {graph.nodes[n].name: graph.eid(n) for n in graph.arg_nodes}
        self.bound_params: frozenset[str] = frozenset()

    @classmethod
    def from_files(cls, lib_path: str | os.PathLike, graph_path: str | os.PathLike,
                   params: str | os.PathLike | bytes | None = None) -> "Executor":
        """Loads model.so + graph.json (+ params; default: model.params beside graph.json)."""
        graph = load_graph(graph_path)
        module = load_library(lib_path)
        ex = cls(graph, resolve(module, kernel_names(graph), lib_path), module=module)
        default = Path(graph_path).with_name("model.params")
        if params is None and default.is_file():
            params = default
        if params is not None:
            ex.load_params(params)
        return ex

    # -- inputs and params ------------------------------------------------------------------
    def _entry(self, key: str | int) -> int:
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
        for name, val in params.items():
            eid = self._entry(name)
            self.views[eid].copyfrom(self._as_array(name, val, eid))

    def _as_array(self, name, value, eid: int) -> np.ndarray:
        arr = value.numpy() if hasattr(value, "numpy") else np.asarray(value)
        shape, dtype = self.graph.shapes[eid], self.graph.dltypes[eid]
        if tuple(arr.shape) != shape or str(arr.dtype) != dtype:
            raise InputError(f"input '{name}': expected {dtype}{list(shape)}, "
                             f"got {arr.dtype}{list(arr.shape)}")
        return np.ascontiguousarray(arr)

    def load_params(self, params: bytes | str | os.PathLike | Mapping[str, np.ndarray]) -> None:
        """Binds a param blob (bytes or path) or a dict to the arg nodes, checked by name."""
        if isinstance(params, (bytes, bytearray)):
            params = load_params(bytes(params))
        elif not isinstance(params, Mapping):
            params = load_params_file(params)
        check = check_params(self.graph, params, input_names=self.input_names())
        if check.unknown or check.mismatched:
            raise InputError("params do not fit graph.json: " + "; ".join(
                [f"unknown {', '.join(check.unknown[:5])}"] * bool(check.unknown)
                + list(check.mismatched[:5])))
        self.set_input(**params)
        self.bound_params = self.bound_params | frozenset(params)

    def get_input(self, key: str | int):
        return self.views[self._entry(key)]

    def get_num_outputs(self) -> int:
        return len(self.graph.heads)

    def get_output(self, index: int):
        if not 0 <= index < len(self.graph.heads):
            raise InputError(f"output index {index} out of range (0..{len(self.graph.heads) - 1})")
        return self.views[self.graph.entry_id(self.graph.heads[index])]

    # -- running ------------------------------------------------------------------------------
    def run(self, **inputs) -> None:
        """GraphExecutor::Run: every bound op, in order."""
        if inputs:
            self.set_input(**inputs)
        for fn, args in self._calls:
            fn(*args)

    def run_op(self, index: int) -> None:
        """Runs one op, attributing a kernel failure to it (profilers and diagnostics)."""
        op = self.ops[index]
        try:
            op.fn(*op.args)
        except Exception as err:
            raise KernelError(f"op {op.index} (node {op.node_id} '{op.name}', kernel "
                              f"'{op.func_name}') failed: {str(err).strip().splitlines()[-1]}"
                              ) from err

    def run_checked(self) -> None:
        """``run`` with a failing kernel attributed to its op."""
        for i in range(len(self.ops)):
            self.run_op(i)

    def benchmark(self, number: int = 10, repeat: int = 3, min_repeat_ms: float = 0,
                  end_to_end: bool = False, clock: Callable[[], int] = time.perf_counter_ns):
        """GraphModule.benchmark: ``repeat`` samples of mean run time over ``number`` runs.

        Returns seconds per run for each repeat (like ``BenchmarkResult.results``). With
        ``end_to_end``, inputs are re-copied from host each run, as TVM's version did.
        """
        from .timing import time_repeats
        host = [(name, self.get_input(name).numpy()) for name in self.input_names()
                if end_to_end]
        step = (lambda: (self.set_input(**dict(host)), self.run())) if end_to_end else self.run
        self.run()  # untimed first call, as time_evaluator does
        return time_repeats(step, number, repeat, min_repeat_ms, clock)
