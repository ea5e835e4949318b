"""Relax operators evaluated in numpy at build time, for arguments known at build time.

TVM's ``FoldConstant`` compiles and runs every foldable op (a ResNet-50 build paid ~10 s for
it); the weight arithmetic an ONNX export leaves (reshapes and transposes of weights, batch norm
statistics, layout changes) is a handful of numpy calls. An op missing here is not an error: it
stays in the graph and runs at inference time (the preparation step says how many did).
"""
from __future__ import annotations

from typing import Callable

import numpy as np


def _shape(expr) -> tuple[int, ...]:
    return tuple(int(v) for v in expr.values)


def _axes(attrs, ndim: int) -> list[int] | None:
    axes = getattr(attrs, "axes", None)
    return None if axes is None else [int(a) % ndim for a in axes]


def _permute(args, attrs, exprs):
    axes = _axes(attrs, args[0].ndim)
    return np.transpose(args[0], axes)


def _expand_dims(args, attrs, exprs):
    out = args[0]
    for ax in sorted(int(a) for a in attrs.axis):
        out = np.expand_dims(out, ax if ax >= 0 else out.ndim + 1 + ax)
    return out


def _squeeze(args, attrs, exprs):
    axis = attrs.axis
    return np.squeeze(args[0], None if axis is None else tuple(int(a) for a in axis))


BINARY: dict[str, Callable] = {
    "relax.add": np.add, "relax.subtract": np.subtract, "relax.multiply": np.multiply,
    "relax.divide": np.divide, "relax.power": np.power, "relax.maximum": np.maximum,
    "relax.minimum": np.minimum,
}
UNARY: dict[str, Callable] = {
    "relax.sqrt": np.sqrt, "relax.rsqrt": lambda a: 1.0 / np.sqrt(a), "relax.negative": np.negative,
    "relax.exp": np.exp, "relax.abs": np.abs, "relax.nn.relu": lambda a: np.maximum(a, 0),
    "relax.isnan": np.isnan,
}
OTHER: dict[str, Callable] = {
    "relax.reshape": lambda args, attrs, exprs: args[0].reshape(_shape(exprs[1])),
    "relax.permute_dims": _permute,
    "relax.expand_dims": _expand_dims,
    "relax.squeeze": _squeeze,
    "relax.flatten": lambda args, attrs, exprs: args[0].reshape(-1),
    "relax.astype": lambda args, attrs, exprs: args[0].astype(str(attrs.dtype)),
}


def evaluate(op: str, values: list, attrs, exprs) -> np.ndarray | None:
    """The op's value, or None if it has no numpy form here. ``values`` are the arguments
    (numpy arrays; None for non-tensor arguments such as a shape), ``exprs`` the Relax ones."""
    if op in BINARY and len(values) == 2 and all(v is not None for v in values):
        a, b = values
        out = BINARY[op](a, b)  # a scalar operand does not promote the tensor's dtype
        return np.asarray(out, dtype=a.dtype if a.ndim >= b.ndim else b.dtype)
    if op in UNARY and len(values) == 1 and values[0] is not None:
        out = UNARY[op](values[0])
        return np.asarray(out, dtype=out.dtype if out.dtype == bool else values[0].dtype)
    if op == "relax.where" and len(values) == 3 and all(v is not None for v in values):
        return np.asarray(np.where(*values), dtype=np.result_type(values[1], values[2]))
    if op in OTHER and values and values[0] is not None:
        return np.ascontiguousarray(OTHER[op](values, attrs, exprs))
    return None
