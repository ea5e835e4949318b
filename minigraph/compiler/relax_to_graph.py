"""Fused Relax ``main`` -> graph-executor nodes (mirrors Relay's GraphExecutorCodegen).

After FuseTIR, ``main`` is a straight line of ``R.call_tir(kernel, args, out_ty)`` bindings.
Each function parameter becomes a ``null`` node (an arg node: the model input or a weight);
each call becomes a ``tvm_op`` node; tuple projections and aliases only redirect entries;
constants that survive FoldConstant become extra params, so weights never live in kernels.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import tvm
from tvm import relax

from ..artifacts.graph import Node, NodeEntry
from ..errors import BuildError


@dataclass
class LoweredGraph:
    """Nodes in execution order plus what the graph writer and planner need about them."""

    nodes: list[Node] = field(default_factory=list)
    shapes: list[tuple[int, ...]] = field(default_factory=list)  # per entry
    dltypes: list[str] = field(default_factory=list)             # per entry
    heads: list[NodeEntry] = field(default_factory=list)
    kernels: dict[str, object] = field(default_factory=dict)     # kernel name -> GlobalVar
    constants: dict[str, np.ndarray] = field(default_factory=dict)

    def add_null(self, name: str, shape: tuple[int, ...], dtype: str) -> NodeEntry:
        self.nodes.append(Node(len(self.nodes), "null", name, (), ()))
        self.shapes.append(shape)
        self.dltypes.append(dtype)
        return NodeEntry(len(self.nodes) - 1, 0)


def _tensor_types(ty) -> list[tuple[tuple[int, ...], str]]:
    if isinstance(ty, relax.TupleType):
        return [t for f in ty.fields for t in _tensor_types(f)]
    if not isinstance(ty, relax.TensorType) or ty.shape is None:
        raise BuildError(f"only static tensor shapes can be lowered to graph.json, got {ty}")
    try:
        shape = tuple(int(d) for d in ty.shape.values)
    except (TypeError, AttributeError) as err:
        raise BuildError(f"dynamic shape {ty.shape} cannot be lowered to graph.json") from err
    return [(shape, str(ty.dtype))]


class _Lowerer:
    def __init__(self) -> None:
        self.relax = relax
        # relax.Constant became the generic tvm.ir.expr.Constant (payload in .value) in 0.27
        self.constant = getattr(relax, "Constant", None) or tvm.ir.expr.Constant
        self.out = LoweredGraph()
        self.env: dict[object, list[NodeEntry]] = {}  # relax Var -> its entries

    def entries(self, expr) -> list[NodeEntry]:
        relax = self.relax
        if isinstance(expr, relax.Var):
            return self.env[expr]
        if isinstance(expr, relax.Tuple):
            return [e for f in expr.fields for e in self.entries(f)]
        if isinstance(expr, relax.TupleGetItem):
            return [self.entries(expr.tuple_value)[expr.index]]
        if isinstance(expr, self.constant):
            name = f"p_const{len(self.out.constants)}"
            value = (expr.data if hasattr(expr, "data") else expr.value).numpy()
            self.out.constants[name] = value
            return [self.out.add_null(name, tuple(value.shape), str(value.dtype))]
        raise BuildError(f"cannot lower {type(expr).__name__} to graph.json: {expr}")

    def call(self, var, call) -> None:
        kernel = call.args[0]
        inputs = tuple(self.entries(call.args[1]))
        outs = _tensor_types(var.ty)
        name = kernel.name_hint
        self.out.kernels[name] = kernel
        attrs = (("flatten_data", "0"), ("func_name", name), ("num_inputs", str(len(inputs))),
                 ("num_outputs", str(len(outs))))
        nid = len(self.out.nodes)
        self.out.nodes.append(Node(nid, "tvm_op", name, inputs, attrs))
        for shape, dtype in outs:
            self.out.shapes.append(shape)
            self.out.dltypes.append(dtype)
        self.env[var] = [NodeEntry(nid, i) for i in range(len(outs))]

    def binding(self, b) -> None:
        relax, value = self.relax, b.value
        if isinstance(value, relax.Call) and value.op.same_as(self._call_tir_op()):
            self.call(b.var, value)
        elif isinstance(value, (relax.Var, relax.Tuple, relax.TupleGetItem, self.constant)):
            self.env[b.var] = self.entries(value)
        else:
            raise BuildError(f"cannot lower binding '{b.var.name}' = {value} to graph.json "
                             "(only call_tir, tuples and constants are supported)")

    @staticmethod
    def _call_tir_op():
        return tvm.ir.Op.get("relax.call_tir")


def lower_main(mod) -> LoweredGraph:
    """Lowers ``mod["main"]`` (after FuseTIR) to nodes; kernel names are the PrimFuncs' names."""
    lw = _Lowerer()
    main = mod["main"]
    for param in main.params:
        (shape, dtype), = _tensor_types(param.ty)
        lw.env[param] = [lw.out.add_null(param.name, shape, dtype)]
    body = main.body
    for block in body.blocks:
        for b in block.bindings:
            lw.binding(b)
    lw.out.heads = lw.entries(body.body)
    return lw.out
