"""Validation rules for graph.json, below the node level: entries, op attrs, node_row_ptr, the
per-entry graph attrs (shape, dltype, storage_id, ...) and arg_nodes.

Used by graph_json.py, which parses the nodes and owns the public API (parse_graph). Every
function raises ``GraphError`` through a ``Where`` so each message names the node index, the
node name and the field. Mirrors the checks implied by ``GraphExecutor::Load``'s JSON readers.
"""
from __future__ import annotations

import bisect
import json
import re
import reprlib
from typing import Any

from ..errors import GraphError
from .dlpack import DLTYPE_BITS, dtype_nbytes
from .graph import Node

# every dltype the storage stage can size is accepted, and no other (one list: dtypes.py)
SUPPORTED_DLTYPES = frozenset(DLTYPE_BITS)


_OP_PARAMS = ("func_name", "num_inputs", "num_outputs", "flatten_data")
_I32, _I64 = 2**31 - 1, 2**63 - 1  # the C++ reader's field widths
_MAX_ENTRY_BYTES = 2**62  # beyond any real tensor; keeps every byte count an exact int64
_DIGITS = re.compile(r"[0-9]{1,18}")  # stricter than strtoul: no sign, spaces or junk


class Where:
    """Error context for one node, so every message names index, name and field."""

    def __init__(self, index: int | None = None, name: str | None = None) -> None:
        self.index, self.name = index, name

    def error(self, field: str | None, message: str) -> GraphError:
        return GraphError(message, node_index=self.index, node_name=self.name, field=field)


TOP = Where()


def is_int(x: object, hi: int = _I64, lo: int = 0) -> bool:
    # bool is a subclass of int and JSON true/false must not pass as 1/0
    return type(x) is int and lo <= x <= hi


def int_problem(x: object, hi: int = _I64) -> str:
    """Why ``x`` is not an int in [0, hi], said as what it is (a negative int is an int)."""
    if type(x) is not int:
        return f"{short(x)} is not an integer"
    return f"{x} is negative" if x < 0 else f"{x} is larger than {hi}"


_REPR = reprlib.Repr()  # bounded depth and width: values in messages may be huge or deep
_REPR.maxlevel, _REPR.maxlist, _REPR.maxdict, _REPR.maxstring = 3, 4, 4, 40


def short(x: object) -> str:
    """A JSON value for a message, cut short."""
    s = json.dumps(x) if isinstance(x, (str, bool, type(None))) else _REPR.repr(x)
    return s if len(s) <= 60 else s[:57] + "..."


def _count(w: Where, key: str, value: str) -> int:
    if not _DIGITS.fullmatch(value):
        raise w.error(key, f"{short(value)} is not a non-negative decimal integer")
    return int(value)


def parse_attrs(w: Where, raw: object, op: str, n_inputs: int) -> dict[str, str]:
    """``Node::LoadAttrs``: string values; the four TVMOpParam keys are required on tvm_op."""
    if not isinstance(raw, dict):
        raise w.error("attrs", f"must be an object, got {type(raw).__name__}")
    attrs: dict[str, str] = {}
    for k, v in raw.items():
        if not (isinstance(v, str) or is_int(v, lo=-_I64)):  # Relay wrote strings; allow ints
            raise w.error(f"attrs.{k}", f"value {short(v)} must be a string")
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


def parse_row_ptr(raw: object, nodes: tuple[Node, ...]) -> tuple[int, ...]:
    """node_row_ptr, derived from num_outputs when absent (very old NNVM files)."""
    derived = [0]
    for n in nodes:
        derived.append(derived[-1] + n.num_outputs)
    if raw is None:
        return tuple(derived)
    if not isinstance(raw, list) or len(raw) != len(nodes) + 1:
        raise TOP.error("node_row_ptr", f"must be a list of len(nodes)+1 = {len(nodes) + 1} "
                                         "ints; delete it to have it derived from num_outputs")
    for i, (got, want) in enumerate(zip(raw, derived)):
        if got != want or not is_int(got):
            what = int_problem(got) if not is_int(got) else \
                "must start at 0" if i == 0 else \
                f"jumps from {short(raw[i - 1])} to {got} but this node has " \
                f"{nodes[i - 1].num_outputs} output(s)"
            # row i ends node i-1's entries: blame that node
            w = Where(i - 1, nodes[i - 1].name) if i else TOP
            raise w.error(f"node_row_ptr[{i}]", f"{what}; expected {want} "
                                                "(delete node_row_ptr to derive it)")
    return tuple(derived)


def entry_owner(row_ptr: tuple[int, ...], eid: int) -> int:
    """The id of the node whose outputs include entry ``eid`` (for errors that name it)."""
    return bisect.bisect_right(row_ptr, eid) - 1  # every node owns >= 1 entry


def _owner(row_ptr: tuple[int, ...], nodes: tuple[Node, ...], eid: int) -> Where:
    """The node that owns entry eid, so attr errors can name it."""
    nid = entry_owner(row_ptr, eid)
    return Where(nid, nodes[nid].name)


def _check_value(key: str, v: object) -> str | None:
    """Why one element of graph attr ``key`` is invalid, or None."""
    if key == "shape":
        ok = isinstance(v, list) and all(is_int(d) for d in v)
        return None if ok else f"shape {short(v)} must be a list of non-negative ints"
    if key == "dltype":
        return None if isinstance(v, str) and v in SUPPORTED_DLTYPES else \
            f"dltype {short(v)} is not supported; use one of {sorted(SUPPORTED_DLTYPES)}"
    if key == "storage_scope":
        return None if isinstance(v, str) else f"storage_scope {short(v)} must be a string"
    return None if is_int(v, _I32) else f"{key} {short(v)} must be a non-negative int"


_GRAPH_ATTRS = {"shape": "list_shape", "dltype": "list_str", "storage_id": "list_int",
                "device_index": "list_int", "storage_scope": "list_str"}


def parse_graph_attrs(raw: object, nodes: tuple[Node, ...],
                       row_ptr: tuple[int, ...]) -> dict[str, tuple[Any, ...]]:
    """``GraphAttr::Load``: tagged per-entry lists, one element per entry id."""
    if not isinstance(raw, dict):
        raise TOP.error("attrs", "must be an object with shape, dltype and storage_id")
    out: dict[str, tuple[Any, ...]] = {}
    for key, value in raw.items():
        tag = _GRAPH_ATTRS.get(key)
        if tag is None:  # TVM skips unknown list_int / size_t attrs, rejects anything else
            skippable = isinstance(value, list) and len(value) == 2 and \
                value[0] in ("list_int", "size_t")
            if not skippable:
                raise TOP.error(f"attrs.{key}", "unknown graph attr; remove it")
            continue
        if not (isinstance(value, list) and len(value) == 2 and value[0] == tag):
            raise TOP.error(f"attrs.{key}", f"must be [\"{tag}\", [...]]")
        if not isinstance(value[1], list) or len(value[1]) != row_ptr[-1]:
            n = len(value[1]) if isinstance(value[1], list) else "no"
            raise TOP.error(f"attrs.{key}", f"has {n} elements but the graph has {row_ptr[-1]} "
                                             "entries (node_row_ptr[-1]); one per entry")
        for eid, v in enumerate(value[1]):
            why = _check_value(key, v)
            if why is not None:
                raise _owner(row_ptr, nodes, eid).error(f"attrs.{key}[{eid}]", why)
        out[key] = tuple(tuple(v) if key == "shape" else v for v in value[1])
    for key in ("shape", "dltype", "storage_id"):
        if key not in out:
            raise TOP.error(f"attrs.{key}", "missing; graph attrs need shape, dltype, storage_id")
    _check_sizes(out["shape"], out["dltype"], nodes, row_ptr)
    return out


def _check_sizes(shapes: tuple[Any, ...], dltypes: tuple[Any, ...], nodes: tuple[Node, ...],
                 row_ptr: tuple[int, ...]) -> None:
    """No entry may need more bytes than an int64 can count (later stages multiply freely)."""
    for eid, (shape, dltype) in enumerate(zip(shapes, dltypes)):
        if 0 in shape:
            continue
        size = dtype_nbytes(dltype)
        for d in shape:  # stop early: a product of many huge dims is a slow bigint
            size *= d
            if size > _MAX_ENTRY_BYTES:
                raise _owner(row_ptr, nodes, eid).error(
                    f"attrs.shape[{eid}]", f"shape {short(list(shape))} of {dltype} needs more "
                    "than 2**62 bytes, more than any machine has; fix the shape")


def check_copies(nodes: tuple[Node, ...], row_ptr: tuple[int, ...],
                 shapes: tuple[Any, ...], dltypes: tuple[Any, ...]) -> None:
    """``__copy`` (TVMArrayCopyFromTo) needs its input and output of one shape and dtype: a
    graph.json fact, so parsing refuses it rather than the first run."""
    for node in nodes:
        if node.func_name != "__copy":
            continue
        src = row_ptr[node.inputs[0].node_id] + node.inputs[0].index  # 1 input: parse_attrs
        dst = row_ptr[node.index]
        got = [(dltypes[e], shapes[e]) for e in (src, dst)]
        if got[0] != got[1]:
            raise Where(node.index, node.name).error(
                f"attrs.shape[{dst}]", f"__copy from entry {src} ({got[0][0]}{list(got[0][1])}) "
                f"to entry {dst} ({got[1][0]}{list(got[1][1])}): shapes and dtypes must match")


def parse_arg_nodes(raw: object, nodes: tuple[Node, ...]) -> tuple[int, ...]:
    if not isinstance(raw, list) or not all(is_int(a, len(nodes) - 1) for a in raw):
        raise TOP.error("arg_nodes", f"must be a list of node ids in 0..{len(nodes) - 1}")
    seen: dict[str, int] = {}
    for pos, a in enumerate(raw):
        w = Where(a, nodes[a].name)
        if nodes[a].is_op:
            raise w.error(f"arg_nodes[{pos}]", "is a tvm_op; arg_nodes lists only 'null' nodes")
        if nodes[a].name in seen:
            why = "is listed twice" if seen[nodes[a].name] == a else \
                f"has the same name as arg node {seen[nodes[a].name]}; inputs bind by name"
            raise w.error(f"arg_nodes[{pos}]", f"{why}; each arg node must appear once")
        seen[nodes[a].name] = a
    return tuple(raw)
