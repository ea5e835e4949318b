"""A conv2d with a per-output-channel affine epilogue still to fold: ``conv(x, W) * s + t``
(fold.py builds these while it walks the bindings)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Affine:
    """conv2d(data, weight) * scale + shift, per output channel (scale/shift shape [C])."""
    data: object
    weight: np.ndarray
    weight_name: str
    call: object     # the original conv2d call (attrs)
    out_ty: object   # the conv's output TensorType
    scale: np.ndarray
    shift: np.ndarray | None = None
    shift_name: str = ""  # the bias param's name while the shift is exactly that param

    @property
    def channel_axis(self) -> int:
        return str(self.call.attrs.out_layout).index("C")


def per_channel(value: np.ndarray, out_ty, axis: int) -> np.ndarray | None:
    """``value`` as a [C] vector if it broadcasts along the channel axis only (or is a scalar)."""
    ndim = len(out_ty.shape)
    channels = int(out_ty.shape[axis])
    if value.ndim > ndim:
        return None
    full = value.reshape((1,) * (ndim - value.ndim) + value.shape)
    if any(d != 1 for k, d in enumerate(full.shape) if k != axis):
        return None
    return np.broadcast_to(full.reshape(-1), (channels,)).astype(value.dtype)


def extend(a: Affine, op: str, v: np.ndarray) -> Affine:
    shift = a.shift
    if op == "relax.add":
        shift = v if shift is None else shift + v
    elif op == "relax.subtract":
        shift = -v if shift is None else shift - v
    elif op == "relax.multiply":
        return Affine(a.data, a.weight, a.weight_name, a.call, a.out_ty, a.scale * v,
                       None if shift is None else shift * v)
    else:  # divide
        return Affine(a.data, a.weight, a.weight_name, a.call, a.out_ty, a.scale / v,
                       None if shift is None else shift / v)
    return Affine(a.data, a.weight, a.weight_name, a.call, a.out_ty, a.scale, shift)
