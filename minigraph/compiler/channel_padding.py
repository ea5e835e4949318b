"""A direct conv's output channels padded to whole vectors, where that keeps more lanes busy.

The conv rule (conv_schedule.py) vectorises over output channels. 24 channels (MobileNet-V2's
narrowest stage) on AVX-512's 16 lanes are three 8-lane vectors: every FMA half-width, half
the lanes idle. Padded to 32, they are two full vectors, 24 of 32 lanes useful: the kernel
computes the conv with a weight whose extra output channels are zeros (made once, at build
time, in numpy: another param, ``<weight>.pad<K>``, like a packed weight) and keeps the first
24 channels of its result in the epilogue, from registers. MobileNet-V2's two 24-channel 1x1
convs at 56x56 ran 113 and 172 us inside the model at one thread (AVX-512, Zen 5; ONNX
Runtime's nodes 83 and 122); padded, 83 and 126.

Counterpart in TVM: meta-schedule's ``pad_einsum`` (padding an einsum's iteration space to
the tile); that pads the weight in the kernel, with a bounds test per element, where here the
padded weight is a constant.
"""
from __future__ import annotations

import numpy as np
from tvm import te, topi
from tvm import tirx as tir

from .conv_calls import i64, relax_like
from .conv_tiles import MAX_VECTORS, vector_part

# the epilogue stage keeping the conv's own channels (not "conv2d_..": the conv rule counts
# blocks named so as convs)
CHANNELS_BLOCK = "channel_slice"


def padded_channels(k: int, lanes: int) -> int | None:
    """``k`` rounded up to whole vectors of ``lanes``, when more of the padded tile's lanes do
    useful work than of the narrower vectors that divide ``k`` (conv_tiles.vector_part) and
    one register tile takes them all (conv_tiles.MAX_VECTORS: wider, the last channel block
    would be part padding, its epilogue a bounds test per element); else None (24 of 16
    lanes: 32, 0.75 useful against 0.5; 8: no, 0.5 either way)."""
    padded = -(-k // lanes) * lanes
    if padded > MAX_VECTORS * lanes:
        return None
    return padded if k * lanes > vector_part(k, lanes) * padded else None


def pad_weight(hwio: np.ndarray, k_padded: int) -> np.ndarray:
    """HWIO weight with zero output channels appended up to ``k_padded``."""
    extra = k_padded - hwio.shape[3]
    return np.ascontiguousarray(np.pad(hwio, ((0, 0), (0, 0), (0, 0), (0, extra))))


def padded_conv_func(call, k_padded: int) -> tir.PrimFunc:
    """The conv as Relax legalizes it (TOPI's ``conv2d``, NHWC/HWIO: padding and
    ``conv2d_nhwc`` blocks), over a weight of ``k_padded`` output channels, then the
    ``CHANNELS_BLOCK`` stage keeping the call's own. Parameters: data, padded weight, output."""
    attrs, out_ty = call.attrs, call.ty
    data = te.placeholder(i64(*(int(d) for d in call.args[0].ty.shape)), "float32", "data")
    kh, kw, c, _ = (int(d) for d in call.args[1].ty.shape)
    weight = te.placeholder(i64(kh, kw, c, k_padded), "float32", "weight")
    conv = topi.nn.conv2d(data, weight, [int(s) for s in attrs.strides],
                          [int(p) for p in attrs.padding], [int(d) for d in attrs.dilation],
                          "NHWC", "HWIO", "float32")
    out = te.compute(i64(*(int(d) for d in out_ty.shape)), lambda n, h, w, k: conv[n, h, w, k],
                     name=CHANNELS_BLOCK)
    return relax_like(te.create_prim_func([data, weight, out]))

