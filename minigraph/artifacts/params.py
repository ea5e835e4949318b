"""TVM param blob <-> dict of numpy arrays, and a check of params against a Graph.

Mirrors ``tvm.runtime.save_param_dict`` / ``load_param_dict`` (C++: ``SaveParams`` /
``LoadParams`` in src/runtime/file_utils.cc and ``NDArray::Save`` / ``NDArray::Load``).
Pure Python + numpy: no TVM needed to read or write params. Every length read from the blob is
checked against the bytes that remain before anything is sliced or allocated, so a corrupt or
hostile blob yields a ``ParamsError``, never a MemoryError or a numpy exception.
"""
from __future__ import annotations

import functools
import math
import os
import struct
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from ..errors import InputError, ParamsError
from ..fileio import BoundedFile
from . import npy
from .bounds import ParamsBound, unsized_params_bound
from .dlpack import CODE_OF, KDLCPU, NAME_OF
from .graph import Graph
from .stream import Reader

# lazy: ml_dtypes (~0.5 s to import) is needed only for bfloat16 and float8 params


@functools.lru_cache(maxsize=1)
def _bfloat16() -> np.dtype | None:
    """bfloat16 has no numpy builtin; ml_dtypes provides it (TVM itself depends on it).
    Imported on first use: it takes about a second, and few models hold bfloat16."""
    try:
        import ml_dtypes
    except ImportError:  # pragma: no cover - ml_dtypes ships with apache-tvm
        return None
    return np.dtype(ml_dtypes.bfloat16)

NPZ_MAGIC = npy.NPZ_MAGIC  # a zip archive: numpy.savez / savez_compressed
PARAMS_MAGIC = 0xF7E58D4F05049CB7
NDARRAY_MAGIC = 0xDD5E40F096B4A13F
_MAX_NDIM = 32  # TVM has no hard limit; anything deeper is corruption, not a model
_MAX_BYTES = 2**62  # larger than any real tensor; keeps numpy's size arithmetic in range



def np_dtype(name: str) -> np.dtype:
    """numpy dtype of a TVM dtype name (bfloat16 through ml_dtypes)."""
    if name == "bfloat16":
        bf16 = _bfloat16()
        if bf16 is None:
            raise ParamsError("bfloat16 params need the ml_dtypes package (pip install ml_dtypes)")
        return bf16
    return np.dtype(name)


def _describe(dtype: str, shape: Iterable[int]) -> str:
    """'float32[64, 3, 7, 7]', the form used in mismatch messages."""
    return f"{dtype}[{', '.join(str(d) for d in shape)}]"


def _read_names(r: Reader) -> list[str]:
    """The name table: u64 count, then per name a u64 length and UTF-8 bytes."""
    count = r.u64("name count")
    if count * 8 > r.remaining:  # each name needs at least its 8-byte length
        raise ParamsError(f"param blob claims {count} names but only {r.remaining} bytes follow "
                          f"(byte offset {r.pos}); the blob is truncated or corrupt")
    names: list[str] = []
    for i in range(count):
        raw = r.take(r.u64(f"length of name {i}"), f"name {i}")
        try:
            names.append(bytes(raw).decode("utf-8"))
        except UnicodeDecodeError:
            raise ParamsError(f"param name {i} at byte offset {r.pos - len(raw)} is not "
                              "UTF-8; the blob is corrupt") from None
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise ParamsError(f"param blob names {n!r} more than once; names must be unique")
        seen.add(n)
    return names


def _read_header(r: Reader, name: str) -> tuple[np.dtype, tuple[int, ...], int]:
    """``NDArray::Load`` up to the data: magic, device, ndim, dtype, shape, nbytes."""
    where = f"array {name!r}"
    magic, _reserved = r.unpack("QQ", f"{where} header")
    if magic != NDARRAY_MAGIC:
        raise ParamsError(f"{where} at byte offset {r.pos - 16} has bad magic {magic:#x} "
                          f"(expected {NDARRAY_MAGIC:#x}); the blob is corrupt")
    dev_type, _dev_id, ndim, code, bits, lanes = r.unpack("iiiBBH", f"{where} header")
    if dev_type != KDLCPU:
        raise ParamsError(f"{where} has device type {dev_type}; saved params must be CPU (1)")
    if (code, bits) not in NAME_OF or lanes != 1:
        raise ParamsError(f"{where} has unsupported DLDataType code={code} bits={bits} "
                          f"lanes={lanes}; supported: {sorted(set(NAME_OF.values()))}, lanes 1")
    if not 0 <= ndim <= _MAX_NDIM:
        raise ParamsError(f"{where} has ndim {ndim}; expected 0..{_MAX_NDIM}")
    shape = r.unpack(f"{ndim}q", f"{where} shape")
    dtype = np_dtype(NAME_OF[(code, bits)])
    # numpy refuses even empty arrays whose non-zero dims overflow, so bound those too
    if any(d < 0 for d in shape) or \
            math.prod(d for d in shape if d != 0) * dtype.itemsize > _MAX_BYTES:
        raise ParamsError(f"{where} has impossible shape {list(shape)}")
    (nbytes,) = r.unpack("q", f"{where} nbytes")
    expected = math.prod(shape) * dtype.itemsize
    if nbytes != expected:
        raise ParamsError(f"{where}: nbytes is {nbytes} but {_describe(dtype.name, shape)} "
                          f"needs {expected}; the blob is corrupt")
    return dtype, shape, nbytes


def read_array(r: Reader, name: str, copy: bool = True) -> np.ndarray:
    """One array; a writable, C-contiguous, native-endian copy (``copy=False``: a read-only
    view of the blob where no conversion is needed)."""
    dtype, shape, nbytes = _read_header(r, name)
    data = r.take(nbytes, f"array {name!r} data")
    if dtype == np.bool_:  # any non-zero byte is true, as in C
        return (np.frombuffer(data, np.uint8) != 0).reshape(shape)
    if dtype.name == "bfloat16":  # ml_dtypes has no byte-swapped variant: go through uint16
        return np.frombuffer(data, "<u2").astype(np.uint16).view(dtype).reshape(shape)
    return np.frombuffer(data, dtype.newbyteorder("<")).astype(dtype, copy=copy).reshape(shape)


def load_params(blob: bytes, copy: bool = True) -> dict[str, np.ndarray]:
    """Decode a param blob (``tvm.runtime.load_param_dict``); raises only ``ParamsError``.
    ``copy=False``: arrays may be read-only views of ``blob`` (for a caller that copies them
    on anyway, as binding does: ResNet-50's 100 MB are then copied once, not twice)."""
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise ParamsError(f"param blob must be bytes, got {type(blob).__name__}")
    r = Reader(bytes(blob), "param blob")
    if r.remaining < 8 or r.u64("magic") != PARAMS_MAGIC:
        raise ParamsError("not a TVM param blob (bad magic); expected a file written by "
                          "tvm.runtime.save_param_dict or minigraph build, or a numpy .npz")
    r.u64("reserved")
    names = _read_names(r)
    n = r.u64("array count")
    if n != len(names):
        raise ParamsError(f"param blob has {len(names)} names but {n} arrays; it is corrupt")
    params = {name: read_array(r, name, copy) for name in names}
    if r.remaining:
        raise ParamsError(f"param blob has {r.remaining} trailing bytes after the last array "
                          f"(byte offset {r.pos}); it is corrupt or concatenated")
    return params


def _dtype_code(name: str, arr: np.ndarray) -> tuple[int, int]:
    """The DLPack (code, bits) a param blob stores for ``arr``; ParamsError if it has none.
    The name ignores byte order: '>f4' is float32."""
    key = CODE_OF.get(arr.dtype.name)
    if key is None:
        raise ParamsError(f"param {name!r} has unsupported dtype {arr.dtype}; supported: "
                          f"{sorted(CODE_OF)}")
    return key


def save_params(params: Mapping[str, np.ndarray]) -> bytes:
    """Encode arrays as a param blob (``tvm.runtime.save_param_dict``), in mapping order."""
    out = [struct.pack("<QQQ", PARAMS_MAGIC, 0, len(params))]
    for name in params:
        if not isinstance(name, str):
            raise ParamsError(f"param names must be strings, got {name!r}")
        raw = name.encode("utf-8")
        out.append(struct.pack("<Q", len(raw)) + raw)
    out.append(struct.pack("<Q", len(params)))
    for name, value in params.items():
        arr = np.asarray(value)
        key = _dtype_code(name, arr)
        # tobytes() is C order whatever the strides; bool and bfloat16 have no '<' variant
        data = arr.astype(arr.dtype.newbyteorder("<")).tobytes() if key[0] in (0, 1, 2) \
            else arr.tobytes()
        out.append(struct.pack(f"<QQiiiBBH{arr.ndim}qq", NDARRAY_MAGIC, 0, KDLCPU, 0, arr.ndim,
                               key[0], key[1], 1, *arr.shape, len(data)))
        out.append(data)
    return b"".join(out)


def load_npz(blob: bytes, bound: ParamsBound | None = None) -> dict[str, np.ndarray]:
    """Arrays from a ``numpy.savez`` archive (``np.savez(f, **params)``, e.g. from
    ``export_tvm``'s params), by name, in archive order, every member's declared sizes checked
    against ``bound`` before it is inflated (artifacts/npy.py); pickled (object) arrays and
    dtypes a param blob cannot hold are refused, so both formats load the same set of models."""
    bound = bound or unsized_params_bound()
    try:
        params = npy.load_npz(blob, (bound.array, bound.array_reason),
                              (bound.data, bound.reason))
    except npy.NPZ_ERRORS as e:
        raise ParamsError(f"not a readable numpy .npz archive ({e})") from None
    for name, arr in params.items():
        _dtype_code(name, arr)
    return params


def _read_params_file(path: str | os.PathLike[str], bound: ParamsBound) -> bytes:
    """The file's bytes within ``bound.file``; its magic is read first, so a stream that is
    neither format (/dev/zero, /dev/urandom) is refused after 8 bytes, not after the bound."""
    with BoundedFile(path, "params file") as f:
        head = f.read_upto(8)
        if head[:4] != NPZ_MAGIC and (len(head) < 8 or
                                      struct.unpack("<Q", head)[0] != PARAMS_MAGIC):
            raise ParamsError("not a TVM param blob (bad magic); expected a file written by "
                              "tvm.runtime.save_param_dict or minigraph build, or a numpy .npz")
        return head + f.read_rest(bound.file - len(head), bound.reason + " (with headers)")


def load_params_file(path: str | os.PathLike[str], copy: bool = True,
                     bound: ParamsBound | None = None) -> dict[str, np.ndarray]:
    """Read a params file: a TVM param blob or a numpy ``.npz`` archive, told apart by their
    magic, not by the name; ``InputError`` if unreadable or larger than ``bound`` (what the
    model's graph can hold, artifacts/bounds.py; None: the cap on a file of unknown size),
    ``ParamsError`` naming it if bad. ``copy``: as for ``load_params``."""
    bound = bound or unsized_params_bound()
    try:
        blob = _read_params_file(path, bound)
        return load_npz(blob, bound) if blob[:4] == NPZ_MAGIC else load_params(blob, copy)
    except ParamsError as e:
        raise ParamsError(f"{os.fspath(path)}: {e}") from None


def save_params_file(path: str | os.PathLike[str], params: Mapping[str, np.ndarray]) -> None:
    """Write a .params file atomically: a temp file in the same directory, then os.replace,
    so a crash never leaves a half-written file where a good one was."""
    blob = save_params(params)
    target = os.fspath(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target) or ".", prefix=".params-")
    except OSError as e:
        raise InputError(f"cannot write params file {target!r}: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except OSError as e:
        os.unlink(tmp)
        raise InputError(f"cannot write params file {target!r}: {e.strerror or e}") from None


@dataclass(frozen=True)
class ParamCheck:
    """How params fit a graph's arg nodes (what ``GraphExecutor::LoadParams`` would trip on)."""

    missing: tuple[str, ...]
    unknown: tuple[str, ...]
    mismatched: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not (self.missing or self.unknown or self.mismatched)

    def refuse_misfits(self, source: str) -> None:
        """A ParamsError naming what does not fit (unknown names, wrong shapes or dtypes) from
        ``source``; missing names are the caller's to judge."""
        if self.unknown or self.mismatched:
            unknown = f"{', '.join(self.unknown[:5])} not in graph.json" if self.unknown else ""
            raise ParamsError(f"{source} do not fit graph.json: " + "; ".join(
                [unknown] * bool(unknown) + list(self.mismatched[:5])) +
                " (were they saved for another model or build?)")

    def summary(self) -> str:
        """One line for the CLI, e.g. 'missing: p1, p2; unknown: x'."""
        parts = [f"{label}: {', '.join(items)}" for label, items in
                 (("missing", self.missing), ("unknown", self.unknown),
                  ("mismatched", self.mismatched)) if items]
        return "; ".join(parts) if parts else "ok"


def check_params(graph: Graph, params: Mapping[str, np.ndarray],
                 input_names: Iterable[str] = ()) -> ParamCheck:
    """Bind params to arg nodes by name and compare dtype and shape with the graph's entries.

    Arg nodes named in ``input_names`` are fed at run time, so they are not "missing"."""
    inputs = set(input_names)
    args = {graph.nodes[nid].name: graph.eid(nid) for nid in graph.arg_nodes}
    missing, mismatched = [], []
    for name, eid in args.items():
        if name not in params:
            if name not in inputs:
                missing.append(name)
            continue
        arr = np.asarray(params[name])
        want = _describe(graph.dltypes[eid], graph.shapes[eid])
        got = _describe(arr.dtype.name, arr.shape)
        if got != want:
            mismatched.append(f"{name}: expected {want}, got {got}")
    unknown = tuple(n for n in params if n not in args)
    return ParamCheck(tuple(missing), unknown, tuple(mismatched))
