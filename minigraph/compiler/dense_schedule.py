"""The dense / matmul schedule: ``out[i, j] = sum_k A[i, k] * W[k, j]`` (+ epilogue).

The weight is packed at build time to ``[N / cols, K, cols]`` (layout ``NK{cols}n``) when it is
a constant param, so each task streams one contiguous block of it: at batch 1 a dense layer is
a matrix-vector product bound by the weight's bytes (ResNet-50's FC: 8 MB for 4 MFLOP), and a
[K, N] row-major weight read ``cols`` columns at a time would use half of every cache line.
Tasks (column block x row block) run on the thread pool; a tile of rows x cols accumulators
lives in registers with the reduction around it, as in conv_schedule.py. Counterpart: TOPI's
x86 ``dense_pack`` schedule (which packs the weight with a layout_transform at run time).
"""
from __future__ import annotations

from .conv_schedule import (
    _epilogue,
    _extent,
    _register_tile,
    _split_init,
    _vector_loop,
    _weight_param,
    vector_part,
)
from .packing import Pack
from .target import VectorUnit


def is_dense(sch, block) -> bool:
    b = sch.get(block)
    return (b.name_hint in ("matmul", "NT_matmul", "T_matmul") and len(b.writes) == 1
            and len(b.writes[0].source.shape) == 2 and len(b.reads) >= 2
            and len(b.reads[1].source.shape) == 2)


def dense_tile(rows_total: int, cols_total: int, lanes: int, registers: int) -> tuple[int, int]:
    """(rows, cols): cols the widest multiple of 8 (ideally of the vector width) dividing N up
    to 4 vectors; rows as many as the registers allow, dividing M."""
    cols = next((c for c in range(4 * lanes, 7, -8) if cols_total % c == 0), cols_total)
    vecs = -(-cols // lanes)
    rows = max((r for r in range(1, min(rows_total, 8) + 1)
                if rows_total % r == 0 and r * vecs + vecs + 1 <= registers), default=1)
    return rows, cols


def schedule_dense(sch, block, unit: VectorUnit, lanes: int,
                   packable: frozenset[int]) -> tuple[str, tuple[Pack, ...]]:
    m, n = (int(d) for d in sch.get(block).writes[0].source.shape)
    rows, cols = dense_tile(m, n, lanes, unit.registers)
    packs: tuple[Pack, ...] = ()
    weight = _weight_param(sch, block)
    if weight is not None and weight in packable and cols < n:
        pack = Pack(weight, 1, cols, f"NK{cols}n")
        sch.transform_layout(block, ("read", 1), pack.index_map())
        packs = (pack,)
    out, has_epilogue = _epilogue(sch, block)
    i, j = sch.get_loops(out)
    io, ii = sch.split(i, [None, rows])
    jo, ji = sch.split(j, [None, cols])
    sch.reorder(jo, io, ii, ji)
    tasks = sch.fuse(jo, io)
    sch.compute_at(block, tasks)
    if has_epilogue:
        sch.set_scope(block, 0, "local")
    lane = vector_part(cols, lanes)
    reduce = _register_tile(sch, block, lane, outer=1)
    sch.unroll(ii)
    _vector_loop(sch, ji, lane)
    sch.parallel(tasks)
    _split_init(sch, block, reduce, lane, outer=1)
    packed = f", weight packed {packs[0].layout}" if packs else ""
    return f"dense tile {rows}x{cols} in registers{packed}, parallel x{_extent(sch, tasks)}", packs
