"""Reading model.so before dlopen (pyelftools): is it loadable here, what does it export/import.

dlopen trusts the file: a truncated library makes the loader map pages past the end of the file
and the process dies of SIGBUS; a library for another CPU or a plain system library loads (or
fails) without saying why. So every library is first identified here (ELF, Mach-O or PE, and
for which machine), then checked to be a complete 64-bit little-endian shared object for this
machine, and only then read with pyelftools: dynamic symbols, sections, dynamic tags, the RELRO
range and relocations. Any lie in the headers is an ``InputError``, never a crash.

Relocation tables are decoded in bulk with numpy from the section pyelftools locates:
``iter_relocations`` costs ~15 us per entry, and a large library has 250,000 of them.
"""
from __future__ import annotations

import contextlib
import functools
import mmap
import os
import platform
import struct
from dataclasses import dataclass
from typing import Iterable, Iterator

import numpy as np

from ..errors import InputError
from ..fileio import regular_size

# lazy: pyelftools (~80 ms) is imported where a library file is parsed: show, compare and the CLI's
# start-up never parse one

_MACHINES = {"EM_X86_64": "x86_64", "EM_AARCH64": "aarch64", "EM_RISCV": "riscv64",
             "EM_PPC64": "ppc64", "EM_S390": "s390x", "EM_386": "x86 (32-bit)",
             "EM_ARM": "arm (32-bit)"}
_RAW_MACHINES = {62: "x86_64", 183: "aarch64", 243: "riscv64", 21: "ppc64", 22: "s390x",
                 3: "x86 (32-bit)", 40: "arm (32-bit)"}
_MACHO_CPU = {0x01000007: "x86_64", 0x0100000C: "arm64", 7: "x86 (32-bit)", 12: "arm (32-bit)"}
_PE_MACHINE = {0x8664: "x86_64", 0xAA64: "arm64", 0x14C: "x86 (32-bit)", 0x1C4: "arm (32-bit)"}
_HOST = {"amd64": "x86_64", "arm64": "aarch64", "ppc64le": "ppc64"}
# bytes: a model library (kernels, at most weights linked in) is MiBs to a few hundred MiBs;
# it is mapped, not read, but the legacy door copies it whole and a loader maps it all
MAX_LIBRARY_BYTES = 8 << 30
_MAX_SYMBOLS = 1 << 20  # far more than any kernel library; bounds the scan of a hostile file
_RELA = np.dtype([("offset", "<u8"), ("info", "<u8"), ("addend", "<i8")])
HINT = "pass the model.so that TVM built for this machine"


@dataclass(frozen=True)
class Symbol:
    """One .dynsym (or .symtab) entry; ``defined`` False: imported from another library."""

    name: str
    index: int
    value: int
    size: int
    kind: str      # STT_FUNC, STT_OBJECT, ...
    bind: str      # STB_GLOBAL, STB_WEAK, STB_LOCAL
    defined: bool


@dataclass(frozen=True)
class Section:
    name: str
    type: str
    addr: int
    offset: int
    size: int
    index: int


@dataclass(frozen=True)
class Reloc:
    """One dynamic relocation: write (symbol + addend) at ``offset`` (a load address)."""

    offset: int
    type: int      # R_X86_64_64 = 1, GLOB_DAT = 6, JUMP_SLOT = 7
    symbol: str
    addend: int


@dataclass(frozen=True)
class Image:
    """What the loaders need to know of a vetted shared object, read once."""

    path: str
    machine: str
    symbols: tuple[Symbol, ...]          # .dynsym in index order
    sections: tuple[Section, ...]
    dynamic: tuple[tuple[str, int], ...]  # (DT_ tag, value)
    relro: tuple[int, int] | None         # PT_GNU_RELRO (vaddr, memsz)
    writable: tuple[tuple[int, int], ...]  # PT_LOAD segments with PF_W: (vaddr, memsz)
    local_names: tuple[str, ...]          # .symtab names (empty when stripped)

    def exported(self) -> frozenset[str]:
        return frozenset(s.name for s in self.symbols if s.defined and s.name)

    def imported(self) -> frozenset[str]:
        return frozenset(s.name for s in self.symbols if not s.defined and s.name)

    def symbol(self, name: str) -> Symbol | None:
        return next((s for s in self.symbols if s.name == name and s.defined), None)

    def section(self, name: str) -> Section | None:
        return next((s for s in self.sections if s.name == name), None)

    def dyn(self, tag: str) -> int | None:
        return next((v for t, v in self.dynamic if t == tag), None)


def host_machine() -> str:
    name = platform.machine().lower()
    return _HOST.get(name, name)


def _bad(path: str, why: str) -> InputError:
    return InputError(f"{path}: {why}")


def _foreign(path: str, fmt: str, machine: str) -> InputError:
    return _bad(path, f"is a {fmt} built for {machine}; this machine is {host_machine()} "
                      f"Linux, which loads ELF shared libraries: {HINT}")


def identify(head: bytes, path: str) -> None:
    """InputError unless ``head`` (the file's first bytes, up to a page) starts an ELF64 LE file
    for this machine; Mach-O and PE files are named with the machine they were built for."""
    magic = head[:4]
    if magic in (b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe") and len(head) >= 8:
        cpu = struct.unpack_from("<I", head, 4)[0]
        raise _foreign(path, "Mach-O library (macOS)", _MACHO_CPU.get(cpu, f"CPU {cpu:#x}"))
    if magic in (b"\xca\xfe\xba\xbe", b"\xbe\xba\xfe\xca"):
        raise _foreign(path, "Mach-O universal library (macOS)", "several CPUs")
    if head[:2] == b"MZ" and len(head) >= 64:
        pe = struct.unpack_from("<I", head, 60)[0]
        machine = struct.unpack_from("<H", head, pe + 4)[0] if pe + 6 <= len(head) and \
            head[pe:pe + 4] == b"PE\0\0" else None
        raise _foreign(path, "Windows PE library (.dll)",
                       _PE_MACHINE.get(machine, "an unknown CPU") if machine else "an unknown CPU")
    if len(head) < 64 or magic != b"\x7fELF":
        raise _bad(path, "not a shared library (no ELF header); pass the model.so written by "
                         "`minigraph build` or by TVM's export_library")
    endian = "<" if head[5] == 1 else ">"
    machine = _RAW_MACHINES.get(struct.unpack_from(endian + "H", head, 18)[0])
    if machine is not None and machine != host_machine():
        raise _bad(path, f"was built for {machine}, this machine is {host_machine()}; {HINT}")
    if head[4] != 2 or head[5] != 1:
        raise _bad(path, "is a 32-bit or big-endian ELF file; minigraph loads 64-bit "
                         "little-endian libraries built for this machine")


@functools.lru_cache(maxsize=1)
def _structs():
    from elftools.elf.structs import ELFStructs
    s = ELFStructs(little_endian=True, elfclass=64)
    s.create_basic_structs()
    s.create_advanced_structs("ET_DYN", "EM_X86_64", "ELFOSABI_SYSV")
    return s


def check_shared_object(data, path: str) -> None:
    """Raises InputError unless ``data`` is a whole ELF64 LE shared object for this machine."""
    identify(bytes(data[:4096]), path)  # a PE header sits at an offset in the first page
    s = _structs()
    h = s.Elf_Ehdr.parse(bytes(data[:64]))
    machine = _MACHINES.get(h.e_machine, str(h.e_machine))
    if machine != host_machine():
        raise _bad(path, f"was built for {machine}, this machine is {host_machine()}; {HINT}")
    if h.e_type != "ET_DYN":
        what = "an object file (.o), not yet linked" if h.e_type == "ET_REL" else \
            f"an ELF file of type {h.e_type}"
        raise _bad(path, f"is {what}, not a shared library; {HINT}")
    n = len(data)
    if h.e_phentsize != s.Elf_Phdr.sizeof() or h.e_phoff + h.e_phnum * h.e_phentsize > n or \
            (h.e_shnum and (h.e_shentsize != s.Elf_Shdr.sizeof()
                            or h.e_shoff + h.e_shnum * h.e_shentsize > n)):
        raise _bad(path, f"is truncated or corrupt (ELF headers point past its {n} bytes); "
                         "rebuild or re-copy it")
    phdrs = [s.Elf_Phdr.parse(bytes(data[h.e_phoff + i * h.e_phentsize:
                                         h.e_phoff + (i + 1) * h.e_phentsize]))
             for i in range(h.e_phnum)]
    for p in phdrs:
        if p.p_type == "PT_LOAD" and p.p_offset + p.p_filesz > n:
            raise _bad(path, f"is truncated: a loadable segment ends at byte "
                             f"{p.p_offset + p.p_filesz} but the file has {n} bytes; rebuild or "
                             "re-copy it")
    if not any(p.p_type == "PT_DYNAMIC" for p in phdrs):
        raise _bad(path, "has no dynamic section, so it is not a loadable shared library")


def _symbols(section, defined_only: bool = False) -> tuple[Symbol, ...]:
    if section is None:
        return ()
    if section.num_symbols() > _MAX_SYMBOLS:
        raise ValueError("implausible symbol table")
    out = []
    for i, sym in enumerate(section.iter_symbols()):
        shndx = sym["st_shndx"]
        defined = shndx != "SHN_UNDEF"
        if defined_only and not defined:
            continue
        out.append(Symbol(sym.name, i, sym["st_value"], sym["st_size"], sym["st_info"]["type"],
                          sym["st_info"]["bind"], defined))
    return tuple(out)


def local_names(image: Image) -> tuple[str, ...]:
    """The defined .symtab names of a vetted library (empty when stripped): only the legacy
    door needs them (``.tvm_func.*`` handles), so they are read on their own, not with every
    image."""
    from elftools.elf.elffile import ELFFile
    try:
        with open(image.path, "rb") as f:
            return tuple(s.name for s in _symbols(ELFFile(f).get_section_by_name(".symtab"),
                                                  True))
    except OSError as err:
        raise InputError(f"{image.path}: cannot read library: {err.strerror or err}") from None
    except MemoryError:  # a limit (ulimit -v), not the file: cli/limits.py names it
        raise
    except Exception:  # noqa: BLE001 - pyelftools raises many types on corrupt tables
        raise InputError(f"{image.path}: corrupt ELF file (bad symbol table); rebuild or "
                         "re-copy it") from None


def _read(f, path: str, want_locals: bool) -> Image:
    from elftools.elf.elffile import ELFFile
    e = ELFFile(f)
    sections = tuple(Section(sec.name, sec["sh_type"], sec["sh_addr"], sec["sh_offset"],
                             sec["sh_size"], i) for i, sec in enumerate(e.iter_sections()))
    size = os.fstat(f.fileno()).st_size
    for sec in sections:  # every later read of a section is then within the file
        if sec.type != "SHT_NOBITS" and sec.offset + sec.size > size:
            raise ValueError(f"section {sec.index} ends past the end of the file")
    dynsym = e.get_section_by_name(".dynsym")
    dynamic = e.get_section_by_name(".dynamic")
    tags = tuple((t.entry.d_tag, t.entry.d_val) for t in dynamic.iter_tags()) \
        if dynamic is not None else ()
    relro = next(((p["p_vaddr"], p["p_memsz"]) for p in e.iter_segments()
                  if p["p_type"] == "PT_GNU_RELRO"), None)
    writable = tuple((p["p_vaddr"], p["p_memsz"]) for p in e.iter_segments()
                     if p["p_type"] == "PT_LOAD" and p["p_flags"] & 2)
    local = tuple(s.name for s in _symbols(e.get_section_by_name(".symtab"), True)) \
        if want_locals else ()
    return Image(path, _MACHINES.get(e["e_machine"], str(e["e_machine"])), _symbols(dynsym),
                 sections, tags, relro, writable, local)


def read_image(path: str | os.PathLike, *, want_locals: bool = False) -> Image:
    """The vetted library's symbols, sections and dynamic tags; InputError for anything that
    is not a complete shared object for this machine, or whose tables are corrupt."""
    p = os.fspath(path)
    regular_size(p, MAX_LIBRARY_BYTES, "library", "a model library may be")
    try:
        with open(p, "rb") as f:
            with mapped_file(f) as data:
                check_shared_object(data, p)
            return _read(f, p, want_locals)
    except InputError:
        raise
    except OSError as err:
        raise InputError(f"{p}: cannot read library: {err.strerror or err}") from None
    except MemoryError:  # a limit (ulimit -v), not the file: cli/limits.py names it
        raise
    except Exception:  # noqa: BLE001 - pyelftools raises many types on corrupt tables
        raise InputError(f"{p}: corrupt ELF file (bad section, symbol or dynamic table); "
                         "rebuild or re-copy it") from None


def relocations(image: Image, names: Iterable[str]) -> tuple[Reloc, ...]:
    """Every dynamic relocation (.rela.dyn, .rela.plt) against a .dynsym symbol in ``names``."""
    by_index = {s.index: s.name for s in image.symbols if s.name in set(names)}
    if not by_index:
        return ()
    out: list[Reloc] = []
    with open(image.path, "rb") as f:
        for sec in image.sections:
            if sec.type != "SHT_RELA" or not sec.name.startswith(".rela") or sec.size == 0:
                continue
            f.seek(sec.offset)
            raw = f.read(sec.size)
            table = np.frombuffer(raw[:len(raw) - len(raw) % _RELA.itemsize], _RELA)
            sym = (table["info"] >> np.uint64(32)).astype(np.int64)
            for k in np.nonzero(np.isin(sym, list(by_index)))[0]:
                row = table[k]
                out.append(Reloc(int(row["offset"]), int(row["info"] & 0xFFFFFFFF),
                                 by_index[int(sym[k])], int(row["addend"])))
    return tuple(out)


def read_at(image: Image, vaddr: int, size: int) -> bytes:
    """The file bytes that load at ``vaddr`` (from the section that holds them)."""
    for sec in image.sections:
        if sec.type != "SHT_NOBITS" and sec.addr and sec.addr <= vaddr < sec.addr + sec.size:
            start = sec.offset + vaddr - sec.addr
            size = min(size, sec.addr + sec.size - vaddr)
            with open(image.path, "rb") as f:
                f.seek(start)
                return f.read(size)
    return b""


@contextlib.contextmanager
def mapped_file(f) -> Iterator[bytes]:
    """An open file's bytes, memory-mapped read-only (a large file is not read into memory)."""
    if os.fstat(f.fileno()).st_size == 0:  # mmap refuses empty files
        yield b""
        return
    with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        yield m  # type: ignore[misc]  (mmap supports the bytes operations used here)


@contextlib.contextmanager
def mapped(path: str | os.PathLike) -> Iterator[bytes]:
    """The file's bytes, memory-mapped read-only."""
    with open(path, "rb") as f, mapped_file(f) as data:
        yield data
