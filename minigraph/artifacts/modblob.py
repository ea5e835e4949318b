"""``__tvm_dev_mblob``: the modules TVM packed into a library beside its host kernels.

Layout (``PackImportsToBytes`` / ``ModuleSerializer::SerializeModuleToBytes`` in
src/target/codegen.cc; read back by ``ProcessModuleBlob`` in src/runtime/library_module.cc):
u64 nbytes, then u64 count and ``count`` entries, each a dmlc string type key followed by that
module's ``SaveToBinary`` bytes: ``_lib`` (the host kernels themselves, no bytes), ``_import_tree``
(two u64 vectors), ``GraphExecutorFactory`` / ``GraphRuntimeFactory`` (Relay's graph.json,
params and module name), or a device or metadata module (``cuda``, ``opencl``, ``metadata``, ...)
whose bytes only its own loader can size, so reading stops there.
Every length is checked against the bytes that remain (a corrupt blob is ``ValueError``).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

FACTORIES = ("GraphExecutorFactory", "GraphRuntimeFactory")
_ARRAY_MAGIC = 0xDD5E40F096B4A13F
_PARAMS_MAGIC = 0xF7E58D4F05049CB7


@dataclass(frozen=True)
class Factory:
    """What Relay's ``lib.export_library`` embedded: the graph and params of the model."""

    graph_json: str
    params_blob: bytes      # re-packed as a standard param blob (artifacts/params.py reads it)
    module_name: str


@dataclass(frozen=True)
class Blob:
    modules: tuple[str, ...]      # type keys in order; the last may be one that stopped reading
    factory: Factory | None
    complete: bool                # False: a module whose bytes cannot be sized stopped reading


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError(f"module blob truncated at byte {self.pos} (needs {n} more)")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def u64(self) -> int:
        return struct.unpack("<Q", self.take(8))[0]

    def string(self) -> bytes:
        return self.take(self.u64())

    def u64_vector(self) -> None:
        self.take(8 * self.u64())


def _tensor_end(r: _Reader) -> None:
    """Skips one ``SaveDLTensor`` record (the same layout as a param blob's arrays)."""
    start = r.pos
    if r.u64() != _ARRAY_MAGIC:
        raise ValueError(f"bad array magic at byte {start} of the module blob")
    r.take(8 + 8)                                   # reserved, DLDevice
    ndim = struct.unpack("<i", r.take(4))[0]
    r.take(4 + 8 * max(ndim, 0))                    # DLDataType, shape
    r.take(struct.unpack("<q", r.take(8))[0])       # nbytes, data


def _factory(r: _Reader) -> Factory:
    graph = r.string().decode("utf-8")
    count = r.u64()
    if count > len(r.data):
        raise ValueError("module blob claims more params than it has bytes")
    names = r.u64()
    if names != count:
        raise ValueError("module blob has different numbers of param names and arrays")
    name_bytes = [r.string() for _ in range(count)]
    start = r.pos
    for _ in range(count):
        _tensor_end(r)
    arrays = r.data[start:r.pos]
    module_name = r.string().decode("utf-8", "replace")
    head = struct.pack("<QQQ", _PARAMS_MAGIC, 0, count) + \
        b"".join(struct.pack("<Q", len(n)) + n for n in name_bytes) + struct.pack("<Q", count)
    return Factory(graph, head + arrays, module_name)


def parse_blob(data: bytes) -> Blob:
    """The module type keys in a ``__tvm_dev_mblob`` (and the graph factory, if any)."""
    outer = _Reader(data)
    r = _Reader(outer.take(outer.u64()))
    count = r.u64()
    if count > len(r.data):
        raise ValueError("module blob claims more modules than it has bytes")
    keys: list[str] = []
    factory = None
    for _ in range(count):
        key = r.string().decode("utf-8", "replace")
        keys.append(key)
        if key == "_import_tree":
            r.u64_vector()
            r.u64_vector()
        elif key in FACTORIES:
            factory = _factory(r)
        elif key != "_lib":
            return Blob(tuple(keys), factory, complete=False)
    return Blob(tuple(keys), factory, complete=True)
