"""Bounds-checked little-endian reads of a dmlc-serialised blob (``dmlc::MemoryStringStream``):
the param blob, the Relax VM executable and the module tree TVM embeds in a library all come
in this form. Every length is checked against the bytes that remain before anything is sliced,
so a lying length is an error naming the field, never an over-read or a huge allocation."""
from __future__ import annotations

import struct

from ..errors import ParamsError

MAX_ITEMS = 1 << 26  # items of one vector; more is corruption (and would not fit in memory)


class Reader:
    """Reads ``blob`` front to back; ``what`` names it in errors, raised as ``error``."""

    def __init__(self, blob: bytes | memoryview, what: str = "blob",
                 error: type[Exception] = ParamsError) -> None:
        self.buf, self.pos, self.what, self.error = memoryview(blob), 0, what, error

    @property
    def remaining(self) -> int:
        return len(self.buf) - self.pos

    def take(self, n: int, field: str) -> memoryview:
        if n < 0 or n > self.remaining:
            raise self.error(f"{self.what} truncated at byte offset {self.pos} reading {field}: "
                             f"need {n} bytes, {self.remaining} left")
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str, field: str) -> tuple:
        return struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt), field))

    def u64(self, field: str) -> int:
        return self.unpack("Q", field)[0]

    def count(self, field: str, item_nbytes: int, limit: int = MAX_ITEMS) -> int:
        """A u64 item count, checked against ``limit`` and the bytes that remain."""
        n = self.u64(f"size of {field}")
        if n > limit or n * item_nbytes > self.remaining:
            raise self.error(f"{self.what}: {field} claims {n} items but only "
                             f"{self.remaining} bytes remain")
        return n

    def bytes_(self, field: str) -> bytes:
        return bytes(self.take(self.u64(f"length of {field}"), field))

    def str_(self, field: str) -> str:
        return self.bytes_(field).decode("utf-8", "replace")

    def u64s(self, field: str, limit: int = MAX_ITEMS) -> tuple[int, ...]:
        n = self.count(field, 8, limit)
        return struct.unpack(f"<{n}Q", self.take(8 * n, field))

    def i64s(self, field: str, limit: int = MAX_ITEMS) -> tuple[int, ...]:
        n = self.count(field, 8, limit)
        return struct.unpack(f"<{n}q", self.take(8 * n, field))
