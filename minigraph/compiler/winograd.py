"""Winograd F(m x m, 3 x 3) for the 3x3 stride-1 convs: fewer multiplies, same answers.

A 3x3 conv computes each m x m block of outputs from an (m + 2) x (m + 2) block of inputs.
Winograd's minimal filtering (Lavin & Gray, "Fast Algorithms for Convolutional Neural
Networks", 2015) does it as ``Y = A^T [(G g G^T) * (B^T d B)] A``: per input channel, the
input tile is transformed (B), multiplied element-wise by the transformed weight (G, done
once here at build time, in numpy), and the products summed over input channels are
transformed back (A). The sum over input channels is (m + 2)^2 independent matrix products
``[tiles x C] @ [C x K]``: for F(4x4, 3x3), 36 multiply-adds per 16 outputs per channel pair
instead of 144, a 4x cut, less what the transforms cost.

Counterpart in TVM: TOPI's ``conv2d_winograd_nhwc`` with a pre-transformed weight
(``conv2d_winograd_nhwc_without_weight_transform``) and Relay's
``contrib_conv2d_winograd_weight_transform``; TVM 0.27's Relax legalization no longer offers
the pre-computed form ("LEGACY-FLOW triggered"), so the stages are written here in TE and the
weight transform is another param of model.params, like a packed weight (packing.py).

Where it pays: the transformed weight is (m + 2)^2 / 9 = 4x the conv's weight, read once per
run; when a conv's output has few tiles, that traffic (from DRAM when the model's weights
exceed the last-level cache) outweighs the multiplies saved (``WinogradRule``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from tvm import te
from tvm import tirx as tir

from .conv_calls import i64, relax_like, static_nhwc_conv

BLOCKS = ("winograd_input_rows", "winograd_input", "winograd_gemm", "winograd_output_cols",
          "winograd_output")
OUTPUT_BLOCK = "conv2d_winograd_nhwc"
PAD_BLOCK = "data_pad"


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: its fields are arrays
class Transform:
    """F(m x m, 3 x 3): ``AT`` (m x a), ``G`` (a x 3), ``BT`` (a x a), a = m + 2; exact
    rationals (points 0, +-1, +-2, infinity for m = 4; 0, +-1, infinity for m = 2)."""

    m: int
    AT: np.ndarray
    G: np.ndarray
    BT: np.ndarray

    @property
    def alpha(self) -> int:
        return self.m + 2

    def weight(self, hwio: np.ndarray) -> np.ndarray:
        """HWIO 3x3 weight -> [a, a, I, O]: G g G^T per channel pair, in float64."""
        u = np.einsum("ea,abio,nb->enio", self.G, hwio.astype(np.float64), self.G)
        return np.ascontiguousarray(u.astype(hwio.dtype))


F4 = Transform(4, np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0],
                            [0, 1, -1, 8, -8, 1]], np.float64),
               np.array([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6],
                         [1 / 24, 1 / 12, 1 / 6], [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]]),
               np.array([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0],
                         [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]],
                        np.float64))
F2 = Transform(2, np.array([[1, 1, 1, 0], [0, 1, -1, -1]], np.float64),
               np.array([[1, 0, 0], [1 / 2, 1 / 2, 1 / 2], [1 / 2, -1 / 2, 1 / 2], [0, 0, 1]]),
               np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], np.float64))


@dataclass(frozen=True)
class ConvShape:
    """An NHWC/HWIO conv with a 3x3 kernel, stride 1, and its padding (top, left, bottom, right)."""

    n: int
    h: int
    w: int
    c: int
    k: int
    pad: tuple[int, int, int, int]
    dtype: str

    @property
    def out_hw(self) -> tuple[int, int]:
        top, left, bottom, right = self.pad
        return self.h + top + bottom - 2, self.w + left + right - 2

    @property
    def direct_flops(self) -> float:
        """A direct conv's multiplies and adds: 2 * N * Ho * Wo * 9 * C * K."""
        ho, wo = self.out_hw
        return 2.0 * self.n * ho * wo * 9 * self.c * self.k

    def tiles(self, m: int) -> tuple[int, int]:
        """Tiles per column and per row of the output: the last ones may overhang it."""
        ho, wo = self.out_hw
        return -(-ho // m), -(-wo // m)


def _combination(mat: np.ndarray, row: int, term, dtype: str) -> tir.PrimExpr:
    """sum_k mat[row, k] * term(k), written out: zero coefficients dropped, +-1 not
    multiplied, a negative one subtracted, so the transforms are mostly additions."""
    out = None
    for k, coef in enumerate(mat[row]):
        if coef == 0:
            continue
        t = term(k)
        if abs(coef) != 1:
            t = t * tir.const(float(abs(coef)), dtype)
        if out is None:
            out = t if coef > 0 else t * tir.const(-1.0, dtype)
        else:
            out = out + t if coef > 0 else out - t
    return out


def _by_index(idx, count: int, leaf) -> tir.PrimExpr:
    """leaf(i) where idx == i: a Select chain the schedule's unrolled loops fold away."""
    expr = leaf(count - 1)
    for i in range(count - 2, -1, -1):
        expr = tir.Select(idx == i, leaf(i), expr)
    return expr


def winograd_func(shape: ConvShape, tf: Transform = F4) -> tir.PrimFunc:
    """The conv as TE stages: padded input, input transform (two passes, rows then columns),
    (m + 2)^2 matrix products over input channels, inverse transform (two passes), and the
    NHWC output gathered from the tiles. Parameters: data (N, H, W, C), transformed weight
    (a, a, C, K), output (N, Ho, Wo, K)."""
    a, dt = tf.alpha, shape.dtype
    data = te.placeholder(i64(shape.n, shape.h, shape.w, shape.c), dt, "data")
    weight = te.placeholder(i64(a, a, shape.c, shape.k), dt, "winograd_weight")
    v = _input_transform(shape, tf, data)
    ci = te.reduce_axis(i64(0, shape.c), name="ci")
    prod = te.compute(i64(a, a, int(v.shape[2]), shape.k), lambda e, nu, p, k: te.sum(
        v[e, nu, p, ci] * weight[e, nu, ci, k], axis=ci), name=BLOCKS[2])
    out = _inverse_transform(shape, tf, prod)
    return relax_like(te.create_prim_func([data, weight, out]))


def _input_transform(shape: ConvShape, tf: Transform, data):
    """V[e, nu, p, c] = (B^T d_p B)[e, nu] for tile p's (m + 2)^2 window d_p of channel c."""
    m, a, dt = tf.m, tf.alpha, shape.dtype
    n_h, n_w = shape.tiles(m)
    top, left = shape.pad[:2]

    def padded(b, h, w, c):
        inside = tir.all(h >= top, h < shape.h + top, w >= left, w < shape.w + left)
        return tir.if_then_else(inside, data[b, h - top, w - left, c], tir.const(0.0, dt))
    pad = te.compute(i64(shape.n, n_h * m + 2, n_w * m + 2, shape.c), padded, name=PAD_BLOCK)

    def window(p, r1, r2, c):
        b, t = p // (n_h * n_w), p % (n_h * n_w)
        return pad[b, t // n_w * m + r1, t % n_w * m + r2, c]
    dims = i64(a, a, shape.n * n_h * n_w, shape.c)
    rows = te.compute(dims, lambda e, r2, p, c: _by_index(e, a, lambda i: _combination(
        tf.BT, i, lambda k: window(p, k, r2, c), dt)), name=BLOCKS[0])
    return te.compute(dims, lambda e, nu, p, c: _by_index(nu, a, lambda i: _combination(
        tf.BT, i, lambda k: rows[e, k, p, c], dt)), name=BLOCKS[1])


def _inverse_transform(shape: ConvShape, tf: Transform, prod):
    """The output: Y_p = A^T M_p A per tile p and output channel, gathered into NHWC."""
    m, a, dt = tf.m, tf.alpha, shape.dtype
    n_h, n_w = shape.tiles(m)
    tiles, k = shape.n * n_h * n_w, shape.k
    cols = te.compute(i64(a, m, tiles, k), lambda e, x, p, o: _by_index(x, m, lambda i: (
        _combination(tf.AT, i, lambda r: prod[e, r, p, o], dt))), name=BLOCKS[3])
    y = te.compute(i64(m, m, tiles, k), lambda yh, x, p, o: _by_index(yh, m, lambda i: (
        _combination(tf.AT, i, lambda r: cols[r, x, p, o], dt))), name=BLOCKS[4])
    return te.compute(i64(shape.n, *shape.out_hw, k), lambda b, h, w, o: y[
        h % m, w % m, b * n_h * n_w + h // m * n_w + w // m, o], name=OUTPUT_BLOCK)


def conv_shape(call, weight: np.ndarray | None) -> ConvShape | None:
    """The conv's shape if Winograd F(m, 3x3) computes it here: a conv2d the rewrites may
    replace (conv_calls.py) with a 3x3 kernel, stride 1 and dilation 1."""
    dims = static_nhwc_conv(call, weight)
    attrs = call.attrs
    if dims is None or weight.shape[:2] != (3, 3):
        return None
    if [int(s) for s in attrs.strides] != [1, 1] or [int(d) for d in attrs.dilation] != [1, 1]:
        return None
    pad = tuple(int(p) for p in attrs.padding)
    pad = (pad * 4)[:4] if len(pad) == 1 else (pad * 2)[:4] if len(pad) == 2 else pad
    return ConvShape(*dims, int(weight.shape[3]), pad, "float32")
