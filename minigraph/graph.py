"""graph.json -> Graph: parse and validate TVM graph-executor JSON.

Mirrors ``GraphExecutor::Load`` (src/runtime/graph_executor/graph_executor.h) and its JSON
readers ``Node::Load``, ``Node::LoadAttrs``, ``NodeEntry::Load`` and ``GraphAttr::Load``.
Parsing is validation: every index, length and type is checked here so that later stages
(storage planning, binding, the run loop) can index without guarding. Any JSON input yields
either a ``Graph`` or a ``GraphError`` naming the node, the field and how to fix it.
"""
from __future__ import annotations

import bisect
import json
import os
import re
import reprlib
from dataclasses import dataclass
from typing import Any

from minigraph.errors import GraphError

SUPPORTED_DLTYPES = frozenset({
    "float32", "float16", "float64", "bfloat16", "int8", "int16", "int32", "int64",
    "uint8", "uint16", "uint32", "uint64", "bool"})

_TOP_KEYS = frozenset({"nodes", "arg_nodes", "heads", "attrs", "node_row_ptr", "metadata"})
_NODE_KEYS = frozenset({"op", "name", "inputs", "attrs", "attr", "control_deps"})
_OP_PARAMS = ("func_name", "num_inputs", "num_outputs", "flatten_data")
_I32, _I64 = 2**31 - 1, 2**63 - 1  # the C++ reader's field widths
_DIGITS = re.compile(r"[0-9]{1,18}")  # stricter than strtoul: no sign, spaces or junk


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

    @property
    def num_entries(self) -> int:
        return self.node_row_ptr[-1]

    def op_nodes(self) -> tuple[Node, ...]:
        return tuple(n for n in self.nodes if n.is_op)

    def node_by_name(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise GraphError(f"no node named '{name}'; see `minigraph show` for the node names")

    def input_names(self) -> tuple[str, ...]:
        return tuple(self.nodes[i].name for i in self.arg_nodes)

    def output_entries(self) -> tuple[int, ...]:
        return tuple(self.entry_id(h) for h in self.heads)

    def metadata_dict(self) -> dict[str, Any] | None:
        return None if self.metadata is None else json.loads(self.metadata)


class _Where:
    """Error context for one node, so every message names index, name and field."""

    def __init__(self, index: int | None = None, name: str | None = None) -> None:
        self.index, self.name = index, name

    def error(self, field: str | None, message: str) -> GraphError:
        return GraphError(message, node_index=self.index, node_name=self.name, field=field)


_TOP = _Where()


def _is_int(x: object, hi: int = _I64, lo: int = 0) -> bool:
    # bool is a subclass of int and JSON true/false must not pass as 1/0
    return type(x) is int and lo <= x <= hi


def _load_json(text: str | bytes) -> dict[str, Any]:
    if not isinstance(text, (str, bytes, bytearray, memoryview)):
        raise _TOP.error(None, f"expected JSON text, got {type(text).__name__}")
    try:
        if isinstance(text, (bytes, bytearray, memoryview)):
            text = bytes(text).decode("utf-8-sig")
        obj = json.loads(text)
    except (ValueError, RecursionError) as e:  # JSONDecodeError and UnicodeDecodeError
        raise _TOP.error(None, f"not valid JSON ({e}); is this really a graph.json?") from None
    if not isinstance(obj, dict):
        raise _TOP.error(None, f"top level is a JSON {type(obj).__name__}, expected an object "
                               "with keys nodes, arg_nodes, heads, attrs")
    return obj


def _parse_entry(w: _Where, field: str, raw: object, nodes: tuple[Node, ...] | list[Node],
                 limit: int, rule: str) -> NodeEntry:
    """``NodeEntry::Load``: [node_id, index] or [node_id, index, version]; node_id < limit."""
    if not isinstance(raw, list) or len(raw) not in (2, 3) or not all(_is_int(v) for v in raw):
        raise w.error(field, f"entry {_short(raw)} must be [node_id, index] or "
                             "[node_id, index, version] of non-negative ints")
    nid, idx = raw[0], raw[1]
    if nid >= limit:
        raise w.error(field, f"entry {raw} refers to node {nid}; {rule}")
    if idx >= nodes[nid].num_outputs:
        raise w.error(field, f"entry {raw} asks for output {idx} of node {nid} "
                             f"'{nodes[nid].name}', which has {nodes[nid].num_outputs} output(s)")
    return NodeEntry(nid, idx, raw[2] if len(raw) == 3 else 0)


_REPR = reprlib.Repr()  # bounded depth and width: values in messages may be huge or deep
_REPR.maxlevel, _REPR.maxlist, _REPR.maxdict, _REPR.maxstring = 3, 4, 4, 40


def _short(x: object) -> str:
    """A JSON value for a message, cut short."""
    s = json.dumps(x) if isinstance(x, (str, bool, type(None))) else _REPR.repr(x)
    return s if len(s) <= 60 else s[:57] + "..."


def _count(w: _Where, key: str, value: str) -> int:
    if not _DIGITS.fullmatch(value):
        raise w.error(key, f"{_short(value)} is not a non-negative decimal integer")
    return int(value)


def _parse_attrs(w: _Where, raw: object, op: str, n_inputs: int) -> dict[str, str]:
    """``Node::LoadAttrs``: string values; the four TVMOpParam keys are required on tvm_op."""
    if not isinstance(raw, dict):
        raise w.error("attrs", f"must be an object, got {type(raw).__name__}")
    attrs: dict[str, str] = {}
    for k, v in raw.items():
        if not (isinstance(v, str) or _is_int(v, lo=-_I64)):  # Relay wrote strings; allow ints
            raise w.error(f"attrs.{k}", f"value {_short(v)} must be a string")
        attrs[k] = str(v)
    if op != "tvm_op":
        return attrs
    for key in _OP_PARAMS:
        if key not in attrs:
            raise w.error(f"attrs.{key}", f"tvm_op node lacks '{key}'; a tvm_op needs "
                                          "func_name, num_inputs, num_outputs and flatten_data")
    if not attrs["func_name"]:
        raise w.error("attrs.func_name", "is empty; name the kernel (or '__nop' / '__copy')")
    n_in, n_out, flat = (_count(w, f"attrs.{k}", attrs[k]) for k in _OP_PARAMS[1:])
    if n_in != n_inputs:
        raise w.error("attrs.num_inputs", f"says {n_in} but the node has {n_inputs} input "
                                          "entries; make them agree")
    if not 1 <= n_out <= _I32:
        raise w.error("attrs.num_outputs", f"is {n_out}; a tvm_op must have at least 1 output")
    if flat not in (0, 1):
        raise w.error("attrs.flatten_data", f"is {flat}; must be 0 or 1")
    if attrs["func_name"] == "__copy" and (n_in, n_out) != (1, 1):
        raise w.error("attrs.func_name", "__copy takes exactly 1 input and 1 output")
    attrs.update(num_inputs=str(n_in), num_outputs=str(n_out), flatten_data=str(flat))
    return attrs


def _parse_node(i: int, raw: object, nodes: list[Node]) -> Node:
    """``Node::Load``: op, name, inputs, attrs (or 'attr'), control_deps (ignored)."""
    w = _Where(i)
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
        raise w.error("op", f"{_short(op)} is not supported; use 'null' or 'tvm_op'")
    if not isinstance(inputs, list):
        raise w.error("inputs", f"must be a list of entries, got {type(inputs).__name__}")
    if op == "null" and inputs:
        raise w.error("inputs", "a 'null' (input/param) node cannot have inputs")
    rule = f"inputs must be earlier nodes (ids < {i}): graphs are topologically sorted"
    entries = tuple(_parse_entry(w, f"inputs[{j}]", e, nodes, i, rule)
                    for j, e in enumerate(inputs))
    deps = raw.get("control_deps", [])
    if not isinstance(deps, list) or not all(_is_int(d, i - 1) for d in deps):
        raise w.error("control_deps", "must be a list of ids of earlier nodes")
    attrs = _parse_attrs(w, raw.get("attrs", raw.get("attr", {})), op, len(entries))
    return Node(i, op, name, entries, tuple(sorted(attrs.items())))


def _parse_nodes(raw: object) -> tuple[Node, ...]:
    if not isinstance(raw, list) or not raw:
        raise _TOP.error("nodes", "must be a non-empty list of node objects")
    nodes: list[Node] = []
    for i, r in enumerate(raw):
        nodes.append(_parse_node(i, r, nodes))
    return tuple(nodes)


def _parse_row_ptr(raw: object, nodes: tuple[Node, ...]) -> tuple[int, ...]:
    """node_row_ptr, derived from num_outputs when absent (very old NNVM files)."""
    derived = [0]
    for n in nodes:
        derived.append(derived[-1] + n.num_outputs)
    if raw is None:
        return tuple(derived)
    if not isinstance(raw, list) or len(raw) != len(nodes) + 1:
        raise _TOP.error("node_row_ptr", f"must be a list of len(nodes)+1 = {len(nodes) + 1} "
                                         "ints; delete it to have it derived from num_outputs")
    for i, (got, want) in enumerate(zip(raw, derived)):
        if got != want or not _is_int(got):
            what = f"{_short(got)} is not an int" if not _is_int(got) else \
                "must start at 0" if i == 0 else \
                f"jumps from {_short(raw[i - 1])} to {got} but this node has " \
                f"{nodes[i - 1].num_outputs} output(s)"
            # row i ends node i-1's entries: blame that node
            w = _Where(i - 1, nodes[i - 1].name) if i else _TOP
            raise w.error(f"node_row_ptr[{i}]", f"{what}; expected {want} "
                                                "(delete node_row_ptr to derive it)")
    return tuple(derived)


def _owner(row_ptr: tuple[int, ...], nodes: tuple[Node, ...], eid: int) -> _Where:
    """The node that owns entry eid, so attr errors can name it."""
    nid = bisect.bisect_right(row_ptr, eid) - 1  # every node owns >= 1 entry
    return _Where(nid, nodes[nid].name)


def _check_value(key: str, v: object) -> str | None:
    """Why one element of graph attr ``key`` is invalid, or None."""
    if key == "shape":
        ok = isinstance(v, list) and all(_is_int(d) for d in v)
        return None if ok else f"shape {_short(v)} must be a list of non-negative ints"
    if key == "dltype":
        return None if isinstance(v, str) and v in SUPPORTED_DLTYPES else \
            f"dltype {_short(v)} is not supported; use one of {sorted(SUPPORTED_DLTYPES)}"
    if key == "storage_scope":
        return None if isinstance(v, str) else f"storage_scope {_short(v)} must be a string"
    return None if _is_int(v, _I32) else f"{key} {_short(v)} must be a non-negative int"


_GRAPH_ATTRS = {"shape": "list_shape", "dltype": "list_str", "storage_id": "list_int",
                "device_index": "list_int", "storage_scope": "list_str"}


def _parse_graph_attrs(raw: object, nodes: tuple[Node, ...],
                       row_ptr: tuple[int, ...]) -> dict[str, tuple[Any, ...]]:
    """``GraphAttr::Load``: tagged per-entry lists, one element per entry id."""
    if not isinstance(raw, dict):
        raise _TOP.error("attrs", "must be an object with shape, dltype and storage_id")
    out: dict[str, tuple[Any, ...]] = {}
    for key, value in raw.items():
        tag = _GRAPH_ATTRS.get(key)
        if tag is None:  # TVM skips unknown list_int / size_t attrs, rejects anything else
            skippable = isinstance(value, list) and len(value) == 2 and \
                value[0] in ("list_int", "size_t")
            if not skippable:
                raise _TOP.error(f"attrs.{key}", "unknown graph attr; remove it")
            continue
        if not (isinstance(value, list) and len(value) == 2 and value[0] == tag):
            raise _TOP.error(f"attrs.{key}", f"must be [\"{tag}\", [...]]")
        if not isinstance(value[1], list) or len(value[1]) != row_ptr[-1]:
            n = len(value[1]) if isinstance(value[1], list) else "no"
            raise _TOP.error(f"attrs.{key}", f"has {n} elements but the graph has {row_ptr[-1]} "
                                             "entries (node_row_ptr[-1]); one per entry")
        for eid, v in enumerate(value[1]):
            why = _check_value(key, v)
            if why is not None:
                raise _owner(row_ptr, nodes, eid).error(f"attrs.{key}[{eid}]", why)
        out[key] = tuple(tuple(v) if key == "shape" else v for v in value[1])
    for key in ("shape", "dltype", "storage_id"):
        if key not in out:
            raise _TOP.error(f"attrs.{key}", "missing; graph attrs need shape, dltype, storage_id")
    return out


def _parse_arg_nodes(raw: object, nodes: tuple[Node, ...]) -> tuple[int, ...]:
    if not isinstance(raw, list) or not all(_is_int(a, len(nodes) - 1) for a in raw):
        raise _TOP.error("arg_nodes", f"must be a list of node ids in 0..{len(nodes) - 1}")
    seen: dict[str, int] = {}
    for pos, a in enumerate(raw):
        w = _Where(a, nodes[a].name)
        if nodes[a].is_op:
            raise w.error(f"arg_nodes[{pos}]", "is a tvm_op; arg_nodes lists only 'null' nodes")
        if nodes[a].name in seen:
            why = "is listed twice" if seen[nodes[a].name] == a else \
                f"has the same name as arg node {seen[nodes[a].name]}; inputs bind by name"
            raise w.error(f"arg_nodes[{pos}]", f"{why}; each arg node must appear once")
        seen[nodes[a].name] = a
    return tuple(raw)


def parse_graph(text: str | bytes) -> Graph:
    """Parse graph.json text (``GraphExecutor::Load``); raises only ``GraphError``."""
    obj = _load_json(text)
    unknown = sorted(set(obj) - _TOP_KEYS)
    if unknown:
        raise _TOP.error(unknown[0], "unsupported top-level key; expected nodes, arg_nodes, "
                                     "heads, attrs, node_row_ptr, metadata")
    for key in ("nodes", "arg_nodes", "heads", "attrs"):
        if key not in obj:
            raise _TOP.error(key, "missing required top-level key")
    nodes = _parse_nodes(obj["nodes"])
    row_ptr = _parse_row_ptr(obj.get("node_row_ptr"), nodes)
    attrs = _parse_graph_attrs(obj["attrs"], nodes, row_ptr)
    arg_nodes = _parse_arg_nodes(obj["arg_nodes"], nodes)
    heads = obj["heads"]
    if not isinstance(heads, list) or not heads:
        raise _TOP.error("heads", "must be a non-empty list of [node_id, index] entries")
    rule = f"the graph has {len(nodes)} nodes (ids 0..{len(nodes) - 1})"
    entries = tuple(_parse_entry(_TOP, f"heads[{j}]", h, nodes, len(nodes), rule)
                    for j, h in enumerate(heads))
    meta = obj.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        raise _TOP.error("metadata", f"must be an object, got {type(meta).__name__}")
    try:
        meta_text = None if meta is None else json.dumps(meta, sort_keys=True)
    except (ValueError, RecursionError):
        raise _TOP.error("metadata", "cannot be re-serialised; simplify it") from None
    return Graph(nodes, arg_nodes, entries, row_ptr, attrs["shape"], attrs["dltype"],
                 attrs["storage_id"], attrs.get("device_index"), attrs.get("storage_scope"),
                 meta_text)


def load_graph(path: str | os.PathLike[str]) -> Graph:
    """Read and parse a graph.json file; unreadable files raise ``InputError`` naming it."""
    from minigraph.fileio import read_file
    data = read_file(path, "graph file")
    try:
        return parse_graph(data)
    except GraphError as e:
        e.args = (f"{os.fspath(path)}: {e.args[0]}",)  # keep node_index/field, add the file
        raise


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
