"""Each kernel's machine code in model.so: its size and a digest, so "same computation, other
code" can be seen.

graph.json's ``hash`` is the structural hash of the kernel before scheduling: two builds for
two CPUs (``--target``), or with two schedules, give a kernel the same hash and different
code. A TVM kernel ``X`` is the packed-function wrapper ``__tvm_ffi_X`` plus ``X_compute_``
and the parallel lambdas LLVM lays out after it without a symbol of their own; so each part is
read from its symbol's address up to the next function symbol's (the .symtab, which TVM leaves
in its libraries). The digest is of those bytes as built: a kernel whose code moved in a
relinked library (another kernel grew) has other rip-relative offsets and another digest with
the same size, so compare reads a size change as other code and a digest change alone as
"other code or only moved". Counterpart: none in TVM (its profiler names kernels, never code).
"""
from __future__ import annotations

import hashlib
import os

from ..errors import InputError

# lazy: pyelftools (~80 ms) is imported where a library file is parsed: show, compare and the CLI's
# start-up never parse one

PARTS = ("__tvm_ffi_{}", "{}_compute_")  # the symbols of kernel X whose code is read


def _functions(path: str) -> tuple[dict[str, int], list[int], object]:
    """(name -> address of every defined function symbol, sorted starts, .text section)."""
    from elftools.elf.elffile import ELFFile
    with open(path, "rb") as f:
        e = ELFFile(f)
        table = e.get_section_by_name(".symtab") or e.get_section_by_name(".dynsym")
        text = e.get_section_by_name(".text")
        if table is None or text is None:
            return {}, [], None
        funcs = {s.name: s["st_value"] for s in table.iter_symbols()
                 if s["st_info"]["type"] == "STT_FUNC" and s["st_shndx"] != "SHN_UNDEF"
                 and s.name}
        return funcs, sorted(set(funcs.values())), (text["sh_addr"], text["sh_offset"],
                                                     text["sh_size"])


def kernel_code(path: str | os.PathLike, kernels: list[str]) -> dict[str, dict]:
    """kernel name -> {"nbytes", "sha256"} of its code, for the kernels found in ``path``
    (none for a library without a symbol table); InputError when the file cannot be read."""
    p = os.fspath(path)
    try:
        funcs, starts, text = _functions(p)
        if text is None:
            return {}
        addr, offset, size = text
        with open(p, "rb") as f:
            f.seek(offset)
            code = f.read(size)
    except OSError as err:
        raise InputError(f"{p}: cannot read library: {err.strerror or err}") from None
    except Exception:  # noqa: BLE001 - pyelftools raises many types on corrupt tables
        return {}  # the library was vetted and loaded: a table it cannot read costs the digest
    ends = dict(zip(starts, starts[1:] + [addr + size]))
    out = {}
    for name in kernels:
        spans = [(funcs[s], ends[funcs[s]]) for s in (t.format(name) for t in PARTS)
                 if s in funcs and addr <= funcs[s] < addr + size]
        if spans:
            body = b"".join(code[lo - addr:hi - addr] for lo, hi in spans)
            out[name] = {"nbytes": len(body), "sha256": hashlib.sha256(body).hexdigest()}
    return out
