"""``minigraph run``: inputs from .npy files or a seeded generator, one run, output summaries."""
from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Iterable

import numpy as np
from numpy.lib import format as npy_format

from ..artifacts.params import np_dtype
from ..errors import InputError, last_line
from ..fileio import read_file, write_atomic
from ..runtime.executor import Executor

_NPY_MAGIC = b"\x93NUMPY"


def load_npy(name: str, path: str) -> np.ndarray:
    """One .npy file; anything else (an .npz, a pickle, text, a directory) is an InputError.

    The header is checked against the file's size before any array is made (np.load would
    allocate whatever the header claims), and object arrays are refused: nothing is unpickled."""
    blob = read_file(path, f"--input {name} file")
    where = f"--input {name}: {path}"
    if not blob.startswith(_NPY_MAGIC):
        raise InputError(f"{where} is not a .npy file (no NumPy magic); save it with numpy.save")
    f = io.BytesIO(blob)
    try:
        version = npy_format.read_magic(f)
        read = {(1, 0): npy_format.read_array_header_1_0,
                (2, 0): npy_format.read_array_header_2_0}.get(version)
        if read is None:
            raise ValueError(f".npy format version {version} is not supported (1.0, 2.0 are)")
        shape, fortran, dtype = read(f)
    except ValueError as err:
        raise InputError(f"{where} has a corrupt .npy header: {last_line(err)}") from None
    if dtype.hasobject:
        raise InputError(f"{where} holds Python objects; minigraph never unpickles: save a "
                         "numeric array")
    need, have = math.prod(shape) * dtype.itemsize, len(blob) - f.tell()
    if need != have:
        raise InputError(f"{where}: its header says {dtype}{list(shape)} ({need} bytes of data) "
                         f"but {have} bytes follow; the file is truncated or corrupt")
    arr = np.frombuffer(blob, dtype, offset=f.tell(), count=math.prod(shape))
    return arr.reshape(shape, order="F" if fortran else "C").copy()


def input_paths(items: list[str]) -> dict[str, str]:
    """NAME=FILE.npy pairs -> name -> path, nothing read (checked: a name and a path each)."""
    paths = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise InputError(f"--input expects NAME=FILE.npy, got '{item}'")
        paths[name] = path
    return paths


def parse_input_args(items: list[str]) -> dict[str, np.ndarray]:
    """NAME=FILE.npy pairs -> arrays (never unpickles: allow_pickle=False)."""
    return {name: load_npy(name, path) for name, path in input_paths(items).items()}


def random_inputs(ex: Executor, given: dict, seed: int) -> dict[str, np.ndarray]:
    """Seeded data for every arg node that has neither a param nor a given value."""
    names = [ex.graph.nodes[n].name for n in ex.graph.arg_nodes]
    return seeded(ex, [n for n in names if n not in given and n not in ex.bound_params], seed)


def seeded(ex: Executor, names: Iterable[str], seed: int, scaled: bool = False
           ) -> dict[str, np.ndarray]:
    """Seeded standard-normal data for ``names``; ``scaled``: divided by sqrt(fan-in), taken
    as the tensor's size over its largest dimension (HWIO, OIHW and dense weights alike), so
    that made-up weights neither blow activations up nor make them vanish."""
    rng = np.random.default_rng(seed)
    out = {}
    for name in names:
        eid = ex.entry_of(name)
        shape, dtype = ex.graph.shapes[eid], np_dtype(ex.graph.dltypes[eid])
        values = rng.standard_normal(shape)
        if scaled and len(shape) >= 2 and max(shape) > 0:
            values /= math.sqrt(max(1, math.prod(shape) // max(shape)))
        elif scaled:
            values *= 0.01  # biases and scales: small
        out[name] = values.astype(dtype)
    return out


def save_outputs(out_dir: str, arrays: list[np.ndarray]) -> None:
    """output_<i>.npy files, each written atomically (never half a file)."""
    try:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(f"--out {out_dir}: cannot write outputs there: "
                         f"{err.strerror or last_line(err)}") from None
    for i, arr in enumerate(arrays):
        buf = io.BytesIO()
        np.save(buf, arr)
        write_atomic(Path(out_dir) / f"output_{i}.npy", buf.getvalue())


def checksum(arr: np.ndarray) -> str:
    return f"sum={float(np.sum(arr, dtype=np.float64)):.6g} absmax={float(np.max(np.abs(arr))) if arr.size else 0:.6g}"
