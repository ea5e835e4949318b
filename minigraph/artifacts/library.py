"""What a TVM library is, read from the file before any dlopen: the one classifier.

``classify(path)`` reads the file once (ELF image, embedded module tree) and returns the
``LibraryFacts`` every later stage takes: the doors (which one opens it), the kernel loader
(vetting before dlopen), ``env``/``explain`` (what to say of it). Nothing else decides what a
library is. The ABIs:

- ``tvm-ffi``: TVM >= 0.21 kernels exported as ``__tvm_ffi_<name>`` (``minigraph build``);
- ``relax-vm``: the same, plus a Relax VM executable in ``__tvm_ffi__library_bin``
  (``tvm.compile(...).export_library``);
- ``legacy-a`` / ``legacy-b``: TVM <= 0.20's packed C ABI, below;
- ``none``: a shared object that is no TVM library at all.

TVM <= 0.20 compiled kernels to the old packed C ABI, ``int f(TVMValue* args, int* type_codes,
int num_args, TVMValue* ret, int* ret_tcode, void* resource_handle)``, and reached the runtime
in one of two ways (src/target/llvm/codegen_cpu.cc, ``InitGlobalContext``):

- variant A (the default): the library defines weak pointer variables ``__TVMAPISetLastError``,
  ``__TVMBackendParallelLaunch``, ``__TVMBackendAllocWorkspace``, ... and the loader fills them
  in (``InitContextFunctions`` in src/runtime/library_module.cc);
- variant B (``--system-lib``): the library imports ``TVMBackend*`` and ``TVMAPISetLastError``
  and registers its symbols from a constructor, ``__tvm_module_startup``, which calls
  ``TVMBackendRegisterSystemLibSymbol`` (src/runtime/system_library.cc).

Kernels that call packed functions through the runtime (``TVMBackendGetFuncFromEnv`` /
``TVMFuncCall``) are listed with the function names the library holds (``.tvm_func.<name>``
handles, or ``tvm.*`` strings): the runtime side serves those TVM 0.27 still registers (CPU NMS
sorts) and refuses the others (extern BLAS). Libraries whose ``__tvm_dev_mblob`` carries device
or metadata modules cannot be served without the old runtime: they are listed as unsupported,
with what is inside. A Relay graph factory in the blob (graph.json and params
embedded by ``export_library``) is supported: it is returned for the legacy door to use.
"""
from __future__ import annotations

import os
import re
import struct
import tarfile
from dataclasses import dataclass, field, replace
from enum import Enum

from ..errors import InputError, last_line
from ..fileio import BoundedFile
from . import elf
from .library_bin import VM_KIND, LibraryBin, library_bin_of
from .modblob import FACTORIES, Factory, parse_blob

SERVED = ("TVMAPISetLastError", "TVMBackendAllocWorkspace", "TVMBackendFreeWorkspace",
          "TVMBackendParallelLaunch", "TVMBackendParallelBarrier")
CALLBACKS = ("TVMBackendGetFuncFromEnv", "TVMFuncCall")  # need the old runtime's modules
REGISTER = "TVMBackendRegisterSystemLibSymbol"
POINTERS = tuple("__" + n for n in SERVED + CALLBACKS)
MODULE_CTX, MAIN, DEV_MBLOB = "__tvm_module_ctx", "__tvm_main__", "__tvm_dev_mblob"
FFI_PREFIX, VM_MARK = "__tvm_ffi_", "__tvm_ffi__library_bin"
_NOT_KERNELS = frozenset({"_init", "_fini", "TVMSystemLibEntryPoint", "main"})
_ARITY = re.compile(rb"([A-Za-z_][A-Za-z0-9_.]*): num_args should be (\d{1,4})\x00")
_PACKED_NAME = re.compile(rb"(?<=\x00)(tvm\.[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)+)\x00")
_ERAS = (("tvmgen_", "Relay-era TVM (0.8 to 0.20)"), ("fused_", "Relay-era TVM (0.6 to 0.7)"),
         ("fuse_", "NNVM-era TVM (0.4 to 0.6)"))


class Abi(str, Enum):
    """How a library's kernels are called, decided once from its file (``classify``); a str
    (the value is what files and reports say) so saved documents read it back as text."""

    TVM_FFI = "tvm-ffi"      # TVM >= 0.21: __tvm_ffi_* kernels
    RELAX_VM = "relax-vm"    # the same, inside a Relax VM executable
    LEGACY_A = "legacy-a"    # old packed C ABI, weak context pointers the loader fills in
    LEGACY_B = "legacy-b"    # old packed C ABI, imported TVMBackend* functions
    NONE = "none"            # not a TVM kernel library

    def __str__(self) -> str:
        return self.value

    @property
    def legacy(self) -> bool:
        return self in (Abi.LEGACY_A, Abi.LEGACY_B)

    @property
    def ffi(self) -> bool:
        """Kernels TVM 0.27 loads itself (the TVM-FFI ABI, alone or in an executable)."""
        return self in (Abi.TVM_FFI, Abi.RELAX_VM)


@dataclass(frozen=True)
class LibraryFacts:
    """One library as read from its file (no code loaded)."""

    path: str
    abi: Abi
    era: str
    kernels: tuple[str, ...]
    arity: tuple[tuple[str, int], ...]   # kernel -> num_args its own check demands
    uses: tuple[str, ...]            # runtime functions the kernels call (TVM 0.27 serves them)
    packed: tuple[str, ...]          # packed functions they ask the runtime for, where named
    unsupported: tuple[str, ...]     # what minigraph cannot serve, said plainly
    modules: tuple[str, ...]         # type keys in __tvm_dev_mblob
    factory: Factory | None          # graph.json + params embedded by Relay's export_library
    # some kernel launches parallel work on TVM's thread pool: the library holds the
    # __TVMBackendParallelLaunch pointer (TVM's codegen emits it only for a kernel that calls
    # it) or imports TVMBackendParallelLaunch; False: every kernel is a serial loop
    parallel: bool = False
    # what was read to decide, kept so that no later stage reads the file again
    image: elf.Image | None = field(default=None, compare=False, repr=False)
    library_bin: LibraryBin | None = field(default=None, compare=False, repr=False)

    @property
    def legacy(self) -> bool:
        return self.abi.legacy

    @property
    def variant(self) -> str:
        return {Abi.LEGACY_A: "old packed C ABI, variant A: weak context pointers "
                            "(__TVMBackend*) that the loader fills in",
                Abi.LEGACY_B: "old packed C ABI, variant B: imports TVMBackend* and "
                            "TVMAPISetLastError (a system-lib build registers its kernels from a "
                            "constructor, TVMBackendRegisterSystemLibSymbol)",
                Abi.TVM_FFI: "TVM-FFI (__tvm_ffi_* kernels)",
                Abi.RELAX_VM: "TVM-FFI Relax VM executable"}.get(self.abi, "none")


def _kernels(image: elf.Image) -> tuple[str, ...]:
    return tuple(sorted(s.name for s in image.symbols
                        if s.defined and s.kind == "STT_FUNC" and s.name
                        and not s.name.startswith("__") and s.name not in _NOT_KERNELS))


def _abi(image: elf.Image, lib_bin: LibraryBin | None) -> Abi:
    exported, imported = image.exported(), image.imported()
    if lib_bin is not None and any(kind == VM_KIND for kind, _ in lib_bin.modules):
        return Abi.RELAX_VM
    if any(s.startswith(FFI_PREFIX) for s in exported):
        return Abi.TVM_FFI
    if exported & set(POINTERS + (MODULE_CTX, MAIN)):
        return Abi.LEGACY_A
    if REGISTER in imported or imported & set(SERVED + CALLBACKS):
        return Abi.LEGACY_B
    return Abi.NONE


def _era(abi: Abi, kernels: tuple[str, ...], modules: tuple[str, ...]) -> str:
    if abi.ffi:
        return "TVM >= 0.21 (TVM-FFI)"
    if abi is Abi.NONE:
        return "not a TVM kernel library"
    if "GraphRuntimeFactory" in modules:
        return "Relay-era TVM 0.7 (graph runtime factory)"
    if "GraphExecutorFactory" in modules:
        return "Relay-era TVM (0.8 to 0.20, graph executor factory)"
    for prefix, era in _ERAS:
        if any(k.startswith(prefix) for k in kernels):
            return f"{era}, by its kernel names ({prefix}*)"
    return "TVM <= 0.20 (old packed C ABI)"


def _rodata(image: elf.Image) -> list[bytes]:
    return [b"\x00" + elf.read_at(image, sec.addr, sec.size) for sec in image.sections
            if sec.name.startswith(".rodata") and sec.type != "SHT_NOBITS"]


def _arity(image: elf.Image) -> tuple[tuple[str, int], ...]:
    """``"<kernel>: num_args should be N"``: the assert text MakePackedAPI compiles into every
    kernel (src/tir/transforms/make_packed_api.cc), so argument counts are known up front."""
    found: dict[str, int] = {}
    for data in _rodata(image):
        for m in _ARITY.finditer(data):
            found.setdefault(m[1].decode(), int(m[2]))
    return tuple(sorted(found.items()))


def _uses(image: elf.Image, abi: Abi) -> tuple[set[str], tuple[str, ...]]:
    """(runtime functions the kernels call, packed functions they name) from relocations (A:
    code loads the pointer variable through the GOT) or imports (B)."""
    if abi is Abi.LEGACY_B:
        called = image.imported() & set(SERVED + CALLBACKS + (REGISTER,))
    else:
        called = {r.symbol.removeprefix("__")
                  for r in elf.relocations(image, POINTERS + (MODULE_CTX,))}
    names: set[str] = set()
    if called & set(CALLBACKS):
        names = {n.removeprefix(".tvm_func.") for n in image.local_names
                 if n.startswith(".tvm_func.")}
        names |= {m[1].decode() for data in _rodata(image) for m in _PACKED_NAME.finditer(data)}
    return called - {MODULE_CTX.removeprefix("__")}, tuple(sorted(names))


def _blob(image: elf.Image) -> tuple[tuple[str, ...], Factory | None, list[str]]:
    sym = image.symbol(DEV_MBLOB)
    if sym is None:
        return (), None, []
    try:
        blob = parse_blob(elf.read_at(image, sym.value, max(sym.size, 8) if sym.size else 1 << 30))
    except (ValueError, UnicodeDecodeError) as err:
        return (), None, [f"it carries a module blob ({DEV_MBLOB}) that cannot be read ({err})"]
    device = [k for k in blob.modules if k not in ("_lib", "_import_tree") + FACTORIES]
    problems = [f"it carries {', '.join(device)} module(s) in {DEV_MBLOB} (device code or "
                "metadata that only the TVM that built it can load)"] if device else []
    return blob.modules, blob.factory, problems


def classify(path: str | os.PathLike) -> LibraryFacts:
    """What the library at ``path`` is, read once; InputError if it is not a loadable shared
    object for this machine (elf.read_image's checks), or if its tables are corrupt."""
    image = elf.read_image(path)
    try:
        lib_bin = library_bin_of(image) if VM_MARK in image.exported() else None
        abi = _abi(image, lib_bin)
        if abi.legacy:
            image = replace(image, local_names=elf.local_names(image))
        return replace(_facts(image, abi), image=image, library_bin=lib_bin)
    except (ValueError, OSError, IndexError, KeyError, struct.error) as err:
        raise InputError(f"{image.path}: corrupt ELF file ({last_line(err)}); rebuild or "
                         "re-copy it") from None


def _facts(image: elf.Image, abi: str) -> LibraryFacts:
    kernels = _kernels(image) if abi.legacy else \
        tuple(sorted(s[len(FFI_PREFIX):] for s in image.exported() if s.startswith(FFI_PREFIX)))
    uses: set[str] = set()
    packed: tuple[str, ...] = ()
    problems: list[str] = []
    modules, factory = (), None
    if abi.legacy:
        uses, packed = _uses(image, abi)
        modules, factory, problems = _blob(image)
    arity = _arity(image) if abi.legacy else ()
    launch = SERVED[3]
    parallel = image.symbol("__" + launch) is not None or launch in image.imported()
    return LibraryFacts(image.path, abi, _era(abi, kernels, modules), kernels, arity,
                        tuple(sorted(uses)), packed, tuple(problems), modules, factory,
                        parallel)


_MAGICS = (b"\x7fELF", b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe", b"\xca\xfe\xba\xbe")


def _head(path: str | os.PathLike, n: int) -> bytes:
    """The first ``n`` bytes, b"" if unreadable; a FIFO nobody writes to is unreadable here
    (an open() would wait for a writer forever), and is refused later as no library."""
    try:
        with BoundedFile(path, "file") as f:
            return f.read_upto(n)
    except InputError:
        return b""


def is_export(path: str | os.PathLike) -> bool:
    """A TVM ``export_library`` of object files: a .tar of them, or one relocatable ELF object
    (e_type 1), to be linked into a shared library (runtime/link.py) before ``classify``."""
    head = _head(path, 64)
    if head[:4] == b"\x7fELF":
        return len(head) >= 18 and head[16] == 1 and head[17] == 0
    return os.path.isfile(path) and tarfile.is_tarfile(path)


def is_binary(path: str | os.PathLike) -> bool:
    """Whether ``path`` names a binary (ELF, Mach-O, PE) rather than, e.g., a graph.json: which
    of the two a command was given (``classify`` then says what binary it is)."""
    head = _head(path, 4)
    return head in _MAGICS or head[:2] == b"MZ"
