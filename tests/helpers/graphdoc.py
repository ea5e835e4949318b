"""Builders of graph.json documents (plain dicts), shared by the tests and the tools.

TVM's graph-executor format: ``null`` nodes are inputs and params, ``tvm_op`` nodes call a
kernel by ``func_name``; per-entry attrs are tagged lists (``list_shape``, ``list_int``, ...).
"""
from __future__ import annotations

import json


def null(name: str) -> dict:
    """An input or param node."""
    return {"op": "null", "name": name, "inputs": []}


def op(name: str, func: str, inputs: list, n_out: int = 1, flatten: str = "0", **extra) -> dict:
    """A ``tvm_op`` node calling ``func`` on ``inputs`` ([node_id, index, version] entries);
    ``extra`` attrs (hash, data_layout, ...) are added as strings."""
    attrs = {"func_name": func, "num_inputs": str(len(inputs)), "num_outputs": str(n_out),
             "flatten_data": flatten, **extra}
    return {"op": "tvm_op", "name": name, "inputs": inputs, "attrs": attrs}


def graph_doc(nodes: list[dict], heads: list, shapes: list, sids: list,
              dtypes: list[str] | None = None, row_ptr: list[int] | None = None) -> dict:
    """A whole document: every ``null`` node is an arg node; one dtype, shape and storage id per
    entry (``dtypes`` default to float32); ``node_row_ptr`` only when given."""
    doc = {"nodes": nodes, "arg_nodes": [i for i, n in enumerate(nodes) if n["op"] == "null"],
           "heads": heads,
           "attrs": {"shape": ["list_shape", shapes], "storage_id": ["list_int", sids],
                     "dltype": ["list_str", dtypes or ["float32"] * len(shapes)]}}
    if row_ptr is not None:
        doc["node_row_ptr"] = row_ptr
    return doc


def graph_json(*args, **kwargs) -> str:
    """``graph_doc`` as JSON text."""
    return json.dumps(graph_doc(*args, **kwargs))
