"""The debug executor: the Executor plus what profiling and diagnosing need around its run loop.

Counterpart: ``GraphExecutorDebug : GraphExecutor`` (src/runtime/graph_executor/debug/) and its
Python face ``GraphModuleDebug(GraphModule)`` (python/tvm/contrib/debugger/debug_executor.py,
v0.16), which ``debug_executor.create`` made instead of the plain module. As there, the plain
executor (runtime/executor.py) plans, allocates, binds and runs, and this subclass adds:

- ops called one at a time, a failure named by its op (``run_op``, ``call_op``,
  ``run_checked``: ``ExecuteNode`` / ``RunOpHost``), each recorded as the op in flight first,
  and the executor's op table written when it is made (measure/inflight.py), so a parent
  names the op a crash killed;
- ``benchmark``, GraphModule's (runtime/benchmark.py: time_evaluator's loop, measure/clock.py);
- loading from files (``from_files``, ``from_artifacts``: runtime/load.py's checks, which read
  the library's ELF image), as ``debug_executor.create`` took the graph and the library.

Every door opens this executor (runtime/doors.py): every command that runs a model profiles,
diagnoses or checks it op by op.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..artifacts.graph import Graph
from ..artifacts.graph_json import in_file
from ..artifacts.model_files import ModelFiles
from ..artifacts.read_once import ModelArtifacts, read_artifacts
from ..errors import KernelError, last_line
from ..measure.inflight import FLIGHT
from .benchmark import graph_module_benchmark
from .bind import KernelTable
from .executor import Executor
from .load import check_params_complete, default_params, load_model
from .storage import StoragePlan


def kernel_message(err: Exception) -> str:
    """TVM's argument-check errors span lines (problem, signature, 'expected X'): keep the
    problem and the expectation, drop the long signature."""
    lines = [ln.strip() for ln in str(err).strip().splitlines() if ln.strip()]
    if len(lines) > 2 and lines[-1].startswith("expected"):
        return f"{lines[0].removesuffix(' when calling:')}, {lines[-1]}"
    return last_line(err)


class DebugExecutor(Executor):
    """The Executor with ops called one at a time, failures and crashes named by their op."""

    def __init__(self, graph: Graph, kernels: KernelTable, device=None, module=None, *,
                 force: bool = False, plan: StoragePlan | None = None) -> None:
        """As the Executor's, then the op table written where a parent reads it after a crash."""
        super().__init__(graph, kernels, device, module, force=force, plan=plan)
        self.record_ops()

    @classmethod
    def from_files(cls, lib_path: str | os.PathLike, graph_path: str | os.PathLike,
                   params: str | os.PathLike | bytes | None = None, *,
                   force: bool = False, complete: bool = True) -> DebugExecutor:
        """Loads model.so + graph.json (+ params; default: model.params beside graph.json),
        every check before the first kernel call made (runtime/load.py), the plan against
        available memory too; ``complete`` as in ``from_artifacts``."""
        art = read_artifacts(ModelFiles(Path(lib_path), Path(graph_path), None))
        return cls.from_artifacts(art, params, force=force, complete=complete)

    @classmethod
    def from_artifacts(cls, art: ModelArtifacts, params: str | os.PathLike | bytes | None, *,
                       force: bool = False, complete: bool = True) -> DebugExecutor:
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

    # -- crash records and per-op calls ---------------------------------------------------------
    def record_ops(self) -> None:
        """Writes the op table a parent reads to name the op a crash killed."""
        FLIGHT.ops(self.describe_ops)

    def describe_op(self, index: int) -> str:
        """'op 3 (node 7 'name', kernel 'func')': how errors and crash reports name an op."""
        op = self.ops[index]
        return f"op {op.index} (node {op.node_id} '{op.name}', kernel '{op.func_name}')"

    def describe_ops(self) -> list[str]:
        return [self.describe_op(i) for i in range(len(self.ops))]

    def run_op(self, index: int) -> None:
        """Runs one op, attributing a kernel failure to it (profilers and diagnostics), and
        recorded as the op in flight first (a crash is attributed to it too)."""
        FLIGHT.op(index)
        self.call_op(index)

    def call_op(self, index: int) -> None:
        """``run_op`` without the in-flight record: for timed windows, whose caller records
        the op (``FLIGHT.op``) before its clock starts."""
        fn, args = self.ops[index].call
        try:
            fn(*args)
        except Exception as err:
            raise KernelError(f"{self.describe_op(index)} failed: {kernel_message(err)}") \
                from err

    def run_checked(self) -> None:
        """``run`` with a failing (or crashing) kernel attributed to its op."""
        for i in range(len(self.ops)):
            self.run_op(i)
        FLIGHT.op(-1)  # no op in flight after it: a full run that follows records none

    benchmark = graph_module_benchmark  # GraphModule.benchmark (runtime/benchmark.py)
