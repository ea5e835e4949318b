"""Calling a legacy kernel from Python with as little in between as possible.

ctypes converts every argument on every call; six of them cost ~0.5 us on a loaded 2-vCPU VM,
more than many small kernels take. So each bound op gets a trampoline: 64 bytes of x86-64
code that load the op's prebuilt arguments (TVMValue array, type codes, count, return slots,
NULL resource handle) into the SysV argument registers and tail-jump to the kernel. Python
then calls a function of no arguments. The trampolines live in a memfd mapped twice, once
writable and once executable, so no page is ever both (and no page is made executable while
another thread may be running code from it). Where the OS refuses executable shared memory,
calls fall back to ctypes with the six arguments. ``native_nop`` is ``xor eax, eax; ret``
placed the same way: the no-op kernel the profiler times to measure what a call costs itself.
Trampolines are never freed (64 bytes per bound op).
"""
from __future__ import annotations

import ctypes
import os
import struct
import threading
from typing import Callable

CALL = ctypes.CFUNCTYPE(ctypes.c_int)   # no argtypes: arrays and ints pass through unconverted
_ENDBR64 = b"\xf3\x0f\x1e\xfa"          # a valid indirect-branch target under CET, else a nop
_ARENA_BYTES = 1 << 16
_PROT_READ, _PROT_WRITE, _PROT_EXEC, _MAP_SHARED = 1, 2, 4, 1
_MAP_FAILED = ctypes.c_void_p(-1).value


def trampoline_code(kernel: int, values: int, codes: int, n: int, ret: int, ret_code: int
                    ) -> bytes:
    """mov rdi, values; mov rsi, codes; mov edx, n; mov rcx, ret; mov r8, ret_code;
    xor r9d, r9d; mov rax, kernel; jmp rax (the stack is left as the caller set it up)."""
    q = struct.Struct("<Q").pack
    return (_ENDBR64 + b"\x48\xbf" + q(values) + b"\x48\xbe" + q(codes)
            + b"\xba" + struct.pack("<I", n) + b"\x48\xb9" + q(ret) + b"\x49\xb8" + q(ret_code)
            + b"\x45\x31\xc9" + b"\x48\xb8" + q(kernel) + b"\xff\xe0")


class _Arena:
    """Executable memory written through a second, writable mapping of the same memfd."""

    def __init__(self) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                              ctypes.c_int, ctypes.c_long)
        fd = os.memfd_create("minigraph-legacy-calls", os.MFD_CLOEXEC)
        try:
            os.ftruncate(fd, _ARENA_BYTES)
            self.rw = libc.mmap(None, _ARENA_BYTES, _PROT_READ | _PROT_WRITE, _MAP_SHARED, fd, 0)
            self.rx = libc.mmap(None, _ARENA_BYTES, _PROT_READ | _PROT_EXEC, _MAP_SHARED, fd, 0)
        finally:
            os.close(fd)  # the mappings keep the memory
        if _MAP_FAILED in (self.rw, self.rx) or None in (self.rw, self.rx):
            raise OSError(ctypes.get_errno(), "mmap of executable memory refused")
        self.used = 0

    def put(self, code: bytes) -> int | None:
        """Copies ``code`` in (16-byte aligned); its executable address, None when full."""
        at = -(-self.used // 16) * 16
        if at + len(code) > _ARENA_BYTES:
            return None
        ctypes.memmove(self.rw + at, code, len(code))
        self.used = at + len(code)
        return self.rx + at


_LOCK = threading.Lock()
_ARENAS: list[_Arena] = []
_UNAVAILABLE: list[str] = []  # why executable memory could not be had (then: plain ctypes)


def place(code: bytes) -> int | None:
    """Executable address of a copy of ``code``; None where the OS refuses (see _UNAVAILABLE)."""
    with _LOCK:
        if _UNAVAILABLE:
            return None
        if _ARENAS:
            at = _ARENAS[-1].put(code)
            if at is not None:
                return at
        try:
            _ARENAS.append(_Arena())
        except (OSError, AttributeError) as err:  # no memfd_create, or exec mappings refused
            _UNAVAILABLE.append(str(err))
            return None
        return _ARENAS[-1].put(code)


_NOP: list[int | None] = []


def native_nop() -> int | None:
    """Address of a no-op kernel with the legacy ABI (returns 0, touches nothing)."""
    if not _NOP:
        _NOP.append(place(_ENDBR64 + b"\x31\xc0\xc3"))
    return _NOP[0]


def prebuilt(kernel: int, values, codes, n: int, ret, ret_code,
             errcheck: Callable) -> tuple[Callable, tuple]:
    """(function, arguments) calling ``kernel`` on the prebuilt arrays: a trampoline of no
    arguments, or the kernel itself with six; ``errcheck`` sees every return value."""
    code = trampoline_code(kernel, ctypes.addressof(values), ctypes.addressof(codes), n,
                           ctypes.addressof(ret), ctypes.addressof(ret_code))
    address = place(code)
    if address is not None:
        fn = CALL(address)
        fn.errcheck = errcheck
        fn.code = code  # type: ignore[attr-defined]  # for nop_twin: the same arguments
        return _with_twin(fn, ())
    fn = CALL(kernel)
    fn.errcheck = errcheck
    return _with_twin(fn, (values, codes, n, ret, ret_code, None))


def _with_twin(fn: Callable, args: tuple) -> tuple[Callable, tuple]:
    """The call, its function offering ``nop_twin()``: what the profiler's no-op pass calls
    instead of the kernel (profile/steady.py ``nop_call``), through the same trampoline."""
    fn.nop_twin = lambda: nop_twin((fn, args))  # type: ignore[attr-defined]
    return fn, args


def nop_twin(call: tuple[Callable, tuple]) -> tuple[Callable, tuple] | None:
    """The same prebuilt call (same arguments and error check) into the no-op kernel; None
    for calls that are not prebuilt legacy calls."""
    fn, args = call
    errcheck, nop = getattr(fn, "errcheck", None), native_nop()
    if errcheck is None or nop is None or not isinstance(fn, CALL):
        return None
    code = getattr(fn, "code", None)
    if code is not None:  # same trampoline, the kernel's address swapped for the no-op's
        code = code[:-10] + struct.pack("<Q", nop) + code[-2:]
        address = place(code)
        if address is None:
            return None
        twin = CALL(address)
    else:
        twin = CALL(nop)
    twin.errcheck = errcheck
    return twin, args
