"""Legacy kernels behind the kernel-table interface: ``kernel(*tensors)``, checked, via ctypes.

Each call passes what the old ``PackedFunc`` passed (``WrapPackedFunc`` in
src/runtime/library_module.cc, TVM <= 0.20): an array of ``TVMValue`` holding one ``DLTensor*``
per argument, an array of type codes (7, ``kTVMDLTensorHandle``), the count, return slots and a
NULL resource handle (NNVM-era kernels read only the first five; the sixth in a register is
harmless on x86-64 SysV). A wrong type code or a malformed tensor can crash a kernel before
its own checks run, so every argument is validated here first: CPU, dense (no strides), a
dtype TVM knows, data aligned to 64 bytes (the kernels were compiled assuming it).

``bind_args`` builds all of that once per op (DLTensors, arrays, a ctypes function object at
the kernel's address whose ``errcheck`` turns a non-zero return into a ``KernelError`` with the
kernel's assert text): the run loop then calls it with no per-call conversion.
"""
from __future__ import annotations

import ctypes
import math
import mmap
from typing import Callable, Iterable, Sequence

import numpy as np

from ..errors import InputError, KernelError, MissingKernelError
from .legacy_loader import LegacyLibrary

ALIGNMENT = 64           # bytes: TVM's kAllocAlignment, which the kernels assume
DL_TENSOR_HANDLE = 7     # kTVMDLTensorHandle (kArrayHandle before 0.7)
_MAX_NDIM = 64
# dtype -> DLDataType (code, bits) as TVM <= 0.20 passed it; bool was uint1 in those versions
DL_TYPES: dict[str, tuple[int, int]] = {
    **{f"int{b}": (0, b) for b in (8, 16, 32, 64)}, **{f"uint{b}": (1, b) for b in (8, 16, 32, 64)},
    "float16": (2, 16), "float32": (2, 32), "float64": (2, 64), "bfloat16": (4, 16), "bool": (1, 1)}
_CALL = ctypes.CFUNCTYPE(ctypes.c_int)  # no argtypes: arrays and ints go through unconverted


class DLTensor(ctypes.Structure):
    """dlpack's DLTensor (48 bytes): data, device, ndim, dtype, shape, strides, byte_offset."""

    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


assert ctypes.sizeof(DLTensor) == 48


def _describe(arr) -> tuple[int, tuple[int, ...], str, bool, bool]:
    """(data address, shape, dtype, on CPU, dense) of a TVM Tensor or a numpy array."""
    if isinstance(arr, np.ndarray):
        return arr.ctypes.data, arr.shape, arr.dtype.name, True, arr.flags.c_contiguous
    shape = tuple(int(d) for d in arr.shape)
    dense = arr.is_contiguous() if hasattr(arr, "is_contiguous") else True
    return int(arr.data_ptr()), shape, str(arr.dtype), arr.device.dlpack_device_type() == 1, dense


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


class _Check:
    """``errcheck`` of one kernel call: a non-zero return is the kernel's error, with the text
    it passed to TVMAPISetLastError. Holds what the call's pointers point into."""

    def __init__(self, lib: LegacyLibrary, name: str, keep: list) -> None:
        self.lib, self.name, self.keep = lib, name, keep

    def __call__(self, result: int, func, args) -> int:
        if result != 0:
            text = self.lib.take_error() or "no message (the kernel set none)"
            raise KernelError(f"legacy kernel '{self.name}' returned {result}: {text}")
        return result


class LegacyKernel:
    """One kernel of a legacy library, callable like a TVM packed function on tensors."""

    def __init__(self, lib: LegacyLibrary, name: str, address: int) -> None:
        self.lib, self.name, self.address = lib, name, address

    def bind_args(self, args: Sequence) -> tuple[Callable, tuple]:
        """(function, arguments) for ``function(*arguments)``: everything checked and built
        once; the function raises KernelError when the kernel fails."""
        made = [make_tensor(a, self.name, k) for k, a in enumerate(args)]
        n = len(made)
        values = (ctypes.c_uint64 * max(n, 1))(*[ctypes.addressof(t) for t, _ in made])
        codes = (ctypes.c_int * max(n, 1))(*[DL_TENSOR_HANDLE] * n)
        ret, ret_code = (ctypes.c_uint64 * 1)(), (ctypes.c_int * 1)()
        fn = _CALL(self.address)
        fn.errcheck = _Check(self.lib, self.name, made)
        return fn, (values, codes, n, ret, ret_code, None)

    def __call__(self, *args) -> None:
        fn, call_args = self.bind_args(args)
        fn(*call_args)


def native_nop() -> int | None:
    """Address of ``xor eax, eax; ret``: a no-op kernel with the legacy ABI, to measure what a
    call through ctypes costs by itself (None where the OS refuses executable memory)."""
    global _NOP
    if _NOP is None:
        try:
            page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE
                             | mmap.PROT_EXEC)
        except (OSError, ValueError):
            return None
        page.write(b"\x31\xc0\xc3")
        _NOP = (page, ctypes.addressof(ctypes.c_char.from_buffer(page)))
    return _NOP[1]


_NOP: tuple[mmap.mmap, int] | None = None


def nop_twin(call: tuple[Callable, tuple]) -> tuple[Callable, tuple] | None:
    """The same prebuilt call (same arguments, same error check) into a no-op kernel."""
    fn, args = call
    address = native_nop()
    if address is None or not isinstance(getattr(fn, "errcheck", None), _Check):
        return None
    twin = _CALL(address)
    twin.errcheck = fn.errcheck
    return twin, args


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
