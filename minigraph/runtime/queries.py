"""GraphModule's questions about a graph's inputs and outputs (get_input_info, get_output, ...),
answered from the executor's graph and views; nothing here runs a kernel.
Counterpart: the query half of ``tvm.contrib.graph_executor.GraphModule``.
"""
from __future__ import annotations

from typing import Callable

from ..artifacts.graph import Graph
from ..errors import InputError


class GraphModuleQueries:
    """Mixed into the Executor, which provides ``graph``, ``views``, ``entry_of`` and
    ``input_names``."""

    graph: Graph
    views: list
    entry_of: Callable[[str | int], int]
    input_names: Callable[[], tuple[str, ...]]

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
