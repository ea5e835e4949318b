"""DLPack's tables, once for the whole package: device types, DLDataType codes, and the dtype
names minigraph supports (include/dlpack/dlpack.h; TVM's ``DataType``).

Read by the param blob (artifacts/params.py), the Relax VM bytecode (runtime/relax_vm/
bytecode.py), the old packed C ABI (runtime/legacy/abi.py), the planner and the storage stage.
"""
from __future__ import annotations

import math

KDLCPU = 1  # DLDeviceType kDLCPU: the only device minigraph runs on

# DLDataTypeCode
INT, UINT, FLOAT, BFLOAT, BOOL = 0, 1, 2, 4, 6
_PREFIX = {INT: "int", UINT: "uint", FLOAT: "float", BFLOAT: "bfloat"}

# Bits per element of every dltype minigraph supports (TVM's DLDataType with lanes == 1).
DLTYPE_BITS: dict[str, int] = {
    "float16": 16, "float32": 32, "float64": 64, "bfloat16": 16,
    "int8": 8, "int16": 16, "int32": 32, "int64": 64,
    "uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64, "bool": 8,
}
# dtype name -> (code, bits) as TVM >= 0.15 writes it (kDLBool for bool)
CODE_OF: dict[str, tuple[int, int]] = {
    **{f"int{b}": (INT, b) for b in (8, 16, 32, 64)},
    **{f"uint{b}": (UINT, b) for b in (8, 16, 32, 64)},
    **{f"float{b}": (FLOAT, b) for b in (16, 32, 64)},
    "bfloat16": (BFLOAT, 16), "bool": (BOOL, 8)}
# (code, bits) -> dtype name; older TVM wrote bool as uint1 (still one byte per element)
NAME_OF: dict[tuple[int, int], str] = {**{v: k for k, v in CODE_OF.items()}, (UINT, 1): "bool"}


def dtype_name(code: int, bits: int, lanes: int = 1) -> str:
    """TVM's name of a DLDataType ('float32', 'boolx4', 'code9_32' for an unknown code)."""
    base = "bool" if code == BOOL else f"{_PREFIX.get(code, f'code{code}_')}{bits}"
    return base if lanes == 1 else f"{base}x{lanes}"


def dtype_nbytes(dltype: str) -> int:
    """Bytes per element; bool is stored in one byte, as TVM stores it."""
    return (DLTYPE_BITS[dltype] + 7) // 8


def entry_nbytes(shape: tuple[int, ...], dltype: str) -> int:
    """Bytes of a dense tensor of this shape and type (TVM's GetDataSize)."""
    return math.prod(shape) * dtype_nbytes(dltype)
