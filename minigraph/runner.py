"""``minigraph run``: inputs from .npy files or a seeded generator, one run, output summaries."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .errors import InputError
from .executor import Executor


def parse_input_args(items: list[str]) -> dict[str, np.ndarray]:
    """NAME=FILE.npy pairs -> arrays (never unpickles: allow_pickle=False)."""
    inputs = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise InputError(f"--input expects NAME=FILE.npy, got '{item}'")
        try:
            inputs[name] = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as err:
            raise InputError(f"--input {name}: cannot read {path} as .npy: {err}") from err
    return inputs


def random_inputs(ex: Executor, given: dict, seed: int) -> dict[str, np.ndarray]:
    """Seeded data for every arg node that has neither a param nor a given value."""
    rng = np.random.default_rng(seed)
    out = {}
    for node_id in ex.graph.arg_nodes:
        name = ex.graph.nodes[node_id].name
        if name in given or name in ex.bound_params:
            continue
        eid = ex.graph.eid(node_id)
        out[name] = rng.standard_normal(ex.graph.shapes[eid]).astype(ex.graph.dltypes[eid])
    return out


def checksum(arr: np.ndarray) -> str:
    return f"sum={float(np.sum(arr, dtype=np.float64)):.6g} absmax={float(np.max(np.abs(arr))) if arr.size else 0:.6g}"


def run_once(lib: str, graph: str, params: str | None, input_items: list[str],
             out_dir: str | None, seed: int) -> list[str]:
    """Loads, runs once, returns one summary line per output (and saves them if asked)."""
    ex = Executor.from_files(lib, graph, params)
    given = parse_input_args(input_items)
    ex.set_input(**given, **random_inputs(ex, given, seed))
    ex.run_checked()
    lines = []
    for i in range(ex.get_num_outputs()):
        arr = ex.get_output(i).numpy()
        head = ex.graph.heads[i]
        lines.append(f"output {i} ({ex.graph.nodes[head.node_id].name}): {arr.dtype}"
                     f"{list(arr.shape)} {checksum(arr)}")
        if out_dir:
            Path(out_dir).mkdir(parents=True, exist_ok=True)
            tmp = Path(out_dir) / f".output_{i}.tmp.npy"
            np.save(tmp, arr)
            os.replace(tmp, Path(out_dir) / f"output_{i}.npy")
    return lines
