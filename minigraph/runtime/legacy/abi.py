"""The old packed C ABI's data layout (include/tvm/runtime/c_runtime_api.h, dlpack.h, TVM <= 0.20).

A kernel is ``int f(TVMValue* args, int* type_codes, int num_args, TVMValue* ret,
int* ret_tcode, void* resource_handle)``; ``TVMValue`` is an 8-byte union (int64, double,
pointer); a tensor argument is a ``DLTensor*`` with type code 7 (``kTVMDLTensorHandle``, named
``kArrayHandle`` before 0.7).
"""
from __future__ import annotations

import ctypes

from ...artifacts.dlpack import CODE_OF, NAME_OF, UINT as UINT_CODE

# TVM <= 0.20 type codes (TVMArgTypeCode)
INT, UINT, FLOAT, HANDLE, NULL, DL_TENSOR, STR = 0, 1, 2, 3, 4, 7, 11
# dtype -> DLDataType (code, bits) as TVM <= 0.20 passed it: bool was uint1 in those versions
DL_TYPES: dict[str, tuple[int, int]] = {**CODE_OF, "bool": (UINT_CODE, 1)}
# DLDataType -> numpy dtype name, for tensors a kernel hands to a packed function
NUMPY_OF: dict[tuple[int, int], str] = {k: v for k, v in NAME_OF.items() if v != "bfloat16"}


class DLTensor(ctypes.Structure):
    """dlpack's DLTensor (48 bytes): data, device, ndim, dtype, shape, strides, byte_offset."""

    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


assert ctypes.sizeof(DLTensor) == 48
