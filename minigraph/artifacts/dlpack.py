"""Data type facts shared by the planner, the storage stage and the params reader."""
from __future__ import annotations

import math

# Bits per element of every dltype minigraph supports (TVM's DLDataType with lanes == 1).
DLTYPE_BITS: dict[str, int] = {
    "float16": 16, "float32": 32, "float64": 64, "bfloat16": 16,
    "int8": 8, "int16": 16, "int32": 32, "int64": 64,
    "uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64, "bool": 8,
}


def dtype_nbytes(dltype: str) -> int:
    """Bytes per element; bool is stored in one byte, as TVM stores it."""
    return (DLTYPE_BITS[dltype] + 7) // 8


def entry_nbytes(shape: tuple[int, ...], dltype: str) -> int:
    """Bytes of a dense tensor of this shape and type (TVM's GetDataSize)."""
    return math.prod(shape) * dtype_nbytes(dltype)
