"""The module tree TVM-FFI embeds in an exported library, read from the file without dlopen.

``Executable.export_library`` links a ``__tvm_ffi__library_bin`` symbol into the .so holding every
module that is not native code: for ``tvm.compile`` output, the Relax VM executable
(``relax.VMExecutable``: bytecode, constants, function table) whose import is the kernel library
(``_lib``). Reading it here, bounds-checked, tells a Relax VM executable from a graph-executor
model.so by its contents (never by its name) and gives runtime/relax_vm/bytecode.py the executable's
bytes before any native code runs.

Layout (tvm-ffi ``ProcessLibraryBin``, src/ffi/extra/library_module.cc)::

    <nbytes: u64> <indptr: vec<u64>> <child_indices: vec<u64>>
    per module: <kind: str> [<bytes: str> unless kind == "_lib"]

where ``vec`` and ``str`` are a u64 count then the items (dmlc/TVM serializer).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from ..errors import InputError
from . import elf
from .stream import Reader

SYMBOL = "__tvm_ffi__library_bin"
VM_KIND = "relax.VMExecutable"
_MAX_MODULES = 1 << 12  # a library holds a handful of modules; more is corruption


@dataclass(frozen=True)
class LibraryBin:
    """The embedded modules in tree order: (kind, serialized bytes; None for ``_lib``)."""

    modules: tuple[tuple[str, bytes | None], ...]
    imports: tuple[tuple[int, ...], ...]  # per module, the indices of the modules it imports

    def find(self, kind: str) -> bytes | None:
        return next((blob for k, blob in self.modules if k == kind and blob is not None), None)


def parse_library_bin(raw: bytes | memoryview, what: str = "library_bin") -> LibraryBin:
    """The blob behind ``__tvm_ffi__library_bin`` -> its modules (``ValueError`` if corrupt)."""
    head = Reader(raw, what, ValueError)
    s = Reader(head.take(head.u64("size"), "the module tree"), what, ValueError)
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


def library_bin_of(image: elf.Image) -> LibraryBin | None:
    """The embedded module tree of a vetted library (None: it embeds none, e.g. a kernel-only
    model.so); InputError, one line naming the file, when its blob is corrupt."""
    sym = image.symbol(SYMBOL)
    if sym is None:
        return None
    try:
        head = elf.read_at(image, sym.value, 8)
        if len(head) < 8:
            raise ValueError(f"{SYMBOL} is truncated")
        # read_at stops at the end of the symbol's section: a lying length cannot over-read
        raw = elf.read_at(image, sym.value, struct.unpack("<Q", head)[0] + 8)
        return parse_library_bin(raw, SYMBOL)
    except OSError as err:
        raise InputError(f"{image.path}: cannot read library: {err.strerror or err}") from None
    except (struct.error, ValueError, IndexError) as err:
        raise InputError(f"{image.path}: corrupt library ({err}); rebuild or re-copy it") \
            from None
