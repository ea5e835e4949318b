"""Weight packing: a layout change of a kernel's constant argument, done once at build time.

A schedule that wants a weight in a blocked layout (TVM's ``OHWI32o``: output channels split
into blocks of 32, each block's [H, W, I, 32] contiguous, so the inner loop streams it) changes
the PrimFunc's parameter with ``transform_layout``; the compiler then applies the same index map
to the param in numpy and gives the result its own name. Counterpart: MetaSchedule's
``RewriteLayout`` + Relax ``SplitLayoutRewritePreproc`` (which do the transform at run time or
in a separate preprocessing function); here the packed weight is simply another named param.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..artifacts.graph import Node


@dataclass(frozen=True)
class Pack:
    """Axis ``axis`` of parameter ``param`` is split by ``factor``; the outer part goes first:
    ``[d0, .., d_axis, ..] -> [d_axis / factor, d0, .. (without d_axis) .., factor]``."""

    param: int     # index of the PrimFunc parameter
    axis: int
    factor: int
    layout: str    # e.g. "OHWI32o" for an HWIO conv weight

    def index_map(self):
        axis, f = self.axis, self.factor

        def mapping(*idx):
            rest = [v for k, v in enumerate(idx) if k != axis]
            return (idx[axis] // f, *rest, idx[axis] % f)
        return mapping

    def shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        rest = tuple(d for k, d in enumerate(shape) if k != self.axis)
        return (shape[self.axis] // self.factor, *rest, self.factor)

    def apply(self, value: np.ndarray) -> np.ndarray:
        """The numpy twin of ``index_map``: reshape the split axis, move its outer part first."""
        ax, f = self.axis, self.factor
        split = value.reshape(*value.shape[:ax], value.shape[ax] // f, f, *value.shape[ax + 1:])
        order = [ax] + [k for k in range(split.ndim) if k not in (ax, ax + 1)] + [ax + 1]
        return np.ascontiguousarray(split.transpose(order))

    def param_name(self, name: str) -> str:
        return f"{name}.{self.layout}"


def packable_args(nodes, params: dict[str, np.ndarray]) -> dict[str, frozenset[int]]:
    """Per kernel name, the argument indices a schedule may repack: every call of the kernel
    passes a constant param there, and nothing else reads that param (so the packed copy
    replaces it instead of doubling it)."""
    consumers: dict[int, set[tuple[str, int]]] = {}
    for node in nodes:
        for i, entry in enumerate(node.inputs if node.is_op else ()):
            src = nodes[entry.node_id]
            if not src.is_op and src.name in params:
                consumers.setdefault(entry.node_id, set()).add((node.name, i))
    calls: dict[str, list] = {}
    for node in nodes:
        if node.is_op:
            calls.setdefault(node.name, []).append(node)
    out = {}
    for name, nodes_of in calls.items():
        args = set(range(len(nodes_of[0].inputs)))
        for node in nodes_of:
            args &= {i for i, e in enumerate(node.inputs)
                     if consumers.get(e.node_id, set()) <= {(name, i)} and e.node_id in consumers}
        out[name] = frozenset(args)
    return out


def apply_packs(lowered, params: dict[str, np.ndarray],
                packs: dict[str, tuple[Pack, ...]]) -> dict[str, dict]:
    """Repacks the params the scheduled kernels asked for (numpy, once), renaming their null
    nodes in ``lowered`` in place; returns ``{new name: {"from", "layout", "shape"}}``."""
    eid_of, eid = {}, 0
    for node in lowered.nodes:
        eid_of[node.index] = eid
        eid += node.num_outputs if node.is_op else 1
    done: dict[str, dict] = {}
    for node in list(lowered.nodes):
        for pack in packs.get(node.name, ()) if node.is_op else ():
            src = lowered.nodes[node.inputs[pack.param].node_id]
            if src.name not in params:  # already packed through another call of this kernel
                continue
            new = pack.param_name(src.name)
            params[new] = pack.apply(params.pop(src.name))
            lowered.nodes[src.index] = Node(src.index, "null", new, (), ())
            lowered.shapes[eid_of[src.index]] = tuple(params[new].shape)
            done[new] = {"from": src.name, "layout": pack.layout, "shape": list(params[new].shape)}
    return done
