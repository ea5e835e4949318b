"""``minigraph run``: inputs from .npy files or seeded, the weights checked (values/policy.py),
one checked run (every kernel failure attributed to its op, every op's outputs counted by the
data check), one summary line per output."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..artifacts.model_files import ModelFiles
from ..errors import InputError
from ..results.data import DataReport
from ..runtime.doors import open_model
from .check import check_values
from .inputs import checksum, read_inputs, save_outputs
from .policy import prepare_values


@dataclass(frozen=True)
class RunResult:
    lines: tuple[str, ...]   # one per output: name, dtype, shape, checksum
    data: DataReport


def run_once(files: ModelFiles, input_items: list[str], out_dir: str | None, seed: int,
             force: bool = False, fill: str | None = None,
             symbols: dict[str, int] | None = None) -> RunResult:
    """Loads, runs once, returns a summary line per output and the data report (and saves the
    outputs if asked)."""
    if out_dir is not None and Path(out_dir).exists() and not Path(out_dir).is_dir():
        raise InputError(f"--out {out_dir}: exists and is not a directory")
    # bad input files fail before loading the model, each read no further than graph.json's
    # size of it (a stream such as /dev/zero included)
    given = read_inputs(input_items, files)
    model = open_model(files, force=force, complete=False, symbols=symbols, inputs=given)
    inputs = prepare_values(model, given, fill, seed)
    report, _ = check_values(model.executor, inputs, run=True)  # the run itself, op by op
    ex, arrays, lines = model.executor, [], []
    for i in range(ex.get_num_outputs()):
        arr = ex.get_output(i).numpy()
        head = ex.graph.heads[i]
        lines.append(f"output {i} ({ex.graph.nodes[head.node_id].name}): {arr.dtype}"
                     f"{list(arr.shape)} {checksum(arr)}")
        arrays.append(arr)
    if out_dir:
        save_outputs(out_dir, arrays)
    return RunResult(tuple(lines), report)
