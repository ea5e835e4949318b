"""What the conv-algorithm rewrites (conv_algorithms.py) share: which ``relax.nn.conv2d`` calls
they may replace, and how a replacement PrimFunc is made to look like one Relax legalized
(private, int64 shapes, conv2d's fusion pattern), so FuseOps and FuseTIR treat it alike."""
from __future__ import annotations

import numpy as np
from tvm import tirx as tir

OUT_EWISE_FUSABLE = 4  # TVM's OpPatternKind kOutEWiseFusable: conv2d's; FuseOps fuses its epilogue


def static_nhwc_conv(call, weight: np.ndarray | None) -> tuple[int, int, int, int] | None:
    """The input's (N, H, W, C) if ``call`` is a conv2d the rewrites may replace: NHWC/HWIO,
    one group, float32, static shapes, a weight known at build time; else None."""
    attrs = call.attrs
    if weight is None or str(attrs.data_layout) != "NHWC" or str(attrs.kernel_layout) != "HWIO" \
            or str(attrs.out_layout) not in ("NHWC", "") or int(attrs.groups) != 1:
        return None
    if weight.dtype != np.float32 or str(call.ty.dtype) != "float32":
        return None
    try:
        n, h, w, c = (int(d) for d in call.args[0].ty.shape)
    except (TypeError, ValueError):  # a symbolic dimension
        return None
    return n, h, w, c


def i64(*dims: int) -> tuple:
    """Shapes as Relax's legalized PrimFuncs have them (int64): FuseTIR refuses to join a
    producer and consumer whose buffers differ in the shape's integer type."""
    return tuple(tir.IntImm("int64", d) for d in dims)


def relax_like(func: tir.PrimFunc) -> tir.PrimFunc:
    """Private (no global_symbol), as Relax's legalized PrimFuncs are (FuseTIR then drops
    it), with conv2d's fusion pattern."""
    return func.without_attr("global_symbol").with_attr("op_pattern", OUT_EWISE_FUSABLE)
