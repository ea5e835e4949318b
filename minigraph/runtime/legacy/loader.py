"""Loading a legacy (Relay/NNVM-era) model.so and wiring its runtime calls to TVM 0.27.

Mirrors ``CreateModuleFromLibrary`` + ``InitContextFunctions`` (src/runtime/library_module.cc,
TVM <= 0.20) without the old runtime:

- ``TVMBackendParallelLaunch``, ``TVMBackendParallelBarrier``, ``TVMBackendAllocWorkspace`` and
  ``TVMBackendFreeWorkspace`` come from TVM 0.27's own libtvm_runtime.so (same signatures), so
  the kernels' parallel loops run on TVM 0.27's thread pool;
- ``TVMAPISetLastError`` is a ctypes callback of ours (0.27 no longer exports it): it records
  the kernel's assert text, which comes back as the op's error;
- ``TVMBackendGetFuncFromEnv`` / ``TVMFuncCall`` are answered from TVM 0.27's global registry
  (packed.py: e.g. ``tvm.contrib.sort.argsort_nms``, which old CPU NMS calls); a library
  naming packed functions 0.27 lacks is refused up front.

Variant A libraries are opened with RTLD_DEEPBIND (their own ``__TVM*`` pointer variables win
over any other library's) and the pointers are filled in. Variant B (system-lib) libraries
import functions 0.27 lacks, so a plain dlopen fails: a patched copy is loaded instead, whose
imports are rebound to a harmless function of the library itself (``_fini``) so that the
constructor's ``TVMBackendRegisterSystemLibSymbol`` calls do nothing; the imports' GOT slots
are then filled in with the real functions. No C compiler is needed for either.
"""
from __future__ import annotations

import ctypes
import os
import struct
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from ...artifacts import elf
from ...artifacts.library import CALLBACKS, POINTERS, REGISTER, SERVED, LibraryFacts, classify
from ...errors import InputError, KernelError
from ...fileio import read_bounded
from .packed import FUNC_CALL, GET_FUNC, PackedBridge, missing

# lazy: TVM (~1.2 s to import) is imported where it is called; TVM-free commands load this module

RTLD_DEEPBIND = getattr(os, "RTLD_DEEPBIND", 0x8)
_FLAGS = os.RTLD_NOW | os.RTLD_LOCAL | RTLD_DEEPBIND
_SET_LAST_ERROR = ctypes.CFUNCTYPE(None, ctypes.c_char_p)
_RELOC_S, _RELOC_S_PLUS_A = (6, 7), (1,)  # GLOB_DAT, JUMP_SLOT: S; R_X86_64_64: S + A
_PAGE = os.sysconf("SC_PAGE_SIZE")
_LOCK = threading.Lock()       # the error list, written from any thread a kernel runs on
_LOAD_LOCK = threading.Lock()
_LOADED: dict[tuple, "LegacyLibrary"] = {}   # never unloaded: kernels and callbacks stay valid


@dataclass
class LegacyLibrary:
    """A loaded legacy library: kernel addresses and the callbacks it was given (kept alive
    here, and this object in ``_LOADED``, for as long as the process lives)."""

    facts: LibraryFacts
    handle: ctypes.CDLL
    errors: list[str] = field(default_factory=list)
    keep: list = field(default_factory=list)

    def address(self, name: str) -> int | None:
        try:
            return ctypes.cast(self.handle[name], ctypes.c_void_p).value
        except AttributeError:
            return None

    def take_error(self) -> str:
        """The last message a kernel set (and forget it), or '' if none."""
        with _LOCK:
            msg = self.errors[-1] if self.errors else ""
            self.errors.clear()
        return msg


def _tvm_runtime() -> dict[str, int]:
    """Addresses of the backend functions in TVM 0.27's libtvm_runtime (the instance the tvm
    package loaded, so the thread pool is the one minigraph configures)."""
    import tvm
    import tvm_ffi
    ffi = Path(tvm_ffi.__file__).parent / "lib" / "libtvm_ffi.so"
    ctypes.CDLL(str(ffi), mode=os.RTLD_GLOBAL)  # libtvm_runtime needs its symbols global
    rt = ctypes.CDLL(str(Path(tvm.__file__).parent / "lib" / "libtvm_runtime.so"),
                     mode=os.RTLD_GLOBAL)
    return {n: ctypes.cast(getattr(rt, n), ctypes.c_void_p).value
            for n in SERVED if n != "TVMAPISetLastError"}


def _callbacks(lib: LegacyLibrary) -> dict[str, int]:
    """TVMAPISetLastError, TVMBackendGetFuncFromEnv and TVMFuncCall, as C callbacks."""
    def set_last_error(msg: bytes | None) -> None:
        with _LOCK:
            lib.errors.append((msg or b"").decode("utf-8", "replace"))

    bridge = PackedBridge(set_last_error)
    made = {"TVMAPISetLastError": _SET_LAST_ERROR(set_last_error),
            "TVMBackendGetFuncFromEnv": GET_FUNC(bridge.get_func),
            "TVMFuncCall": FUNC_CALL(bridge.call)}
    lib.keep += [bridge, *made.values()]
    return {n: ctypes.cast(f, ctypes.c_void_p).value for n, f in made.items()}


def _fill_pointers(lib: LegacyLibrary, targets: dict[str, int]) -> None:
    """Variant A: ``InitContextFunctions``: each ``__TVM*`` variable the library defines."""
    for var in POINTERS:
        addr = lib.address(var)  # dlsym on the handle: this library's own definition
        if addr is not None:
            ctypes.c_void_p.from_address(addr).value = targets[var.removeprefix("__")]


def _placeholder(image: elf.Image) -> tuple[int, int]:
    """(address, section index) of a function of the library that does nothing: _fini (or
    _init), what the system-lib constructor's registration calls are rebound to."""
    for tag in ("DT_FINI", "DT_INIT"):
        addr = image.dyn(tag)
        sec = next((s for s in image.sections if s.addr <= (addr or -1) < s.addr + s.size
                    and s.type == "SHT_PROGBITS"), None)
        if addr and sec is not None:
            return addr, sec.index
    raise InputError(f"{image.path}: a system-lib build (variant B) without _fini or _init, "
                     "so its constructor cannot be neutralised; relink its objects with "
                     "`cc -shared` after removing __tvm_module_startup, or rebuild it without "
                     "--system-lib")


def _patched_copy(image: elf.Image, names: frozenset[str]) -> bytes:
    """The file with each imported TVM function rebound to the library's own placeholder:
    defined, hidden (so the loader binds it locally, without looking it up)."""
    data = bytearray(read_bounded(image.path, elf.MAX_LIBRARY_BYTES, "library",
                                  "a model library may be"))
    dynsym = image.section(".dynsym")
    addr, shndx = _placeholder(image)
    for sym in image.symbols:
        if sym.name in names and not sym.defined:
            at = dynsym.offset + sym.index * 24  # Elf64_Sym: name, info, other, shndx, value
            struct.pack_into("<BBHQ", data, at + 4, 0x12, 0x2, shndx, addr)  # GLOBAL FUNC, HIDDEN
    return bytes(data)


def _base(lib: "LegacyLibrary", image: elf.Image) -> int:
    """The load bias: where dlsym finds an exported function, minus its address in the file."""
    for sym in image.symbols:
        if sym.defined and sym.kind == "STT_FUNC" and sym.value and sym.bind != "STB_LOCAL":
            found = lib.address(sym.name)
            if found is not None:
                return found - sym.value
    raise KernelError(f"{image.path}: exports no function, so its load address is unknown")


def _write_slots(image: elf.Image, base: int, targets: dict[str, int]) -> None:
    """Writes each import's resolved address into its GOT/PLT slots (RELRO pages are made
    writable for the moment it takes, then read-only again)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    for r in elf.relocations(image, targets):
        if r.type not in _RELOC_S + _RELOC_S_PLUS_A:
            raise InputError(f"{image.path}: relocation type {r.type} against {r.symbol} is not "
                             "one minigraph can fill in")
        slot = base + r.offset
        page = slot - slot % _PAGE
        in_relro = image.relro is not None and \
            image.relro[0] <= r.offset < image.relro[0] + image.relro[1]
        if not in_relro and not any(a <= r.offset < a + n for a, n in image.writable):
            raise InputError(f"{image.path}: the slot of {r.symbol} is in read-only code "
                             "(a text relocation); minigraph does not patch code")
        if in_relro and libc.mprotect(page, _PAGE, 3) != 0:
            raise KernelError(f"mprotect failed ({os.strerror(ctypes.get_errno())}) while "
                              f"filling in {r.symbol} of {image.path}")
        value = targets[r.symbol] + (r.addend if r.type in _RELOC_S_PLUS_A else 0)
        ctypes.c_uint64.from_address(slot).value = value
        if in_relro:
            libc.mprotect(page, _PAGE, 1)


def _dlopen(path: str, shown: str) -> ctypes.CDLL:
    try:
        return ctypes.CDLL(os.path.abspath(path), mode=_FLAGS)  # a bare name: dlopen searches
    except OSError as err:
        raise InputError(f"{shown}: the dynamic loader refused it: {err}") from None


def _open_patched(facts: LibraryFacts, image: elf.Image, names: frozenset[str]) -> ctypes.CDLL:
    """Variant B: the patched copy, loaded from a private directory and deleted at once."""
    with tempfile.TemporaryDirectory(prefix="minigraph-legacy-") as tmp:
        copy = Path(tmp) / Path(facts.path).name
        copy.write_bytes(_patched_copy(image, names))
        handle = _dlopen(str(copy), facts.path)  # the mapping outlives the deleted file
    return handle


def load_legacy(path: str | os.PathLike) -> LegacyLibrary:
    """``loaded_legacy`` of the library at ``path``, classified here."""
    p = os.fspath(path)
    try:
        os.stat(p)
    except OSError as err:
        raise InputError(f"{p}: cannot read library: {err.strerror or err}") from None
    return loaded_legacy(classify(p))


def loaded_legacy(facts: LibraryFacts) -> LegacyLibrary:
    """The library the classifier read (``facts``), loaded once per process with its runtime
    calls wired in; InputError for anything minigraph cannot serve, saying what is inside."""
    p = os.fspath(facts.path)
    try:
        st = os.stat(p)
    except OSError as err:
        raise InputError(f"{p}: cannot read library: {err.strerror or err}") from None
    key = (os.path.realpath(p), st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)
    with _LOAD_LOCK:  # one load per library, even from two threads
        if key not in _LOADED:
            _LOADED[key] = _load(p, facts)
        return _LOADED[key]


def _load(p: str, facts: LibraryFacts) -> LegacyLibrary:
    if not facts.legacy:
        raise InputError(f"{p}: not an old-ABI TVM library ({facts.era})")
    absent = missing(facts.packed)
    if facts.unsupported or absent:
        why = list(facts.unsupported) + ([f"its kernels call packed functions TVM 0.27 does not "
                                          f"provide: {', '.join(absent)} (extern libraries "
                                          "such as BLAS, or device launches)"] if absent else [])
        raise InputError(f"{p}: minigraph cannot run this library ({facts.era}): "
                         + "; ".join(why))
    image = facts.image
    assert image is not None  # classify keeps the image it read
    targets = _tvm_runtime()
    imports = image.imported() & frozenset(SERVED + CALLBACKS + (REGISTER,))
    lib = LegacyLibrary(facts, _open_patched(facts, image, imports) if imports else
                        _dlopen(p, p))
    targets.update(_callbacks(lib))
    if imports:
        base = _base(lib, image)
        targets[REGISTER] = base + _placeholder(image)[0]
        _write_slots(image, base, {n: targets[n] for n in imports})
    _fill_pointers(lib, targets)
    return lib
