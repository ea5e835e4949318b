"""NumPy's .npy and .npz formats, read with every declared size checked before anything is
allocated or inflated.

``np.load`` allocates whatever a .npy header claims, and inflates an .npz member as far as its
compressed stream goes: an 8 MB .npz whose member inflates to 8 GiB takes 8 GiB. Here a .npy
header is read alone first (at most numpy's own 10,000-byte header limit); its shape times
its itemsize is the array's size, checked against the caller's bound and against what the file
holds before the data is read. An .npz member is checked by the size the zip central directory
declares for it (``file_size``, which also caps what zipfile inflates) and then by its .npy
header, before it is inflated. Object arrays are refused: nothing is ever unpickled.
Counterpart: ``numpy.lib.format.read_array`` and ``numpy.lib.npyio.NpzFile``.
"""
from __future__ import annotations

import io
import math
import struct
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.lib import format as npy_format

from ..fileio import sizes_text

NPY_MAGIC = b"\x93NUMPY"
NPZ_MAGIC = b"PK\x03\x04"  # a zip archive: numpy.savez / savez_compressed
# what reading a broken or hostile archive raises (zipfile, zlib, and this module's checks)
NPZ_ERRORS = (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error,
              NotImplementedError, RuntimeError)  # the last two: unknown method, encrypted
HEADER_MAX = 10_000  # bytes of header dict: numpy's own default max_header_size
_LENGTH = {1: "<H", 2: "<I"}  # the header-length field of .npy format 1.0 and 2.0


class NpyError(ValueError):
    """A .npy stream that is not one, or not one minigraph reads (the message follows
    'FILE: ')."""


@dataclass(frozen=True)
class NpyHeader:
    """What a .npy header declares, before any data is read."""

    shape: tuple[int, ...]
    fortran: bool
    dtype: np.dtype
    length: int  # bytes of the magic, version, length field and header: where the data starts

    @property
    def count(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes of array data the header declares (Python ints: no overflow)."""
        return self.count * self.dtype.itemsize

    def describe(self) -> str:
        """'float32[1, 32, 32, 3]', the form of the executor's shape messages."""
        return f"{self.dtype.name}{list(self.shape)}"

    def array(self, data: bytes) -> np.ndarray:
        """The array of exactly ``nbytes`` of data (a read-only view of ``data``)."""
        arr = np.frombuffer(data, self.dtype, count=self.count)
        return arr.reshape(self.shape, order="F" if self.fortran else "C")


def read_header(read: Callable[[int], bytes]) -> NpyHeader:
    """The .npy header from ``read(n)`` (at most n bytes), reading no more than the header;
    NpyError if it is not a .npy header minigraph takes (formats 1.0 and 2.0, no objects)."""
    head = read(8)
    if not head.startswith(NPY_MAGIC):
        raise NpyError("not a .npy file (no NumPy magic); save it with numpy.save")
    if len(head) < 8:
        raise NpyError("its .npy header is truncated")
    fmt = _LENGTH.get(head[6])
    if fmt is None or head[7] != 0:
        raise NpyError(f".npy format version {head[6]}.{head[7]} is not supported (1.0, 2.0 "
                       "are)")
    raw = read(struct.calcsize(fmt))
    if len(raw) != struct.calcsize(fmt):
        raise NpyError("its .npy header is truncated")
    (hlen,) = struct.unpack(fmt, raw)
    if hlen > HEADER_MAX:
        raise NpyError(f"its .npy header claims {hlen} bytes; numpy writes at most "
                       f"{HEADER_MAX}")
    text = read(hlen)
    if len(text) != hlen:
        raise NpyError("its .npy header is truncated")
    f = io.BytesIO(head + raw + text)
    try:
        npy_format.read_magic(f)
        read_dict = getattr(npy_format, f"read_array_header_{head[6]}_0")
        shape, fortran, dtype = read_dict(f)
    except ValueError as err:
        raise NpyError(f"its .npy header is corrupt ({err})") from None
    if any(d < 0 for d in shape):
        raise NpyError(f"its .npy header is corrupt (negative dimension in {list(shape)})")
    if dtype.hasobject:
        raise NpyError("holds Python objects; minigraph never unpickles: save a numeric "
                       "array")
    return NpyHeader(tuple(shape), fortran, dtype, len(head) + len(raw) + hlen)


def _member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int, reason: str
            ) -> np.ndarray:
    """One member, checked by its declared sizes before it is inflated: at most ``limit``
    bytes of data."""
    name, declared = info.filename, info.file_size  # zipfile inflates no more than file_size

    def over(nbytes: int, what: str) -> str:
        size, bound = sizes_text(nbytes, limit)
        return (f"member {name!r} {what.format(size)}, more than the {bound} of data "
                f"{reason}; refused before inflating it")
    if declared > limit + HEADER_MAX + 16:  # + the most a .npy header can take
        raise ValueError(over(declared, "declares {} once inflated"))
    with zf.open(info) as member:
        try:
            header = read_header(member.read)
        except NpyError as err:
            raise ValueError(f"member {name!r}: {err}") from None
        if header.nbytes != declared - header.length:
            raise ValueError(f"member {name!r}: its header says {header.describe()} "
                             f"({header.nbytes} bytes) but the archive declares "
                             f"{declared - header.length}; it is corrupt")
        if header.nbytes > limit:
            raise ValueError(over(header.nbytes, f"holds {header.describe()} ({{}})"))
        data = member.read(header.nbytes)
    if len(data) != header.nbytes:
        raise ValueError(f"member {name!r} is truncated")
    return header.array(data).copy()  # writable, and not a view of the inflated bytes


def load_npz(blob: bytes, array: tuple[int, str], total: tuple[int, str]
             ) -> dict[str, np.ndarray]:
    """Arrays by name ('.npy' dropped, as np.load does), in archive order, each member's sizes
    checked before it is inflated: at most ``array`` bytes of data each and ``total`` all
    together (each with what set it, completing 'more than the N of data ...'). Anything
    that is not such an archive raises one of ``NPZ_ERRORS``."""
    out: dict[str, np.ndarray] = {}
    budget = total[0]
    with zipfile.ZipFile(io.BytesIO(blob)) as zf:
        for info in zf.infolist():
            name = info.filename.removesuffix(".npy")
            if name == info.filename:
                raise ValueError(f"member {info.filename!r} is not a .npy array")
            if name in out:
                raise ValueError(f"it holds {name!r} twice")
            out[name] = _member(zf, info, *(array if array[0] <= budget else
                                            (budget, f"{total[1]}, all arrays together")))
            budget -= out[name].nbytes
    return out
