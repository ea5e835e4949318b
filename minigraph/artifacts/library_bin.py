"""The module tree TVM-FFI embeds in an exported library, read from the file without dlopen.

``Executable.export_library`` links a ``__tvm_ffi__library_bin`` symbol into the .so holding every
module that is not native code: for ``tvm.compile`` output, the Relax VM executable
(``relax.VMExecutable``: bytecode, constants, function table) whose import is the kernel library
(``_lib``). Reading it here, bounds-checked, tells a Relax VM executable from a graph-executor
model.so by its contents (never by its name) and gives runtime/vm_bytecode.py the executable's
bytes before any native code runs.

Layout (tvm-ffi ``ProcessLibraryBin``, src/ffi/extra/library_module.cc)::

    <nbytes: u64> <indptr: vec<u64>> <child_indices: vec<u64>>
    per module: <kind: str> [<bytes: str> unless kind == "_lib"]

where ``vec`` and ``str`` are a u64 count then the items (dmlc/TVM serializer).
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass

from ..errors import InputError
from . import elf

SYMBOL = "__tvm_ffi__library_bin"
VM_KIND = "relax.VMExecutable"
_SHDR = struct.Struct("<IIQQQQIIQQ")  # sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, ..
_SYM = struct.Struct("<IBBHQQ")      # st_name, st_info, st_other, st_shndx, st_value, st_size
_SHT_NOBITS, _SHT_DYNSYM = 8, 11
_MAX_MODULES = 1 << 12  # a library holds a handful of modules; more is corruption


@dataclass(frozen=True)
class LibraryBin:
    """The embedded modules in tree order: (kind, serialized bytes; None for ``_lib``)."""

    modules: tuple[tuple[str, bytes | None], ...]
    imports: tuple[tuple[int, ...], ...]  # per module, the indices of the modules it imports

    def find(self, kind: str) -> bytes | None:
        return next((blob for k, blob in self.modules if k == kind and blob is not None), None)


class _Stream:
    """Bounds-checked little-endian reads; ``ValueError`` names what ran past the end."""

    def __init__(self, data: bytes | memoryview, what: str) -> None:
        self.data, self.pos, self.what = memoryview(data), 0, what

    def take(self, n: int, field: str) -> memoryview:
        if n < 0 or n > len(self.data) - self.pos:
            raise ValueError(f"{self.what} is truncated reading {field} at byte {self.pos}")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str, field: str) -> tuple:
        return struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt), field))

    def u64(self, field: str) -> int:
        return self.unpack("Q", field)[0]

    def bytes_(self, field: str) -> bytes:
        return bytes(self.take(self.u64(f"length of {field}"), field))

    def str_(self, field: str) -> str:
        return self.bytes_(field).decode("utf-8", "replace")

    def u64s(self, field: str, limit: int) -> tuple[int, ...]:
        n = self.u64(f"size of {field}")
        if n > limit:
            raise ValueError(f"{self.what} claims {n} items in {field}")
        return struct.unpack(f"<{n}Q", self.take(8 * n, field))


def _symbol_span(data, name: str) -> tuple[int, int] | None:
    """(file offset of a .dynsym symbol, end of the section holding it), or None."""
    h = struct.unpack_from("<HHIQQQIHHHHHH", data, 16)
    shoff, shentsize, shnum = h[5], h[10], h[11]
    secs = [_SHDR.unpack_from(data, shoff + i * shentsize) for i in range(shnum)]
    key = name.encode()
    for _n, typ, _f, _a, off, size, link, _i, _al, ent in secs:
        if typ != _SHT_DYNSYM or link >= len(secs) or (ent or _SYM.size) < _SYM.size:
            continue
        stroff, strsize = secs[link][4], secs[link][5]
        for pos in range(off, off + size - _SYM.size + 1, ent or _SYM.size):
            st_name, _info, _other, shndx, value, _sz = _SYM.unpack_from(data, pos)
            start = stroff + st_name
            if shndx == 0 or shndx >= len(secs) or st_name >= strsize or \
                    bytes(data[start:start + len(key) + 1]) != key + b"\0":
                continue
            _n2, styp, _f2, addr, soff, ssize, *_ = secs[shndx]
            if styp == _SHT_NOBITS or not addr <= value < addr + ssize or soff + ssize > len(data):
                raise ValueError(f"symbol {name} lies outside its section")
            return soff + value - addr, soff + ssize
    return None


def parse_library_bin(raw: bytes | memoryview, what: str = "library_bin") -> LibraryBin:
    """The blob behind ``__tvm_ffi__library_bin`` -> its modules (``ValueError`` if corrupt)."""
    head = _Stream(raw, what)
    s = _Stream(head.take(head.u64("size"), "the module tree"), what)
    indptr = s.u64s("import tree indptr", _MAX_MODULES + 1)
    children = s.u64s("import tree children", _MAX_MODULES)
    n = len(indptr) - 1
    if n < 1 or indptr[0] != 0 or list(indptr) != sorted(indptr) or indptr[-1] != len(children) \
            or any(c >= n for c in children):
        raise ValueError(f"{what} has an inconsistent import tree")
    modules = []
    for i in range(n):
        kind = s.str_(f"kind of module {i}")
        modules.append((kind, None if kind == "_lib" else s.bytes_(f"module {i} ({kind})")))
    imports = tuple(tuple(children[indptr[i]:indptr[i + 1]]) for i in range(n))
    return LibraryBin(tuple(modules), imports)


def read_library_bin(path: str | os.PathLike) -> LibraryBin | None:
    """The embedded module tree of a library (None: it embeds none, e.g. a kernel-only model.so).

    InputError for a file that is not this machine's complete shared object, or whose blob is
    corrupt: one line naming the file."""
    p = os.fspath(path)
    try:
        with elf.mapped(p) as data:
            elf.check_shared_object(data, p)
            span = _symbol_span(data, SYMBOL)
            if span is None:
                return None
            start, end = span
            if end - start < 8:
                raise ValueError(f"{SYMBOL} is truncated")
            # copied out (the mapping closes on return); the size bounds the copy
            nbytes = min(struct.unpack_from("<Q", data, start)[0] + 8, end - start)
            raw = bytes(data[start:start + nbytes])
        return parse_library_bin(raw, SYMBOL)
    except OSError as err:
        raise InputError(f"{p}: cannot read library: {err.strerror or err}") from None
    except (struct.error, ValueError, IndexError) as err:
        raise InputError(f"{p}: corrupt library ({err}); rebuild or re-copy it") from None
