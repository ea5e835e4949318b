"""Every arg node gets a value, and says where it came from: given inputs, the params file,
seeded data for inputs nobody gave, and for weights nobody gave, a refusal (or ``--fill``).

graph.json cannot tell a model input from a weight (both are arg nodes). build.json can
(``minigraph build`` writes it); without one, the inputs are the names given with ``--input``
and the first arg node that is not an embedded constant, as relay.build and the Relax
frontends order them (``data`` first). The others are weights: a run on weights nobody set is
what TVM's debug executor measured when ``load_params`` was forgotten, so it is never timed
silently. Counterpart: ``GraphModule.load_params`` / ``set_input``.
"""
from __future__ import annotations

from typing import Iterable, Mapping

import numpy as np

from ..artifacts.buildinfo import declared_inputs
from ..artifacts.params import np_dtype
from ..errors import ParamsError
from ..runtime.executor import Executor
from ..runtime.opened import OpenedModel
from ..runtime.sources import Source
from .inputs import seeded

FILLS = ("random", "zeros", "uninitialized")
FILL_HELP = ("weights nobody gave: random (seeded, scaled by fan-in), zeros, or uninitialized "
             "(storage as the allocator left it: what TVM's debug executor ran on when "
             "load_params was never called)")


class MissingValuesError(ParamsError):
    """Arg nodes that are weights have no value and no ``--fill`` was asked for."""


def model_inputs(model: OpenedModel, given: Iterable[str] = ()) -> frozenset[str]:
    """The arg nodes that are the model's inputs (every other arg node is a weight)."""
    ex, given = model.executor, frozenset(given)
    declared = declared_inputs(ex.input_names(), model.build)
    if declared is not None:
        return declared | given
    first = next((n for n in ex.input_names() if ex.sources[n].kind != "constant"), None)
    return given | ({first} if first is not None else set())


def _missing(names: list[str], total: int, model: OpenedModel) -> MissingValuesError:
    why = "no params file was given" if model.files.params is None else \
        f"{model.files.params} has no value for them"
    return MissingValuesError(
        f"{len(names)} of {total} arg nodes have no value ({why}): {', '.join(names[:5])}"
        + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        + "; pass --params with the params built for this model, or --fill random|zeros|"
        "uninitialized to time made-up weights (a profile then records which)")


def _fill(ex: Executor, names: list[str], fill: str, seed: int) -> None:
    if fill == "uninitialized":  # nothing is written: the storage keeps what it held
        for n in names:
            ex.sources[n] = Source("unset", "--fill uninitialized: as the allocator left it")
        return
    values = seeded(ex, names, seed, scaled=True) if fill == "random" else \
        {n: np.zeros(ex.graph.shapes[ex.entry_of(n)], np_dtype(ex.graph.dltypes[
            ex.entry_of(n)])) for n in names}
    detail = f"--fill random: normal / sqrt(fan-in), seed {seed}" if fill == "random" else \
        "--fill zeros"
    ex.set_values(values, Source("filled", detail))


def prepare_values(model: OpenedModel, given: Mapping[str, np.ndarray] | None = None,
                   fill: str | None = None, seed: int = 0) -> frozenset[str]:
    """Sets the given inputs, seeded data for the other inputs, and ``fill`` for weights
    nobody gave (MissingValuesError without one); returns the model's input names."""
    if fill is not None and fill not in FILLS:
        raise ParamsError(f"--fill must be one of {', '.join(FILLS)}, got {fill!r}")
    ex, given = model.executor, dict(given or {})
    ex.set_input(**given)
    inputs = model_inputs(model, given)
    unset = [n for n in ex.input_names() if ex.sources[n].kind == "unset"]
    ex.set_values(seeded(ex, [n for n in unset if n in inputs], seed),
                  Source("generated", f"standard normal, seed {seed}"))
    weights = [n for n in unset if n not in inputs]
    if weights and fill is None:
        raise _missing(weights, len(ex.input_names()), model)
    if fill is not None and not weights:
        raise _nothing_to_fill(fill, model, [n for n in ex.input_names() if n not in inputs])
    if weights:
        _fill(ex, weights, fill, seed)
    return inputs


def _nothing_to_fill(fill: str, model: OpenedModel, weights: list[str]) -> ParamsError:
    """``--fill`` with every weight given: it would change nothing, and the user who asked
    for zeros would time the params instead, believing otherwise."""
    where = f"from {model.files.params}" if model.files.params is not None else "embedded"
    have = f"every weight already has a value ({where})" if weights else \
        "the model has no weights"
    return ParamsError(f"--fill {fill}: {have}, so nothing would be filled; --fill is for "
                       "weights nobody gave: drop it (or pass a params file without the "
                       "weights to fill)")
