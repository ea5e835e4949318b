"""The schedule of a Winograd conv kernel (winograd.py's stages, with its fused epilogue).

* the input transform runs per tile on the thread pool: each tile's (m + 2)^2 window, one
  vector of channels at a time, through both passes in registers (the first pass is a
  ``local`` stage computed at the channel vector; the Select chains fold once unrolled);
* the (m + 2)^2 matrix products are register tiles as the direct conv's are (conv_tiles.py,
  rows of tiles by columns of output channels, the reduction over input channels around them),
  the transformed weight packed at build time so a tile's columns are one contiguous stream;
* the inverse transform is computed per output tile and channel vector, in registers, where
  the output (and the epilogue inlined into it: bias, residual add, relu) is written.
Counterpart in TVM: the schedules of TOPI's ``conv2d_winograd`` (arm_cpu, cuda), on x86 here.
"""
from __future__ import annotations

from .conv_schedule import _extent, _vector_loop, _weight_param
from .conv_tiles import TileProblem, vector_part
from .packing import Pack
from .target import VectorUnit
from .winograd import BLOCKS, OUTPUT_BLOCK, PAD_BLOCK

ROWS, INPUT, GEMM, OUT_COLS, OUT = BLOCKS


def is_winograd(sch) -> bool:
    """A kernel built around winograd.py's stages."""
    names = {sch.get(b).name_hint for b in sch.get_child_blocks(sch.get_sblock("root"))}
    return set(BLOCKS) <= names and OUTPUT_BLOCK in names


def schedule_winograd(sch, unit: VectorUnit, lanes: int, packable: frozenset[int]
                      ) -> tuple[list[str], tuple[Pack, ...]]:
    """Schedules the kernel in place; returns (notes, weight packs)."""
    gemm = sch.get_sblock(GEMM)
    alpha, _, tiles, out_c = (int(d) for d in sch.get(gemm).writes[0].source.shape)
    rows, cols = TileProblem(tiles, out_c, lanes, unit.registers, False).model_tile()
    if tiles % rows or out_c % cols:
        raise ValueError(f"tile {rows}x{cols} does not divide {tiles} tiles x {out_c} channels")
    packs = _pack_weight(sch, gemm, cols, alpha, packable)
    _input_transform(sch, lanes)
    _products(sch, gemm, rows, cols, lanes)
    m = _output_transform(sch, lanes)
    packed = f", weight packed {packs[0].layout}" if packs else ""
    return [f"winograd F({m}x{m},3x3): products tiled {rows}x{cols} in registers over "
            f"{alpha * alpha} x {tiles} tiles{packed}"], packs


def _pack_weight(sch, gemm, cols: int, alpha: int, packable: frozenset[int]) -> tuple[Pack, ...]:
    index = _weight_param(sch, gemm)
    out_c = int(sch.get(gemm).reads[1].source.shape[3])
    if index is None or index not in packable or cols >= out_c:
        return ()
    pack = Pack(index, 3, cols, f"O{alpha}{alpha}I{cols}o")
    sch.transform_layout(gemm, ("read", 1), pack.index_map())
    return (pack,)


def _input_transform(sch, lanes: int) -> None:
    """Padding copied once (parallel rows, vector channels); then per tile and channel
    vector, both passes of B^T d B unrolled."""
    pad = sch.get_sblock(PAD_BLOCK)
    n, h, w, c = sch.get_loops(pad)
    sch.parallel(sch.fuse(n, h, w))
    _vector_loop(sch, c, vector_part(_extent(sch, c), lanes))
    block = sch.get_sblock(INPUT)
    e, nu, p, c = sch.get_loops(block)
    lane = vector_part(_extent(sch, c), lanes)
    c_out, c_in = sch.split(c, [None, lane])
    sch.reorder(p, c_out, e, nu, c_in)
    sch.unroll(e)
    sch.unroll(nu)
    sch.vectorize(c_in)
    sch.parallel(p)
    rows = sch.get_sblock(ROWS)
    sch.compute_at(rows, c_out)
    sch.set_scope(rows, 0, "local")
    _unrolled(sch, sch.get_loops(rows)[2:])


def _products(sch, gemm, rows: int, cols: int, lanes: int) -> None:
    """(output-channel block, a, a, row of tiles) on the pool: one block of the transformed
    weight stays in cache while the rows sweep it; the register tile inside."""
    e, nu, p, k, ci = sch.get_loops(gemm)
    p_out, p_in = sch.split(p, [None, rows])
    k_out, k_in = sch.split(k, [None, cols])
    sch.reorder(k_out, e, nu, p_out, ci, p_in, k_in)
    sch.parallel(sch.fuse(k_out, e, nu, p_out))
    sch.unroll(p_in)
    lane = vector_part(cols, lanes)
    _vector_loop(sch, k_in, lane)
    init = sch.decompose_reduction(gemm, ci)
    _unrolled(sch, sch.get_loops(init)[1:], lane)


def _output_transform(sch, lanes: int) -> int:
    """The epilogue inlined into the output; per output tile and channel vector, both passes
    of A^T M A in registers. Returns m."""
    out = _inline_epilogue(sch)
    m = int(sch.get(sch.get_sblock(OUT)).writes[0].source.shape[0])
    n, h, w, k = sch.get_loops(out)
    h_out, h_in = sch.split(h, [None, m])
    w_out, w_in = sch.split(w, [None, m])
    lane = vector_part(_extent(sch, k), lanes)
    k_out, k_in = sch.split(k, [None, lane])
    sch.reorder(n, h_out, w_out, k_out, h_in, w_in, k_in)
    sch.parallel(sch.fuse(n, h_out, w_out))
    sch.unroll(h_in)
    sch.unroll(w_in)
    sch.vectorize(k_in)
    for name in (OUT, OUT_COLS):
        stage = sch.get_sblock(name)
        sch.compute_at(stage, k_out)
        sch.set_scope(stage, 0, "local")
        _unrolled(sch, sch.get_loops(stage)[2:])
    return m


def _inline_epilogue(sch):
    """Inlines the NHWC gather and the elementwise ops after it into the kernel's output
    block; returns that block."""
    root = sch.get_sblock("root")
    outputs = [b for b in sch.get_output_blocks(root)]
    if len(outputs) != 1:
        raise ValueError(f"{len(outputs)} output blocks")
    out_name = sch.get(outputs[0]).name_hint
    names = [sch.get(b).name_hint for b in sch.get_child_blocks(root)]
    for name in names[names.index(OUTPUT_BLOCK):]:
        if name != out_name:
            sch.compute_inline(sch.get_sblock(name))
    return sch.get_sblock(out_name)


def _unrolled(sch, loops, lane: int | None = None) -> None:
    """Every loop unrolled but the innermost, vectorised (by ``lane``, else whole)."""
    for lp in loops[:-1]:
        sch.unroll(lp)
    _vector_loop(sch, loops[-1], lane or _extent(sch, loops[-1]))
