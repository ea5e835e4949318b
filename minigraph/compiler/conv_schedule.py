"""The NHWC conv2d schedule (dense, strided, 1x1, 7x7 and grouped alike; not depthwise).

Plays the role of TVM's x86 ``conv2d_NCHWc`` TOPI schedule, for NHWC activations and HWIO
weights (the layout minigraph builds every conv in):

* the output is cut into tiles of ``rows`` consecutive output pixels along W by ``cols`` output
  channels (``cols`` a multiple of the vector width); a tile's accumulators live in a ``local``
  buffer that LLVM keeps in vector registers (rows x cols/lanes of them, sized from the target's
  register count), and the reduction (kh, kw, ci) runs around the tile; where no tile dividing
  W keeps the loads from bounding it (16 registers: AVX2, SSE), the last tile of a row may be
  shorter (conv_tiles.py chooses the tile; ``minigraph build --tune`` measures candidates);
* the weight is packed at build time to ``OHWI{cols}o`` when it is a constant param, so a
  tile's weights are one contiguous stream (up to 10x faster for the late ResNet layers whose
  HWIO rows are kilobytes apart);
* the outer loops run (batch, channel block, output row) on the thread pool: one channel
  block's packed weights stay in L2 while a thread sweeps the output rows;
* zero padding is materialised once (a vectorised copy), not tested in the inner loop, except
  for convs over <= 16 input channels (inlined: the copy would cost more than the tests) and
  grouped convs (a padded window per tile, in L1);
* a tile's columns are whole vector registers (three <16 x float>, never one <48 x float>);
  the elementwise epilogue (bias, residual add, relu) is applied per tile from registers;
* a conv whose output channels were padded to whole vectors (channel_padding.py: the kernel's
  output has fewer channels than its conv) gets one tile across all of them, and its output
  is computed at the tile, written in vectors that divide its own channel count.

Depthwise convs (one input channel per group) are left to schedules.py's generic reduction
tiling: they reduce over 3x3 taps only, so there is no channel reduction to amortise a register
tile's loads over, and what decides their time is streaming whole pixels through the caches.
This rule's (row, channel block) tasks read one block's slice of every pixel (192 of a
144-channel pixel's 576 bytes); the generic tiling, padding tested inline, ran MobileNet-V2's
depthwise convs 1.5-4x faster inside the model (conv2d7, 56x56x144: 97 us against 376 us at
one thread; ORT 84 us).
"""
from __future__ import annotations

from tvm.tirx.analysis import undefined_vars

from .conv_tiles import TileProblem, vector_part
from .packing import Pack
from .target import VectorUnit

CONV_BLOCKS = ("conv2d_nhwc", "group_conv2d_nhwc", "depthwise_conv2d_nhwc")
# Tasks are (channel block, output row) for weights above this size, so a block's weights stay
# in L2 while a thread sweeps the rows; (output row, channel block) below it, so each thread
# writes its own band of the output instead of every other cache line of all of it.
ROW_MAJOR_WEIGHT_NBYTES = 256 << 10
INLINE_PAD_CHANNELS = 16  # a conv over this many input channels or fewer tests its padding inline
_REDUCE = 2


def is_conv_nhwc(sch, block) -> bool:
    """An NHWC conv block this rule schedules (a depthwise one is not: module docstring)."""
    name = sch.get(block).name_hint
    return any(name == n or name.startswith(n + "_") for n in CONV_BLOCKS) and \
        not is_depthwise(sch, block)


def is_depthwise(sch, block) -> bool:
    """A grouped NHWC conv with one input channel per group: its HWIO weight has I = 1."""
    stmt = sch.get(block)
    if not stmt.name_hint.startswith(("group_", "depthwise_")) or len(stmt.reads) < 2:
        return False
    weight = [int(d) for d in stmt.reads[1].source.shape]
    return len(weight) == 4 and weight[2] == 1


def _loop_kinds(sch, loops) -> list[str]:
    """'S' or 'R' per loop: the kind of the block iter var the loop feeds."""
    realize = sch.get(loops[-1]).body
    while not hasattr(realize, "iter_values"):
        realize = realize.body if hasattr(realize, "body") else realize.seq[0]
    kinds = []
    for lp in loops:
        var = sch.get(lp).loop_var
        kind = "S"
        for iv, val in zip(realize.block.iter_vars, realize.iter_values):
            if any(v.same_as(var) for v in undefined_vars(val)):
                kind = "R" if int(iv.iter_type) == _REDUCE else "S"
        kinds.append(kind)
    return kinds


def _weight_param(sch, block) -> int | None:
    """Index of the PrimFunc parameter the conv reads as its weight (read 1), if it is one."""
    source = sch.get(block).reads[1].source
    for i, p in enumerate(sch.mod["main"].params):
        if p.same_as(source):
            return i
    return None


def _epilogue(sch, block):
    """Inlines the elementwise chain after the conv; returns the output block that consumes the
    conv (a ``local`` copy stage is made when the conv writes the kernel output itself)."""
    root = sch.get_sblock("root")
    outputs = {sch.get(b).name_hint for b in sch.get_output_blocks(root)}
    name = sch.get(block).name_hint
    if name in outputs:
        return sch.cache_write(block, 0, "local"), False
    names = [sch.get(b).name_hint for b in sch.get_child_blocks(root)]
    for later in names[names.index(name) + 1:]:
        if later not in outputs:
            sch.compute_inline(sch.get_sblock(later))
    (out,) = [sch.get_sblock(n) for n in outputs]
    return out, True


def _out_channels(sch, block) -> int:
    return int(sch.get(block).writes[0].source.shape[-1])


def _weight_nbytes(sch, block) -> int:
    n = 1
    for d in sch.get(block).reads[1].source.shape:
        n *= int(d)
    return 4 * n


def _inlines_padding(sch, block) -> bool:
    """A dense conv over few input channels tests its padding inline (_padding_blocks)."""
    read = [int(d) for d in sch.get(block).reads[0].source.shape]
    return len(read) == 4 and read[3] <= INLINE_PAD_CHANNELS \
        and not sch.get(block).name_hint.startswith(("group_", "depthwise_"))


def _padding_blocks(sch, block) -> list[str]:
    """Producers of the conv: an identity copy is inlined; a real padding stays materialised
    (a bounds test per multiply-add costs more than one copy of the input: 2.2x slower for a
    3x3 conv over 256 channels) except where the copy is the larger cost: few input channels
    (3 for an RGB stem: 3.5x faster inlined)."""
    kept = []
    inline_pad = _inlines_padding(sch, block)
    for producer in sch.get_producers(block):
        if "if_then_else" in str(sch.get(producer).body) and not inline_pad:
            kept.append(sch.get(producer).name_hint)
        else:
            sch.compute_inline(producer)
    return kept


def tile_problem(sch, block, unit: VectorUnit, lanes: int) -> TileProblem:
    """What the conv block's register tile is chosen for (conv_tiles.py)."""
    out_shape = [int(d) for d in sch.get(block).writes[0].source.shape]
    if len(out_shape) != 4:
        raise ValueError(f"conv output has {len(out_shape)} dims, expected NHWC")
    # a tail loop over inlined padding tests ran 1.4x slower (ResNet's RGB stem): none there
    grouped = sch.get(block).name_hint.startswith(("group_", "depthwise_"))
    return TileProblem(out_shape[2], out_shape[3], lanes, unit.registers,
                       tails=not grouped and not _inlines_padding(sch, block),
                       whole=_padded(sch, block))


def _padded(sch, block) -> bool:
    """The kernel's output has fewer channels than the conv computes (channel_padding.py)."""
    root = sch.get_sblock("root")
    return any(_out_channels(sch, b) < _out_channels(sch, block)
               for b in sch.get_output_blocks(root))


def schedule_conv_nhwc(sch, block, unit: VectorUnit, lanes: int, packable: frozenset[int],
                       tile: tuple[int, int] | None = None
                       ) -> tuple[str, tuple[Pack, ...], list[str]]:
    """Schedules the conv block with ``tile`` (rows, cols), by default the model's
    (conv_tiles.py ``conv_tile``); returns (note, weight packs, blocks left for the spatial
    rule)."""
    p = tile_problem(sch, block, unit, lanes)
    rows, cols = tile or p.model_tile()
    if p.out_c % cols or (p.whole and cols != p.out_c):
        raise ValueError(f"no vector tile divides {p.out_c} channels")
    pads = _padding_blocks(sch, block)
    packs: tuple[Pack, ...] = ()
    weight = _weight_param(sch, block)
    if weight is not None and weight in packable and cols < p.out_c:
        pack = Pack(weight, 3, cols, f"OHWI{cols}o")
        sch.transform_layout(block, ("read", 1), pack.index_map())
        packs = (pack,)
    out, has_epilogue = _epilogue(sch, block)  # without one, the conv now writes a local copy
    # output channels padded to whole vectors (channel_padding.py, p.whole): the conv's tile
    # is cut from its own (padded) loops and the output, fewer channels, computed at it
    n, h, w, c = sch.get_loops(block if p.whole else out)[:4]
    wo, wi = sch.split(w, [None, rows])  # a tail: TVM bounds the last tile's rows
    co, ci = sch.split(c, [None, cols])
    if _weight_nbytes(sch, block) <= ROW_MAJOR_WEIGHT_NBYTES:
        sch.reorder(n, h, co, wo, wi, ci)  # small weights: each thread a band of rows
        tile_loop = sch.fuse(n, h, co)
    else:
        sch.reorder(n, co, h, wo, wi, ci)  # big weights: a channel block's stay in L2
        tile_loop = sch.fuse(n, co, h)
    if p.whole:
        sch.reverse_compute_at(out, wo)
        wi, ci = sch.get_loops(out)[-2:]
    else:
        sch.compute_at(block, wo)
    if has_epilogue:
        sch.set_scope(block, 0, "local")
    lane = vector_part(cols, lanes)
    if pads and sch.get(block).name_hint.startswith(("group_", "depthwise_")):
        pads = _pad_per_tile(sch, pads, wo, lane)
    reduce = _register_tile(sch, block, lane)
    sch.unroll(wi)
    _vector_loop(sch, ci, vector_part(_extent(sch, ci), lanes))
    sch.parallel(tile_loop)
    _split_init(sch, block, reduce, lane)
    packed = f", weight packed {packs[0].layout}" if packs else ""
    return (f"conv tile {rows}x{cols} in registers{packed}, parallel x{_extent(sch, tile_loop)}",
            packs, pads)


def _pad_per_tile(sch, pads: list[str], loop, lane: int) -> list[str]:
    """A grouped conv's tile reads only its own groups' channels: its padded window is made
    per tile (it stays in L1) instead of a padded copy of the whole input (as much memory
    traffic as the conv itself). Returns the padding blocks still at the root (none)."""
    for name in pads:
        pad = sch.get_sblock(name)
        sch.compute_at(pad, loop)
        sch.set_scope(pad, 0, "local")  # a window per tile, not a whole padded input
        _vector_loop(sch, sch.get_loops(pad)[-1], lane)
    return []


def _vector_loop(sch, loop, lane: int) -> None:
    """Vectorises ``loop`` by ``lane`` elements, the register count unrolled around it."""
    if _extent(sch, loop) > lane:
        regs, loop = sch.split(loop, [None, lane])
        sch.unroll(regs)
    sch.vectorize(loop)


def _register_tile(sch, block, lane: int, outer: int = 2) -> list:
    """Reduction loops outside, the tile (rows unrolled, channels vectorised) inside; returns
    the reduction loops. ``outer``: the loops above the tile (where it was computed at)."""
    loops = sch.get_loops(block)[outer:]
    kinds = _loop_kinds(sch, loops)
    spatial = [lp for lp, k in zip(loops, kinds) if k == "S"]
    reduce = [lp for lp, k in zip(loops, kinds) if k == "R"]
    if not spatial:
        raise ValueError("conv tile has no spatial loop")
    sch.reorder(*reduce, *spatial)
    for lp in spatial[:-1]:
        sch.unroll(lp)
    _vector_loop(sch, spatial[-1], lane)
    return reduce


def _split_init(sch, block, reduce: list, lane: int, outer: int = 2) -> None:
    """The init is split out after the loop kinds are set (TVM's checks), then vectorised."""
    if not reduce:
        return
    init = sch.decompose_reduction(block, reduce[0])
    init_loops = sch.get_loops(init)[outer:]
    for lp in init_loops[:-1]:
        sch.unroll(lp)
    _vector_loop(sch, init_loops[-1], lane)


def _extent(sch, loop) -> int:
    return int(sch.get(loop).extent)
