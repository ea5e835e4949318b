"""``minigraph run``: inputs from .npy files or a seeded generator, one run, output summaries.

An --input file is read within what the model can take: its .npy header alone first, its
declared data size checked against graph.json's size of that input (``model_input_bounds``;
a Relax VM function, whose sizes come from its inputs: the unsized cap) and against the file
before any data is read; a stream (/dev/zero, a FIFO) is read no further than that.
"""
from __future__ import annotations

import io
import math
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from ..artifacts import npy
from ..artifacts.bounds import InputBound, input_bounds
from ..artifacts.graph_json import load_graph
from ..artifacts.model_files import ModelFiles
from ..artifacts.params import np_dtype
from ..errors import InputError, last_line
from ..fileio import UNSIZED_REASON, BoundedFile, memory_cap, sizes_text, write_atomic
from ..runtime.executor import Executor


def _data_limit(name: str, bound: InputBound | None) -> tuple[int, str]:
    """(most bytes of data, what set it) for the --input file of arg node ``name``."""
    if bound is not None:
        return bound.nbytes, f"input {name!r} ({bound.describe}) of the model holds"
    return memory_cap(), UNSIZED_REASON


def load_npy(name: str, path: str, bound: InputBound | None = None) -> np.ndarray:
    """One .npy file; anything else (an .npz, a pickle, text, a directory) is an InputError.

    The header is read alone first (np.load would allocate whatever it claims): its data size
    is checked against ``bound`` (the model's size of this input; None: the cap on a read of
    unknown size) and against what the file holds before the data is read, and object arrays
    are refused: nothing is unpickled. A stream (/dev/zero, a FIFO) is read no further."""
    where = f"--input {name}: {path}"
    limit, reason = _data_limit(name, bound)
    with BoundedFile(path, f"--input {name} file") as f:
        try:
            header = npy.read_header(f.read_upto)
        except npy.NpyError as err:
            raise InputError(f"{where}: {err}") from None
        need = header.nbytes
        if need > limit:
            size, most = sizes_text(need, limit)
            raise InputError(f"{where}: its header declares {header.describe()} "
                             f"({size} of data), more than the {most} {reason}; refused "
                             "before reading it")
        data = _read_data(f, need, f"{where}: its header says {header.describe()} ({need} "
                                   "bytes of data) but")
    return header.array(data).copy()


def _read_data(f: BoundedFile, need: int, says: str) -> bytes:
    """Exactly the ``need`` bytes of data left: a regular file holding other than that is
    refused unread; a stream is read one byte further, to see that it ends there."""
    have = None if f.size is None else f.size - f.pos
    data = f.read_upto(need + 1) if have is None or have == need else b""
    if len(data) != need:
        got = f"{have}" if have is not None else \
            f"only {len(data)}" if len(data) < need else f"more than {need}"
        raise InputError(f"{says} {got} bytes follow; the file is truncated or corrupt")
    return data


def input_paths(items: list[str]) -> dict[str, str]:
    """NAME=FILE.npy pairs -> name -> path, nothing read (checked: a name and a path each)."""
    paths = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise InputError(f"--input expects NAME=FILE.npy, got '{item}'")
        paths[name] = path
    return paths


def parse_input_args(items: list[str], bounds: Mapping[str, InputBound] | None = None
                     ) -> dict[str, np.ndarray]:
    """NAME=FILE.npy pairs -> arrays (never unpickles), each read within ``bounds[NAME]``
    (``model_input_bounds``; a name without one: the cap on a read of unknown size)."""
    bounds = bounds or {}
    return {name: load_npy(name, path, bounds.get(name))
            for name, path in input_paths(items).items()}


def read_inputs(items: list[str], files: ModelFiles) -> dict[str, np.ndarray]:
    """``parse_input_args`` for the model at ``files``: each file read no further than
    graph.json's size of its input (``model_input_bounds``), before the model is opened."""
    return parse_input_args(items, model_input_bounds(files) if items else None)


def model_input_bounds(files: ModelFiles) -> dict[str, InputBound]:
    """The most each input can hold, from graph.json's arg nodes, known before the model is
    opened; {} without a graph.json (a Relax VM function's sizes come from its inputs) or when
    graph.json cannot be read (the model's door reports that, in its order)."""
    if files.graph is None:
        return {}
    try:
        return input_bounds(load_graph(files.graph))
    except InputError:
        return {}


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
