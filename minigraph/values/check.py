"""The data check: per tensor, how many values are subnormal, NaN, Inf or zero.

The arg nodes (inputs and weights) are counted as they are bound, before anything is timed;
the activations in one checked run, op by op, each op's outputs counted right after it ran
(storage is shared between entries whose lifetimes do not overlap, so after a whole run an
entry may hold a later one's data). An op with an argument that holds special values is listed
with all its arguments and their roles: an input, a weight, an activation (with the op that
produced it) or one of its own outputs. numpy over ResNet-50's ~100 MB of weights takes tens
of milliseconds.
"""
from __future__ import annotations

import numpy as np

from ..measure.inflight import FLIGHT
from ..results.data import ArgValues, DataReport, OpValues, ValueCounts
from ..runtime.bind import BoundOp
from ..runtime.debug import DebugExecutor


def count_values(arr: np.ndarray) -> ValueCounts:
    """The counts of one array (integers and booleans: only zeros can be special-free)."""
    flat = np.asarray(arr).reshape(-1)
    if flat.dtype.kind != "f" and flat.dtype.name != "bfloat16":
        return ValueCounts(int(flat.size), zero=int(np.count_nonzero(flat == 0)))
    x = flat.astype(np.float32) if flat.dtype.name == "bfloat16" else flat
    tiny = np.finfo(np.float32 if flat.dtype.name == "bfloat16" else x.dtype).tiny
    a = np.abs(x)
    nan = int(np.count_nonzero(np.isnan(x)))
    inf = int(np.count_nonzero(np.isinf(x)))
    zero = int(np.count_nonzero(a == 0))
    sub = int(np.count_nonzero(a < tiny)) - zero  # NaN compares False: not counted
    return ValueCounts(int(flat.size), sub, nan, inf, zero)


def _arg_counts(ex: DebugExecutor) -> dict[int, ValueCounts]:
    return {ex.graph.eid(n): count_values(ex.views[ex.graph.eid(n)].numpy())
            for n in ex.graph.arg_nodes}


def _producers(ex: DebugExecutor) -> dict[int, int]:
    """Entry id -> the op (index) that writes it."""
    return {eid: op.index for op in ex.ops for eid in op.output_eids}


def _args(op: BoundOp, counts: dict[int, ValueCounts], roles: dict[int, str],
          producers: dict[int, int], names: dict[int, str]) -> tuple[ArgValues, ...]:
    eids = [(e, roles.get(e, "activation")) for e in op.input_eids] + \
        [(e, "output") for e in op.output_eids]
    if not any(counts[e].special for e, _ in eids if e in counts):
        return ()
    return tuple(ArgValues(k, e, names.get(e, f"entry {e}"), role,
                           producers.get(e) if role == "activation" else None, counts[e])
                 for k, (e, role) in enumerate(eids) if e in counts)


Captured = dict[int, list[np.ndarray]]  # op index -> copies of its inputs as it read them


def _checked_run(ex: DebugExecutor, counts: dict[int, ValueCounts]) -> Captured:
    """One run op by op: each op's outputs counted as it writes them, and the inputs of every
    op that reads subnormal values copied as it reads them (for values/cost.py)."""
    captured: Captured = {}
    FLIGHT.phase("the checked run")  # what a crash report says was running
    for op in ex.ops:
        if any(counts[e].subnormal for e in op.input_eids if e in counts):
            captured[op.index] = [ex.views[e].numpy() for e in op.input_eids]
        ex.run_op(op.index)
        counts.update({e: count_values(ex.views[e].numpy()) for e in op.output_eids})
    return captured


def check_values(ex: DebugExecutor, inputs: frozenset[str], *, run: bool
                 ) -> tuple[DataReport, Captured]:
    """The data report of ``ex`` as it is bound; ``run``: also one checked run, counting each
    op's outputs as it writes them (do it after anything that must see a first run)."""
    names = {ex.graph.eid(n): ex.graph.nodes[n].name for n in ex.graph.arg_nodes}
    roles = {e: "input" if name in inputs else "weight" for e, name in names.items()}
    counts = _arg_counts(ex)
    producers = _producers(ex)
    captured = _checked_run(ex, counts) if run else {}
    names.update({e: ex.ops[i].name for e, i in producers.items()})
    ops = tuple(OpValues(op.index, op.name, a) for op in ex.ops
                if (a := _args(op, counts, roles, producers, names)))
    sources = {n: {**s.to_dict(), "role": "input" if n in inputs else "weight"}
               for n, s in ex.sources.items()}
    values = {ex.graph.nodes[n].name: counts[ex.graph.eid(n)] for n in ex.graph.arg_nodes}
    return DataReport(sources, values, ops, activations_checked=run), captured
