"""model.so -> kernel table (mirrors GraphExecutor's ``module_.GetFunction(func_name)``).

Every func_name is resolved up front, so a missing kernel is reported before anything runs,
with the closest names the library really exports.
"""
from __future__ import annotations

import difflib
import os
import struct
from pathlib import Path
from typing import Callable, Iterable, Mapping

from .errors import InputError, KernelError

_EXPORT_PREFIX = "__tvm_ffi_"  # TVM-FFI exports each kernel as __tvm_ffi_<name>
KernelTable = Mapping[str, Callable]


def load_library(path: str | os.PathLike):
    """Loads a TVM shared library; a missing, foreign or broken file is an InputError."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such library (build one with `python -m minigraph build`)")
    with p.open("rb") as f:
        if f.read(4) != b"\x7fELF":
            raise InputError(f"{p}: not a shared library (no ELF header)")
    import tvm
    try:
        return tvm.runtime.load_module(str(p))
    except Exception as err:  # TVM raises its own error types for dlopen failures
        first = str(err).strip().splitlines()[-1] if str(err).strip() else type(err).__name__
        raise InputError(f"{p}: TVM cannot load this library ({first}); it may have been built "
                         "for another TVM version or machine") from err


def exported_names(path: str | os.PathLike) -> tuple[str, ...]:
    """Kernel names exported by a TVM library, read from the ELF dynamic symbol table."""
    try:
        data = Path(path).read_bytes()
        return tuple(sorted(s[len(_EXPORT_PREFIX):] for s in _elf_dynsyms(data)
                            if s.startswith(_EXPORT_PREFIX)))
    except (OSError, struct.error, IndexError, ValueError):
        return ()


def _elf_dynsyms(data: bytes) -> Iterable[str]:
    """Names in .dynsym of a 64-bit little-endian ELF file (enough for suggestions)."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return ()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
                for i in range(shnum)]
    names = []
    for sec in sections:
        if sec[1] != 11:  # SHT_DYNSYM
            continue
        strtab = sections[sec[6]]
        for off in range(sec[4], sec[4] + sec[5], sec[9] or 24):
            name_off, = struct.unpack_from("<I", data, off)
            start = strtab[4] + name_off
            names.append(data[start:data.index(b"\0", start)].decode("ascii", "replace"))
    return names


def resolve(module, names: Iterable[str], library_path: str | os.PathLike | None = None
            ) -> dict[str, Callable]:
    """func_name -> packed function, for every name; KernelError lists the closest matches."""
    table: dict[str, Callable] = {}
    for name in dict.fromkeys(names):
        fn = module.get_function(name, query_imports=True) if _has(module, name) else None
        if fn is None:
            known = exported_names(library_path) if library_path else ()
            close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
            hint = f"; closest: {', '.join(close)}" if close else (
                f"; the library exports {len(known)} kernels" if known else "")
            raise KernelError(f"kernel '{name}' is not in {library_path or 'the library'}{hint} "
                              "(was graph.json built together with this model.so?)")
        table[name] = fn
    return table


def _has(module, name: str) -> bool:
    try:
        return bool(module.implements_function(name, query_imports=True))
    except TypeError:
        return bool(module.implements_function(name))
