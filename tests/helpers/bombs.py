"""Files that claim (or inflate to) far more than they hold, made at test time in a few MB and
never inflated here: .npz members, .npy headers and param blobs for the bounded-read tests,
and FIFOs that stream more than any bound (``fifo_stream``).

``npz_bomb`` writes a real zip bomb for ``np.load``: one member whose raw deflate stream
inflates to a .npy of ``nbytes`` of zeros. Deflate of 1 MiB of zeros, full-flushed, is ~1 KiB
and the same bytes every time (a full flush resets the compressor), so the stream is that piece
repeated, ended by an empty final block: 8 GiB in ~8 MB, built in milliseconds. Its CRC is not
computed (that would inflate it): a reader that trusts the sizes allocates everything before it
could find the CRC wrong. ``declares`` instead sets only the central directory's size, over a
stream that holds just the header.
"""
from __future__ import annotations

import contextlib
import fcntl
import io
import os
import struct
import termios
import threading
import time
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path

from numpy.lib import format as npy_format

PIECE = 1 << 20  # bytes of zeros per repeated deflate piece


def npy_header(shape: tuple[int, ...], descr: str = "<f4") -> bytes:
    """The bytes of a .npy (1.0) header declaring ``shape``; no data follows."""
    buf = io.BytesIO()
    npy_format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False,
                                            "shape": shape})
    return buf.getvalue()


def _flushed(data: bytes) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, -15)  # raw deflate, as zip holds it
    return c.compress(data) + c.flush(zlib.Z_FULL_FLUSH)


def _zip_member(path: Path, name: str, stream: bytes, inflated: int, crc: int = 0) -> None:
    """A zip whose one member is the raw deflate ``stream``, declared to inflate to
    ``inflated`` bytes with CRC ``crc``: written stored, then relabelled deflated before the
    central directory is written (zipfile reads method, sizes and CRC from there)."""
    with zipfile.ZipFile(path, "w") as zf:
        info = zipfile.ZipInfo(name)
        with zf.open(info, "w", force_zip64=True) as w:
            w.write(stream)
        info.compress_type = zipfile.ZIP_DEFLATED
        info.file_size, info.CRC = inflated, crc


def npz_bomb(path: Path, nbytes: int, name: str = "w.npy") -> Path:
    """An .npz of ~nbytes/1000 whose member really inflates to a float32 .npy of ``nbytes``
    bytes of data (a whole number of MiB)."""
    header = npy_header((nbytes // 4,))
    stream = _flushed(header) + _flushed(bytes(PIECE)) * (nbytes // PIECE) + \
        zlib.compressobj(9, zlib.DEFLATED, -15).flush()
    _zip_member(path, name, stream, len(header) + nbytes)
    return path


def npz_declaring(path: Path, nbytes: int, header_shape: tuple[int, ...] | None = None,
                  name: str = "w.npy") -> Path:
    """A tiny .npz whose member's central-directory size says ``nbytes`` of float32 data
    (its header agreeing, unless ``header_shape`` is given) but whose stream holds only the
    header (its CRC: a reader that stops at the end of the stream finds nothing wrong)."""
    header = npy_header(header_shape if header_shape is not None else (nbytes // 4,))
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    _zip_member(path, name, c.compress(header) + c.flush(), len(header) + nbytes,
                zlib.crc32(header))
    return path


def params_blob_head(names: list[str]) -> bytes:
    """A TVM param blob's magic and name table, no arrays: what a stream can lead with."""
    out = [struct.pack("<QQQ", 0xF7E58D4F05049CB7, 0, len(names))]
    out += [struct.pack("<Q", len(n)) + n.encode() for n in names]
    return b"".join(out)


def _available(fd: int) -> int:
    """Bytes waiting in the pipe behind ``fd`` (FIONREAD)."""
    return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0" * 4))[0]


@contextlib.contextmanager
def fifo_stream(path: Path, head: bytes, nbytes: int | None = None) -> Iterator[Path]:
    """A FIFO at ``path`` whose writer (a thread) sends ``head`` then ``nbytes`` of zeros
    (None: without end), already writing when the block starts: a reader end is held open
    here and never read, and the block starts once the pipe holds data, so a reader opening
    it later never sees "no writer". The writer stops when the block ends (EPIPE)."""
    os.mkfifo(path)
    held = os.open(path, os.O_RDONLY | os.O_NONBLOCK)

    def write() -> None:
        try:
            with open(path, "wb") as f:
                f.write(head)
                sent = 0
                while nbytes is None or sent < nbytes:
                    f.write(bytes(1 << 16))
                    sent += 1 << 16
        except BrokenPipeError:
            pass
    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    deadline = time.monotonic() + 30
    while _available(held) == 0 and time.monotonic() < deadline:
        time.sleep(0.005)
    try:
        yield path
    finally:
        os.close(held)
        writer.join(30)
