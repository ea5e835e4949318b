"""The compilation target: the host CPU by default, as LLVM names it."""
from __future__ import annotations

from ..errors import InputError


def make_target(mcpu: str | None = None):
    """``tvm.target.Target({"kind": "llvm", "mcpu": ...})``; TVM 0.27 targets are dicts."""
    import tvm
    from tvm.target import codegen
    cpu = mcpu or codegen.llvm_get_system_cpu()
    if not codegen.llvm_is_valid_cpu(cpu, codegen.llvm_get_system_triple()):
        raise InputError(f"unknown target CPU '{cpu}' for LLVM "
                         f"(this machine is '{codegen.llvm_get_system_cpu()}')")
    return tvm.target.Target({"kind": "llvm", "mcpu": cpu})


def vector_lanes(target, dtype: str) -> int:
    """Elements per vector register for dtype on this target (16 float32 lanes on AVX-512)."""
    from tvm.target import codegen
    bits = int(codegen.llvm_get_vector_width(target) or 128)
    elem = {"float16": 16, "bfloat16": 16, "float64": 64, "int8": 8, "uint8": 8}.get(dtype, 32)
    return max(4, bits // elem)
