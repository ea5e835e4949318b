"""graph.json <-> Graph: parse and validate TVM graph-executor JSON, and write it back.

Mirrors ``GraphExecutor::Load`` (src/runtime/graph_executor/graph_executor.h) and its JSON
readers ``Node::Load``, ``Node::LoadAttrs``, ``NodeEntry::Load`` and ``GraphAttr::Load``.
Parsing is validation: every index, length and type is checked here (node level) and in
graph_checks.py (attrs, node_row_ptr, per-entry lists, arg_nodes) and liveness.py (the storage
plan: no storage shared by entries live at the same time) so that later stages
(storage planning, binding, the run loop) can index without guarding. Any JSON input yields
either a ``Graph`` or a ``GraphError`` naming the node, the field and how to fix it.
"""
from __future__ import annotations

import contextlib
import json
import os
from typing import Any, Iterator

from ..errors import GraphError
from ..fileio import read_bounded, sizes_text
from ..fileio.jsontext import StrictJSONError, loads_strict
from .graph import Graph, Node, NodeEntry
from .graph_checks import (
    TOP,
    Where,
    check_copies,
    is_int,
    parse_arg_nodes,
    parse_attrs,
    parse_graph_attrs,
    parse_row_ptr,
    short,
)
from .liveness import check_storage_plan

MAX_GRAPH_BYTES = 64 << 20  # ResNet-50's graph.json is ~60 KiB; the largest real ones a few MiB
_TOP_KEYS = frozenset({"nodes", "arg_nodes", "heads", "attrs", "node_row_ptr", "metadata"})
_NODE_KEYS = frozenset({"op", "name", "inputs", "attrs", "attr", "control_deps"})


def _parse_entry(w: Where, field: str, raw: object, nodes: tuple[Node, ...] | list[Node],
                 limit: int, rule: str) -> NodeEntry:
    """``NodeEntry::Load``: [node_id, index] or [node_id, index, version]; node_id < limit."""
    if not isinstance(raw, list) or len(raw) not in (2, 3) or not all(is_int(v) for v in raw):
        raise w.error(field, f"entry {short(raw)} must be [node_id, index] or "
                             "[node_id, index, version] of non-negative ints")
    nid, idx = raw[0], raw[1]
    if nid >= limit:
        raise w.error(field, f"entry {raw} refers to node {nid}; {rule}")
    if idx >= nodes[nid].num_outputs:
        raise w.error(field, f"entry {raw} asks for output {idx} of node {nid} "
                             f"'{nodes[nid].name}', which has {nodes[nid].num_outputs} output(s)")
    return NodeEntry(nid, idx, raw[2] if len(raw) == 3 else 0)


def _load_json(text: str | bytes) -> dict[str, Any]:
    if not isinstance(text, (str, bytes, bytearray, memoryview)):
        raise TOP.error(None, f"expected JSON text, got {type(text).__name__}")
    if len(text) > MAX_GRAPH_BYTES:
        size, bound = sizes_text(len(text), MAX_GRAPH_BYTES)
        raise TOP.error(None, f"{size} is more than the {bound} a graph.json may be; not a "
                              "graph.json")
    try:
        if isinstance(text, (bytes, bytearray, memoryview)):
            text = bytes(text).decode("utf-8-sig")
        obj = loads_strict(text)
    except StrictJSONError as e:  # valid for Python, ambiguous or not JSON for TVM's reader
        raise TOP.error(None, f"{e}; refused rather than guessed") from None
    except (ValueError, RecursionError) as e:  # JSONDecodeError and UnicodeDecodeError
        raise TOP.error(None, f"not valid JSON ({e}); is this really a graph.json?") from None
    if not isinstance(obj, dict):
        raise TOP.error(None, f"top level is a JSON {type(obj).__name__}, expected an object "
                               "with keys nodes, arg_nodes, heads, attrs")
    return obj


def _parse_node(i: int, raw: object, nodes: list[Node]) -> Node:
    """``Node::Load``: op, name, inputs, attrs (or 'attr'), control_deps (ignored)."""
    w = Where(i)
    if not isinstance(raw, dict):
        raise w.error(None, f"node must be an object, got {type(raw).__name__}")
    if isinstance(raw.get("name"), str):
        w.name = raw["name"]
    for key in ("op", "name", "inputs"):
        if key not in raw:
            raise w.error(key, f"missing required key '{key}' (a node needs op, name, inputs)")
    unknown = sorted(set(raw) - _NODE_KEYS)
    if unknown or ("attr" in raw and "attrs" in raw):
        bad = unknown[0] if unknown else "attr"
        raise w.error(bad, "unsupported key; a node has op, name, inputs, attrs (or attr)")
    op, name, inputs = raw["op"], raw["name"], raw["inputs"]
    if not isinstance(name, str):
        raise w.error("name", f"must be a string, got {type(name).__name__}")
    if op not in ("null", "tvm_op"):
        raise w.error("op", f"{short(op)} is not supported; use 'null' or 'tvm_op'")
    if not isinstance(inputs, list):
        raise w.error("inputs", f"must be a list of entries, got {type(inputs).__name__}")
    if op == "null" and inputs:
        raise w.error("inputs", "a 'null' (input/param) node cannot have inputs")
    rule = f"inputs must be earlier nodes (ids < {i}): graphs are topologically sorted"
    entries = tuple(_parse_entry(w, f"inputs[{j}]", e, nodes, i, rule)
                    for j, e in enumerate(inputs))
    deps = raw.get("control_deps", [])
    if not isinstance(deps, list) or not all(is_int(d, i - 1) for d in deps):
        raise w.error("control_deps", "must be a list of ids of earlier nodes")
    attrs = parse_attrs(w, raw.get("attrs", raw.get("attr", {})), op, len(entries))
    return Node(i, op, name, entries, tuple(sorted(attrs.items())))


def _parse_nodes(raw: object) -> tuple[Node, ...]:
    if not isinstance(raw, list) or not raw:
        raise TOP.error("nodes", "must be a non-empty list of node objects")
    nodes: list[Node] = []
    for i, r in enumerate(raw):
        nodes.append(_parse_node(i, r, nodes))
    return tuple(nodes)


def parse_graph(text: str | bytes) -> Graph:
    """Parse graph.json text (``GraphExecutor::Load``); raises only ``GraphError``."""
    obj = _load_json(text)
    unknown = sorted(set(obj) - _TOP_KEYS)
    if unknown:
        raise TOP.error(unknown[0], "unsupported top-level key; expected nodes, arg_nodes, "
                                     "heads, attrs, node_row_ptr, metadata")
    for key in ("nodes", "arg_nodes", "heads", "attrs"):
        if key not in obj:
            raise TOP.error(key, "missing required top-level key")
    nodes = _parse_nodes(obj["nodes"])
    row_ptr = parse_row_ptr(obj.get("node_row_ptr"), nodes)
    attrs = parse_graph_attrs(obj["attrs"], nodes, row_ptr)
    arg_nodes = parse_arg_nodes(obj["arg_nodes"], nodes)
    heads = obj["heads"]
    if not isinstance(heads, list) or not heads:
        raise TOP.error("heads", "must be a non-empty list of [node_id, index] entries")
    rule = f"the graph has {len(nodes)} nodes (ids 0..{len(nodes) - 1})"
    entries = tuple(_parse_entry(TOP, f"heads[{j}]", h, nodes, len(nodes), rule)
                    for j, h in enumerate(heads))
    meta = obj.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        raise TOP.error("metadata", f"must be an object, got {type(meta).__name__}")
    try:
        meta_text = None if meta is None else json.dumps(meta, sort_keys=True)
    except (ValueError, RecursionError):
        raise TOP.error("metadata", "cannot be re-serialised; simplify it") from None
    # last: any other fault in the file is still the one reported, as when this ran at load
    check_copies(nodes, row_ptr, attrs["shape"], attrs["dltype"])
    graph = Graph(nodes, arg_nodes, entries, row_ptr, attrs["shape"], attrs["dltype"],
                  attrs["storage_id"], attrs.get("device_index"), attrs.get("storage_scope"),
                  meta_text)
    check_storage_plan(graph)  # no storage shared by entries live at once (liveness.py)
    return graph


@contextlib.contextmanager
def in_file(path: str | os.PathLike[str]) -> Iterator[None]:
    """GraphErrors raised inside name the file (keeping node_index/field), once."""
    try:
        yield
    except GraphError as e:
        prefix = f"{os.fspath(path)}: "
        if not str(e.args[0]).startswith(prefix):
            e.args = (prefix + str(e.args[0]),)
        raise


def load_graph(path: str | os.PathLike[str]) -> Graph:
    """Read and parse a graph.json file; unreadable files raise ``InputError`` naming it."""
    data = read_bounded(path, MAX_GRAPH_BYTES, "graph file", "a graph.json may be")
    with in_file(path):
        return parse_graph(data)


def _entry(e: NodeEntry) -> list[int]:
    return [e.node_id, e.index, e.version]


def dump_graph(graph: Graph) -> str:
    """Write canonical TVM graph JSON (what Relay's GraphExecutorCodegen emitted)."""
    nodes = []
    for n in graph.nodes:
        d: dict[str, Any] = {"op": n.op, "name": n.name, "inputs": [_entry(e) for e in n.inputs]}
        if n.attrs:
            d["attrs"] = dict(n.attrs)
        nodes.append(d)
    attrs: dict[str, Any] = {"dltype": ["list_str", list(graph.dltypes)],
                             "shape": ["list_shape", [list(s) for s in graph.shapes]],
                             "storage_id": ["list_int", list(graph.storage_ids)]}
    if graph.device_index is not None:
        attrs["device_index"] = ["list_int", list(graph.device_index)]
    if graph.storage_scope is not None:
        attrs["storage_scope"] = ["list_str", list(graph.storage_scope)]
    out: dict[str, Any] = {"nodes": nodes, "arg_nodes": list(graph.arg_nodes),
                           "heads": [_entry(h) for h in graph.heads], "attrs": attrs,
                           "node_row_ptr": list(graph.node_row_ptr)}
    if graph.metadata is not None:  # last: TVM's reader stops at "metadata"
        out["metadata"] = json.loads(graph.metadata)
    return json.dumps(out, indent=2)
