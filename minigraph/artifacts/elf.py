"""Just enough ELF reading to vet model.so *before* dlopen, and to list what it exports.

dlopen trusts the file: a truncated library makes the loader map pages past the end of the file
and the process dies of SIGBUS; a library for another CPU or a plain system library loads (or
fails) without saying why. So runtime/kernels.py first checks here that the file is a complete 64-bit
little-endian shared object for this machine and reads its dynamic symbols, bounds-checking
every offset (any lie in the headers is an ``InputError``, never an IndexError or a crash).
"""
from __future__ import annotations

import contextlib
import mmap
import os
import platform
import struct
from dataclasses import dataclass
from typing import Iterator, NamedTuple

from ..errors import InputError

_EHDR = struct.Struct("<HHIQQQIHHHHHH")       # e_type .. e_shstrndx, after e_ident
_PHDR = struct.Struct("<IIQQQQQQ")            # p_type, p_flags, p_offset, .., p_filesz, ..
_SHDR = struct.Struct("<IIQQQQIIQQ")          # sh_name, sh_type, .., sh_offset, sh_size, ..
_SYM = struct.Struct("<IBBHQQ")               # st_name, st_info, st_other, st_shndx, ..
_ET_DYN, _PT_LOAD, _PT_DYNAMIC, _SHT_NOBITS, _SHT_DYNSYM = 3, 1, 2, 8, 11
_MACHINES = {62: "x86_64", 183: "aarch64", 243: "riscv64", 21: "ppc64", 22: "s390x",
             3: "x86 (32-bit)", 40: "arm (32-bit)"}
_HOST = {"amd64": "x86_64", "arm64": "aarch64", "ppc64le": "ppc64"}
_MAX_SYMBOLS = 1 << 20  # far more than any kernel library; bounds the scan of a hostile file


@dataclass(frozen=True)
class Section:
    type: int
    offset: int
    size: int
    link: int
    entsize: int


class _Header(NamedTuple):
    """The ELF64 header after e_ident: unpacked in one place for every reader here."""
    type: int
    machine: int
    version: int
    entry: int
    phoff: int
    shoff: int
    flags: int
    ehsize: int
    phentsize: int
    phnum: int
    shentsize: int
    shnum: int
    shstrndx: int


def _header(data) -> _Header:
    return _Header._make(_EHDR.unpack_from(data, 16))


def _bad(path: str, why: str) -> InputError:
    return InputError(f"{path}: {why}")


def host_machine() -> str:
    name = platform.machine().lower()
    return _HOST.get(name, name)


def check_shared_object(data, path: str) -> None:
    """Raises InputError unless ``data`` is a whole ELF64 LE shared object for this machine."""
    if len(data) < 64 or data[:4] != b"\x7fELF":
        raise _bad(path, "not a shared library (no ELF header); pass the model.so written by "
                         "`minigraph build`")
    if data[4] != 2 or data[5] != 1:
        raise _bad(path, "is a 32-bit or big-endian ELF file; minigraph loads 64-bit "
                         "little-endian libraries built for this machine")
    e_type, machine, _v, _entry, phoff, shoff, _f, _eh, phentsize, phnum, shentsize, shnum, _s = \
        _header(data)
    arch = _MACHINES.get(machine, f"machine {machine}")
    if arch != host_machine() and machine in _MACHINES:
        raise _bad(path, f"was built for {arch}, this machine is {host_machine()}; rebuild it "
                         "here with `minigraph build`")
    if e_type != _ET_DYN:
        raise _bad(path, f"is an ELF file of type {e_type}, not a shared library (type 3); "
                         "pass the model.so written by `minigraph build`")
    if phentsize != _PHDR.size or phoff + phnum * phentsize > len(data) or \
            (shnum and (shentsize != _SHDR.size or shoff + shnum * shentsize > len(data))):
        raise _bad(path, f"is truncated or corrupt (ELF headers point past its {len(data)} "
                         "bytes); rebuild or re-copy it")
    phdrs = [_PHDR.unpack_from(data, phoff + i * phentsize) for i in range(phnum)]
    for p_type, _fl, offset, _va, _pa, filesz, _mem, _al in phdrs:
        if p_type == _PT_LOAD and offset + filesz > len(data):
            raise _bad(path, f"is truncated: a loadable segment ends at byte {offset + filesz} "
                             f"but the file has {len(data)} bytes; rebuild or re-copy it")
    if not any(p[0] == _PT_DYNAMIC for p in phdrs):
        raise _bad(path, "has no dynamic section, so it is not a loadable shared library")


def sections(data) -> list[Section]:
    """Section headers (empty when the file has none); call check_shared_object first."""
    h = _header(data)
    out = []
    for i in range(h.shnum):
        _n, typ, _fl, _addr, offset, size, link, _info, _al, entsize = \
            _SHDR.unpack_from(data, h.shoff + i * h.shentsize)
        if typ != _SHT_NOBITS and offset + size > len(data):
            raise ValueError(f"section {i} ends past the end of the file")
        out.append(Section(typ, offset, size, link, entsize))
    return out


def dynamic_symbols(data) -> Iterator[str]:
    """Names of the symbols the library defines in .dynsym (what dlsym can find)."""
    secs = sections(data)
    for sec in secs:
        if sec.type != _SHT_DYNSYM or sec.link >= len(secs):
            continue
        strtab, step = secs[sec.link], sec.entsize or _SYM.size
        if step < _SYM.size or sec.size // step > _MAX_SYMBOLS:
            raise ValueError("implausible .dynsym")
        for off in range(sec.offset, sec.offset + sec.size - step + 1, step):
            name_off, _info, _other, shndx, _value, _size = _SYM.unpack_from(data, off)
            if shndx == 0 or name_off >= strtab.size:  # undefined: imported, not exported
                continue
            start = strtab.offset + name_off
            end = data.find(b"\0", start, strtab.offset + strtab.size)
            if end >= 0:
                yield bytes(data[start:end]).decode("ascii", "replace")


@contextlib.contextmanager
def mapped(path: str | os.PathLike) -> Iterator[bytes]:
    """The file's bytes, memory-mapped read-only (a large file is not read into memory)."""
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:  # mmap refuses empty files
            yield b""
            return
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            yield m  # type: ignore[misc]  (mmap supports the bytes operations used here)
