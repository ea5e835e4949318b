"""Packed functions an old kernel asks the runtime for, served from TVM 0.27's registry.

Some TOPI ops of TVM <= 0.20 lowered part of their work to a packed call: the CPU NMS of SSD
detectors sorts through ``tvm.contrib.sort.argsort_nms``, ``topk`` through
``tvm.contrib.sort.topk``. The kernel looks the function up once with
``TVMBackendGetFuncFromEnv(module_ctx, name, &handle)`` and calls it with
``TVMFuncCall(handle, values, type_codes, n, &ret, &ret_code)`` (src/runtime/c_runtime_api.cc,
src/runtime/module.cc ``GetFuncFromEnv``). TVM 0.27 still registers those functions with the
same arguments, so the lookup is answered from its global registry and the call converted:
``DLTensor*`` arguments become TVM Tensors over the same memory (copied in and out only when
not 64-byte aligned, which TVM 0.27 requires), ints, floats and strings pass as they are. A
name TVM 0.27 does not have is an error naming it (the op's error, at the call).
"""
from __future__ import annotations

import ctypes
import math
from typing import Callable, Iterable

import numpy as np

from .abi import DL_TENSOR, FLOAT, INT, NULL, NUMPY_OF, STR, UINT, DLTensor

# lazy: TVM (~1.2 s to import) is imported where it is called; TVM-free commands load this module

GET_FUNC = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p,
                            ctypes.POINTER(ctypes.c_void_p))
FUNC_CALL = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64),
                             ctypes.POINTER(ctypes.c_int), ctypes.c_int,
                             ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_int))


def missing(names: Iterable[str]) -> tuple[str, ...]:
    """The names TVM 0.27's global registry does not have."""
    import tvm
    return tuple(n for n in names if tvm.get_global_func(n, allow_missing=True) is None)


def _array(address: int) -> np.ndarray:
    """A numpy view of the memory a dense DLTensor* describes (no copy)."""
    t = DLTensor.from_address(address)
    dtype = NUMPY_OF.get((t.code, t.bits))
    if dtype is None or t.lanes != 1 or not 0 <= t.ndim <= 64:
        raise ValueError(f"a tensor argument of DLDataType ({t.code}, {t.bits}, {t.lanes})")
    shape = tuple(t.shape[i] for i in range(t.ndim))
    dense = tuple(math.prod(shape[k + 1:]) for k in range(len(shape)))
    if t.strides and any(t.strides[k] != dense[k] for k in range(t.ndim) if shape[k] > 1):
        raise ValueError("a strided tensor argument")
    nbytes = math.prod(shape) * np.dtype(dtype).itemsize
    raw = (ctypes.c_uint8 * max(nbytes, 1)).from_address(t.data + t.byte_offset)
    return np.frombuffer(raw, np.uint8)[:nbytes].view(dtype).reshape(shape)


class PackedBridge:
    """GetFuncFromEnv and TVMFuncCall for one library; ``set_error`` records failures the
    kernel then returns as its own (TVMAPISetLastError's text)."""

    def __init__(self, set_error: Callable[[bytes], None]) -> None:
        self.set_error = set_error
        self.funcs: list[tuple[str, Callable]] = []

    def get_func(self, _mod, name: bytes | None, out) -> int:
        import tvm
        text = (name or b"").decode("utf-8", "replace")
        fn = tvm.get_global_func(text, allow_missing=True)
        if fn is None:
            self.set_error(f"the kernel needs packed function '{text}', which TVM 0.27 does not "
                           "provide (an extern library or a device launch)".encode())
            return -1
        self.funcs.append((text, fn))
        out[0] = len(self.funcs)  # a handle: 1-based index, never NULL
        return 0

    def call(self, handle, values, codes, n, _ret, ret_code) -> int:
        name = "?"
        try:
            name, fn = self.funcs[(handle or 0) - 1]
            args, copies = self._args(values, codes, n)
            fn(*args)
            for view, tmp in copies:  # copy-out for tensors TVM 0.27 would not take in place
                view[...] = tmp.numpy()
            if ret_code:
                ret_code[0] = NULL
            return 0
        except Exception as err:  # noqa: BLE001 - becomes the kernel's error, at the op
            self.set_error(f"packed function '{name}' failed: {err}".encode())
            return -1

    @staticmethod
    def _args(values, codes, n: int) -> tuple[list, list]:
        import tvm
        args: list = []
        copies: list = []
        for i in range(n):
            code, raw = codes[i], values[i]
            if code in (INT, UINT):
                args.append(ctypes.c_int64(raw).value if code == INT else raw)
            elif code == FLOAT:
                args.append(ctypes.c_double.from_buffer(ctypes.c_uint64(raw)).value)
            elif code == STR:
                args.append(ctypes.string_at(raw).decode("utf-8", "replace"))
            elif code == NULL:
                args.append(None)
            elif code == DL_TENSOR:
                view = _array(raw)
                if view.ctypes.data % 64 == 0 and view.flags.c_contiguous:
                    args.append(tvm.runtime.from_dlpack(view))
                else:
                    tmp = tvm.runtime.tensor(np.ascontiguousarray(view))
                    copies.append((view, tmp))
                    args.append(tmp)
            else:
                raise ValueError(f"argument {i} has type code {code}, which minigraph does not "
                                 "pass to TVM 0.27")
        return args, copies
