"""The compilation target: the host CPU by default, as LLVM names it, and what the schedules
need to know about it (vector width and register count), read from the target's features."""
from __future__ import annotations

from dataclasses import dataclass

import tvm
from tvm.target import codegen

from ..artifacts.dlpack import DLTYPE_BITS
from ..errors import InputError


def make_target(mcpu: str | None = None):
    """``tvm.target.Target({"kind": "llvm", "mcpu": ...})``; TVM 0.27 targets are dicts."""
    cpu = mcpu or codegen.llvm_get_system_cpu()
    if not codegen.llvm_is_valid_cpu(cpu, codegen.llvm_get_system_triple()):
        raise InputError(f"unknown target CPU '{cpu}' for LLVM "
                         f"(this machine is '{codegen.llvm_get_system_cpu()}')")
    return tvm.target.Target({"kind": "llvm", "mcpu": cpu})


def is_host(target) -> bool:
    """The target is this machine's CPU (what can be measured here is what it will run on)."""
    return str(target.attrs.get("mcpu", "")) == codegen.llvm_get_system_cpu()


@dataclass(frozen=True)
class VectorUnit:
    """What a register tile may use: ``bits`` per vector register, ``registers`` of them."""

    bits: int
    registers: int
    isa: str  # "avx512", "avx2", "sse", "neon", ... (for build.json and schedule notes)

    def lanes(self, dtype: str) -> int:
        """Elements per register (artifacts/dlpack.py's bits per element; a dtype outside
        that table is tiled as a 32-bit one: a schedule's choice, not a reported figure)."""
        return max(4, self.bits // DLTYPE_BITS.get(dtype, 32))


def vector_unit(target) -> VectorUnit:
    """From ``llvm_get_cpu_features`` (the target's, not the host's: ``-mcpu=znver3`` built on an
    AVX-512 machine gets AVX2 tiles). ``llvm_get_vector_width`` alone is not enough in TVM 0.27:
    it reports the host's width for a foreign mcpu."""
    feats = {str(f) for f in codegen.llvm_get_cpu_features(target)}
    if "avx512f" in feats:
        unit = VectorUnit(512, 32, "avx512")
    elif "avx2" in feats or "avx" in feats:
        unit = VectorUnit(256, 16, "avx2" if "avx2" in feats else "avx")
    elif "neon" in feats or "sve" in feats:
        unit = VectorUnit(128, 32, "neon")
    else:
        unit = VectorUnit(128, 16, "sse")
    width = int(codegen.llvm_get_vector_width(target) or unit.bits)
    return unit if width >= unit.bits else VectorUnit(width, unit.registers, unit.isa)


def vector_lanes(target, dtype: str) -> int:
    """Elements per vector register for dtype on this target (16 float32 lanes on AVX-512)."""
    return vector_unit(target).lanes(dtype)
