"""The LLVM target features a library was compiled with, against the ones this CPU has.

A kernel compiled for a CPU with instructions this one lacks dies of SIGILL mid-run. The build
records every LLVM target feature its target enabled (build.json ``cpu_features``, from
``tvm.target.codegen.llvm_get_cpu_features``, which is LLVM's ``MCSubtargetInfo`` feature set
for the target's -mcpu and -mattr); before dlopen each one that is an instruction-set feature
is looked up on this machine: in /proc/cpuinfo's flags for the SIMD and bit-manipulation
extensions the kernel names there, else in LLVM's feature set of this CPU
(``llvm_get_system_cpu``). LLVM's tuning "features" (X86.td's ``Tuning*``: fast-gather,
prefer-256-bit, false-deps-*, ...) change no instruction and are never compared.
Counterpart: none in TVM (``runtime.load_module`` dlopens whatever it is given).
"""
from __future__ import annotations

import functools
from collections.abc import Iterable

# lazy: TVM (~1.2 s to import) is imported where it is called; TVM-free commands load this module

# LLVM feature -> /proc/cpuinfo flag, for the x86 extensions kernels use (vector and bit
# manipulation); the flags say what this machine (or its hypervisor) really enables
X86_CPUINFO = {"sse3": "pni", "ssse3": "ssse3", "sse4.1": "sse4_1", "sse4.2": "sse4_2",
               "sse4a": "sse4a", "avx": "avx", "avx2": "avx2", "fma": "fma", "f16c": "f16c",
               "bmi": "bmi1", "bmi2": "bmi2", "lzcnt": "abm", "popcnt": "popcnt",
               "movbe": "movbe", "adx": "adx", "aes": "aes", "pclmul": "pclmulqdq",
               "vpclmulqdq": "vpclmulqdq", "vaes": "vaes", "gfni": "gfni", "sha": "sha_ni",
               "avx512f": "avx512f", "avx512dq": "avx512dq", "avx512cd": "avx512cd",
               "avx512bw": "avx512bw", "avx512vl": "avx512vl", "avx512ifma": "avx512ifma",
               "avx512vbmi": "avx512vbmi", "avx512vbmi2": "avx512_vbmi2",
               "avx512vnni": "avx512_vnni", "avx512bf16": "avx512_bf16",
               "avx512bitalg": "avx512_bitalg", "avx512vpopcntdq": "avx512_vpopcntdq",
               "avx512vp2intersect": "avx512_vp2intersect", "avx512fp16": "avx512_fp16",
               "avxvnni": "avx_vnni", "amx-tile": "amx_tile", "amx-int8": "amx_int8",
               "amx-bf16": "amx_bf16"}

# LLVM x86 features that tune code generation only (X86.td's Tuning* definitions)
_TUNING_PREFIXES = ("fast-", "slow-", "false-deps-", "no-bypass-delay", "prefer-", "tuning-",
                    "faster-", "allow-light-", "idivl-", "idivq-", "lea-", "pad-short-",
                    "use-", "sbb-dep-", "avoid-", "harden-", "retpoline", "lvi-", "seses",
                    "inline-asm-")
_TUNING = frozenset({"branchfusion", "macrofusion", "vzeroupper", "ermsb", "fsrm",
                     "16bit-mode", "32bit-mode", "64bit-mode"})


def is_isa(feature: str) -> bool:
    """Whether an LLVM x86 feature names instructions (not a tuning choice)."""
    return feature not in _TUNING and not feature.startswith(_TUNING_PREFIXES)


def target_features(target) -> list[str]:
    """Every LLVM target feature ``target`` (a ``tvm.target.Target``) enables, sorted: what
    build.json records as ``cpu_features``."""
    from tvm.target import codegen
    return sorted(str(f) for f in codegen.llvm_get_cpu_features(target))


def _cpuinfo_flags() -> frozenset[str] | None:
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.partition(":")[2].split())
    except OSError:
        pass
    return None


@functools.lru_cache(maxsize=1)
def host_cpu() -> tuple[str, frozenset[str], frozenset[str] | None]:
    """This machine: (LLVM's name of its CPU, LLVM's features of that CPU, /proc/cpuinfo's
    flags or None)."""
    from tvm.target import Target, codegen
    name = str(codegen.llvm_get_system_cpu())
    return name, frozenset(target_features(Target({"kind": "llvm", "mcpu": name}))), \
        _cpuinfo_flags()


def _x86(features: Iterable[str]) -> bool:
    return not {"x87", "sse2"}.isdisjoint(features)


def missing_features(wanted: Iterable[str],
                     host: tuple[str, frozenset[str], frozenset[str] | None] | None = None
                     ) -> list[str]:
    """The instruction-set features of ``wanted`` this CPU lacks, sorted (``host``: as
    ``host_cpu`` gives it; tests pass another machine's). [] unless both are x86: elsewhere
    LLVM's feature names mix tuning with instructions, and dlopen decides."""
    _, features, flags = host or host_cpu()
    wanted = set(wanted)
    if not (_x86(wanted) and _x86(features)):
        return []

    def has(feature: str) -> bool:
        if flags is not None and feature in X86_CPUINFO:
            return X86_CPUINFO[feature] in flags
        return feature in features
    return sorted(f for f in wanted if is_isa(f) and not has(f))
