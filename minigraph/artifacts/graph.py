"""The graph model: Node, NodeEntry and Graph (what TVM's ``GraphExecutor`` keeps after Load).

Mirrors the members of ``GraphExecutor`` (src/runtime/graph_executor/graph_executor.h):
``nodes_``, ``input_nodes_`` (arg_nodes), ``outputs_`` (heads), ``node_row_ptr_`` and
``attrs_``. A Graph is only ever made by graph_json.parse_graph (or by the build, from
already-valid parts), so every index in it is known to be in range.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..errors import GraphError


@dataclass(frozen=True)
class NodeEntry:
    """One output of a node: TVM's ``GraphExecutor::NodeEntry``."""

    node_id: int
    index: int
    version: int = 0


@dataclass(frozen=True)
class Node:
    """A graph node: TVM's ``GraphExecutor::Node`` with ``TVMOpParam`` kept as string attrs."""

    index: int
    op: str
    name: str
    inputs: tuple[NodeEntry, ...]
    attrs: tuple[tuple[str, str], ...]

    def attr(self, key: str, default: str | None = None) -> str | None:
        for k, v in self.attrs:
            if k == key:
                return v
        return default

    @property
    def is_op(self) -> bool:
        return self.op == "tvm_op"

    @property
    def func_name(self) -> str:
        return (self.attr("func_name") or "") if self.is_op else ""

    @property
    def num_outputs(self) -> int:
        # null nodes hold exactly one entry (an input or a param), as in TVM
        return int(self.attr("num_outputs", "1") or 1) if self.is_op else 1

    @property
    def num_inputs(self) -> int:
        return len(self.inputs)

    @property
    def flatten_data(self) -> bool:
        return self.is_op and self.attr("flatten_data") == "1"


@dataclass(frozen=True)
class Graph:
    """A validated graph: what ``GraphExecutor::Load`` keeps (nodes_, input_nodes_, outputs_,
    node_row_ptr_, attrs_). ``metadata`` is the top-level metadata object as sorted JSON text."""

    nodes: tuple[Node, ...]
    arg_nodes: tuple[int, ...]
    heads: tuple[NodeEntry, ...]
    node_row_ptr: tuple[int, ...]
    shapes: tuple[tuple[int, ...], ...]
    dltypes: tuple[str, ...]
    storage_ids: tuple[int, ...]
    device_index: tuple[int, ...] | None = None
    storage_scope: tuple[str, ...] | None = None
    metadata: str | None = None

    def eid(self, node_id: int, index: int = 0) -> int:
        """``GraphExecutor::entry_id``: node_row_ptr[node_id] + index."""
        if not (0 <= node_id < len(self.nodes) and 0 <= index < self.nodes[node_id].num_outputs):
            raise GraphError(f"no entry ({node_id}, {index}) in this graph", node_index=node_id)
        return self.node_row_ptr[node_id] + index

    def entry_id(self, e: NodeEntry) -> int:
        return self.eid(e.node_id, e.index)

    def op_eids(self, node: Node) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(input entry ids, output entry ids) of a node: a kernel's arguments, in order."""
        return (tuple(self.entry_id(e) for e in node.inputs),
                tuple(self.eid(node.index, k) for k in range(node.num_outputs)))

    @property
    def num_entries(self) -> int:
        return self.node_row_ptr[-1]

    def op_nodes(self) -> tuple[Node, ...]:
        return tuple(n for n in self.nodes if n.is_op)

    def node_by_name(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise GraphError(f"no node named '{name}'; `minigraph explain` lists the node names")

    def input_names(self) -> tuple[str, ...]:
        return tuple(self.nodes[i].name for i in self.arg_nodes)

    def output_entries(self) -> tuple[int, ...]:
        return tuple(self.entry_id(h) for h in self.heads)

    def metadata_dict(self) -> dict[str, Any] | None:
        return None if self.metadata is None else json.loads(self.metadata)
