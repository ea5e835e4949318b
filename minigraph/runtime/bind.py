"""(Graph, entry views, kernel table) -> BoundOps (mirrors GraphExecutor::SetupOpExecs/CreateTVMOp).

Each op's arguments are bound once, up front: its input entries' views, then its outputs'.
``flatten_data`` ops get 1-D views, as CreateTVMOp flattened the DLTensors; ``__nop`` does
nothing (its output shares its input's storage) and ``__copy`` copies input to output.
A kernel that offers ``bind_args(args) -> (function, arguments)`` (the legacy kernels) builds
its call once here; ``BoundOp.call`` is what the run loop calls. Before any of it, loading
compares every op's argument shapes and dtypes with its kernel's signature (runtime/load.py
``check_graph_args``): binding reads no file.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping

from ..artifacts.graph import Graph, Node
from ..errors import MinigraphError

KernelTable = Mapping[str, Callable]  # func_name -> packed function (runtime/kernels.py resolve)


@dataclass(frozen=True)
class BoundOp:
    """One executable step: ``fn(*args)`` with args = inputs then outputs."""

    index: int                      # position in execution order
    node_id: int
    name: str
    func_name: str
    fn: Callable
    args: tuple
    input_eids: tuple[int, ...]
    output_eids: tuple[int, ...]
    call: tuple[Callable, tuple] = ()  # type: ignore[assignment]  # (fn, args) when empty

    def __post_init__(self) -> None:
        if not self.call:
            object.__setattr__(self, "call", (self.fn, self.args))

    def __call__(self) -> None:
        fn, args = self.call
        fn(*args)


def _nop(*_args) -> None:
    """``__nop``: the output already aliases the input (same storage id)."""


def _copy(src, dst) -> None:
    """``__copy``: TVMArrayCopyFromTo of the input into the output."""
    src.copyto(dst)


SPECIAL_OPS: dict[str, Callable] = {"__nop": _nop, "__copy": _copy}


def kernel_names(graph: Graph) -> tuple[str, ...]:
    """The func_names that must come from model.so (everything but __nop / __copy)."""
    return tuple(dict.fromkeys(n.func_name for n in graph.op_nodes()
                               if n.func_name not in SPECIAL_OPS))


def _flat(view):
    return view._create_view((math.prod(view.shape),))


def _bind_one(graph: Graph, position: int, node: Node, views: tuple, kernels: KernelTable
              ) -> BoundOp:
    in_eids, out_eids = graph.op_eids(node)
    args = tuple(views[e] for e in in_eids + out_eids)
    if node.flatten_data:
        args = tuple(_flat(a) for a in args)
    fn = SPECIAL_OPS.get(node.func_name) or kernels[node.func_name]
    bind = getattr(fn, "bind_args", None)
    try:
        call = bind(args) if bind is not None else (fn, args)
    except MinigraphError as err:
        raise type(err)(f"node {node.index} '{node.name}': {err}") from None
    return BoundOp(position, node.index, node.name, node.func_name, fn, args, in_eids, out_eids,
                   call)


def rebind(op: BoundOp, args: tuple) -> tuple[Callable, tuple]:
    """``op``'s call on other buffers (same shapes and dtypes as ``op.args``, already flat
    where the op flattens): for timing an op on copies of its data (values/cost.py)."""
    bind = getattr(op.fn, "bind_args", None)
    return bind(args) if bind is not None else (op.fn, args)


def bind_ops(graph: Graph, views: tuple, kernels: KernelTable) -> tuple[BoundOp, ...]:
    """Binds every tvm_op node in execution order."""
    return tuple(_bind_one(graph, i, node, views, kernels)
                 for i, node in enumerate(graph.op_nodes()))
