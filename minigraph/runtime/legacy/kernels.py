"""Legacy kernels behind the kernel-table interface: ``kernel(*tensors)``, checked, via ctypes.

Each call passes what the old ``PackedFunc`` passed (``WrapPackedFunc`` in
src/runtime/library_module.cc, TVM <= 0.20): an array of ``TVMValue`` holding one ``DLTensor*``
per argument, an array of type codes (7, ``kTVMDLTensorHandle``), the count, return slots and a
NULL resource handle (NNVM-era kernels read only the first five; the sixth in a register is
harmless on x86-64 SysV). A wrong type code or a malformed tensor can crash a kernel before
its own checks run, so every argument is validated here first: CPU, dense (no strides), a
dtype TVM knows, data aligned to 64 bytes (the kernels were compiled assuming it).

``bind_args`` builds all of that once per op (DLTensors, arrays, a trampoline that loads them,
call.py, and a ctypes ``errcheck`` that turns a non-zero return into a ``KernelError``
with the kernel's assert text): the run loop then calls it with no per-call conversion.
"""
from __future__ import annotations

import ctypes
import math
from typing import Callable, Iterable, Sequence

import numpy as np

from ...artifacts.dlpack import KDLCPU
from ...errors import InputError, KernelError, MissingKernelError
from .abi import DL_TENSOR as DL_TENSOR_HANDLE, DL_TYPES, DLTensor
from .call import CALL, prebuilt
from .loader import LegacyLibrary

ALIGNMENT = 64           # bytes: TVM's kAllocAlignment, which the kernels assume
_MAX_NDIM = 64


def _describe(arr) -> tuple[int, tuple[int, ...], str, bool, bool]:
    """(data address, shape, dtype, on CPU, dense) of a TVM Tensor or a numpy array."""
    if isinstance(arr, np.ndarray):
        return arr.ctypes.data, arr.shape, arr.dtype.name, True, arr.flags.c_contiguous
    shape = tuple(int(d) for d in arr.shape)
    dense = arr.is_contiguous() if hasattr(arr, "is_contiguous") else True
    on_cpu = arr.device.dlpack_device_type() == KDLCPU
    return int(arr.data_ptr()), shape, str(arr.dtype), on_cpu, dense


def make_tensor(arr, name: str, k: int) -> tuple[DLTensor, object]:
    """A validated DLTensor for argument ``k`` of kernel ``name`` (and what keeps it valid)."""
    data, shape, dtype, on_cpu, dense = _describe(arr)
    where = f"legacy kernel '{name}' argument #{k} ({dtype}{list(shape)})"
    if not on_cpu:
        raise InputError(f"{where} is not on the CPU; legacy kernels run on the host only")
    if dtype not in DL_TYPES:
        raise InputError(f"{where}: dtype {dtype} has no DLDataType in TVM <= 0.20")
    if not dense:
        raise InputError(f"{where} is strided; legacy kernels take dense tensors only")
    if len(shape) > _MAX_NDIM or any(d < 0 for d in shape):
        raise InputError(f"{where}: impossible shape")
    if data % ALIGNMENT and math.prod(shape):
        raise InputError(f"{where}: data at {data:#x} is not {ALIGNMENT}-byte aligned, as the "
                         "kernel was compiled to assume")
    code, bits = DL_TYPES[dtype]
    dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    t = DLTensor(data, 1, 0, len(shape), code, bits, 1, dims, None, 0)
    return t, (dims, arr)


def _errcheck(lib: LegacyLibrary, name: str, keep: list) -> Callable:
    """ctypes ``errcheck`` for one kernel: a non-zero return is the kernel's error, with the
    text it passed to TVMAPISetLastError. Holds (``keep``) what the call's pointers point into.
    A closure, not a class: it runs on every call, and a closure is the cheaper call."""
    def check(result: int, func, args) -> int:
        if result != 0:
            text = lib.take_error() or "no message (the kernel set none)"
            raise KernelError(f"legacy kernel '{name}' returned {result}: {text}")
        return result
    check.keep = keep  # type: ignore[attr-defined]
    return check


class LegacyKernel:
    """One kernel of a legacy library, callable like a TVM packed function on tensors."""

    def __init__(self, lib: LegacyLibrary, name: str, address: int) -> None:
        self.lib, self.name, self.address = lib, name, address

    def _arrays(self, args: Sequence) -> tuple:
        made = [make_tensor(a, self.name, k) for k, a in enumerate(args)]
        n = len(made)
        values = (ctypes.c_uint64 * max(n, 1))(*[ctypes.addressof(t) for t, _ in made])
        codes = (ctypes.c_int * max(n, 1))(*[DL_TENSOR_HANDLE] * n)
        ret, ret_code = (ctypes.c_uint64 * 1)(), (ctypes.c_int * 1)()
        keep = [made, values, codes, ret, ret_code]
        return values, codes, n, ret, ret_code, _errcheck(self.lib, self.name, keep)

    def bind_args(self, args: Sequence) -> tuple[Callable, tuple]:
        """(function, arguments) for ``function(*arguments)``, built once for the run loop:
        everything checked, a trampoline of no arguments where the OS allows (call.py);
        the function raises KernelError when the kernel fails."""
        return prebuilt(self.address, *self._arrays(args))

    def __call__(self, *args) -> None:
        """One call on these tensors (checked and converted now; no trampoline is kept)."""
        values, codes, n, ret, ret_code, check = self._arrays(args)
        fn = CALL(self.address)
        fn.errcheck = check
        fn(values, codes, n, ret, ret_code, None)


def kernel_table(lib: LegacyLibrary, names: Iterable[str]) -> dict[str, LegacyKernel]:
    """func_name -> LegacyKernel for every name; MissingKernelError names the closest ones."""
    import difflib
    table = {}
    for name in dict.fromkeys(names):
        address = lib.address(name)
        if address is None:
            close = difflib.get_close_matches(name, lib.facts.kernels, n=3, cutoff=0.5)
            hint = f"; closest: {', '.join(close)}" if close else \
                f"; the library exports {len(lib.facts.kernels)} kernels"
            raise MissingKernelError(f"kernel '{name}' is not in {lib.facts.path}{hint} (was "
                                     "graph.json built together with this library?)")
        table[name] = LegacyKernel(lib, name, address)
    return table
