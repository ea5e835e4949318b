"""What a report says about each op: its coarse kind, shapes, hash and layouts (pure)."""
from __future__ import annotations

from .executor import Executor


def op_kind(func_name: str) -> str:
    """Coarse op class from the fused kernel's name (the report's breakdown)."""
    name = func_name.lower()
    for kind, keys in (("conv2d", ("conv2d",)), ("dense/matmul", ("matmul", "dense")),
                       ("pooling", ("pool",)), ("layout_transform", ("layout_transform",
                        "transpose", "permute", "reshape")),
                       ("normalization", ("layer_norm", "batch_norm")),
                       ("softmax", ("softmax",)),
                       ("reduction", ("mean", "sum", "max_", "min_")), ("copy", ("__copy", "__nop"))):
        if any(k in name for k in keys):
            return kind
    return "elementwise"


def describe_ops(ex: Executor) -> list[dict]:
    g = ex.graph
    return [{"index": op.index, "node_id": op.node_id, "name": op.name, "func_name": op.func_name,
             "kind": op_kind(op.func_name), "hash": g.nodes[op.node_id].attr("hash") or "",
             "shapes": [[g.dltypes[e], list(g.shapes[e])] for e in op.input_eids + op.output_eids],
             "layouts": {k: v for k, v in g.nodes[op.node_id].attrs if "layout" in k}}
            for op in ex.ops]
