"""Default CPU schedules for fused Relax kernels, so that they use TVM's thread pool.

Untuned Relax CPU kernels are serial naive loops (no parallel, no vector loop). This module plays
the role of TVM's hand-written x86 TOPI schedules / dlight rules, generically, per TIR block:

* spatial producers (padding, bias add) are inlined into their consumer;
* a reduction block (conv2d, matmul, pooling, mean) is tiled: outer spatial loops fused and
  run on the thread pool (``parallel``), the reduction loops next, then a register tile of
  ``rows x cols`` outputs with the innermost output axis vectorised and the row axis unrolled;
  its elementwise epilogue (relu, residual add) is computed per tile (``reverse_compute_at``);
* a remaining spatial block is fused, split by the vector width, vectorised and parallelised;
* a Winograd conv (winograd.py) gets its own rule (winograd_schedule.py);
* an NHWC conv2d gets its own rule (conv_schedule.py): register tiles sized from the target's
  vector unit and its weight packed at build time; a depthwise one gets the reduction tiling
  above, padding inlined (conv_schedule.py says why).
A block whose rule fails keeps its serial loops and the kernel records it (never a wrong answer).
"""
from __future__ import annotations

from dataclasses import dataclass

from tvm import s_tir
from tvm.s_tir import ScheduleError

from .conv_schedule import is_conv_nhwc, is_depthwise, schedule_conv_nhwc, tile_problem
from .conv_tiles import TileProblem
from .dense_schedule import is_dense, schedule_dense
from .packing import Pack
from .target import VectorUnit
from .winograd_schedule import is_winograd, schedule_winograd

POLICIES = ("default", "none")
AVX512 = VectorUnit(512, 32, "avx512")
_SPATIAL, _REDUCE = 0, 2  # tirx.IterVar iter_type codes: data parallel, commutative reduction


@dataclass(frozen=True)
class ScheduleResult:
    func: object           # the scheduled tirx.PrimFunc
    applied: tuple[str, ...]  # one line per block: "conv2d_nhwc: tiled 8x32", ...
    packs: tuple[Pack, ...] = ()  # constant arguments whose layout the schedule changed
    by_conv_rule: bool = False    # the conv rule applied (with the tile asked for, if one was)


def _sole_conv(sch):
    """The kernel's one NHWC conv block the conv rule schedules; None for none or two."""
    convs = [b for b in sch.get_child_blocks(sch.get_sblock("root")) if is_conv_nhwc(sch, b)]
    return convs[0] if len(convs) == 1 else None


def conv_problem(func: object, unit: VectorUnit, lanes: int) -> TileProblem | None:
    """What the register tile of the kernel's one NHWC conv is chosen for; None when the
    kernel is not one the conv rule schedules (no conv, a depthwise one, or two)."""
    sch = s_tir.Schedule(func)
    conv = _sole_conv(sch)
    if conv is None:
        return None
    try:
        return tile_problem(sch, conv, unit, lanes)
    except ValueError:
        return None


def schedule_func(func: object, policy: str = "default", lanes: int = 16,
                  unit: VectorUnit = AVX512, packable: frozenset[int] = frozenset(),
                  tile: tuple[int, int] | None = None) -> ScheduleResult:
    """Schedules one PrimFunc; ``lanes`` is the number of elements per vector register;
    ``packable`` the parameter indices bound to constant params (their layout may change);
    ``tile`` a conv's register tile (rows, cols) instead of the model's (conv_tiles.py)."""
    if policy == "none":
        return ScheduleResult(func, ("none: serial loops",))
    sch = s_tir.Schedule(func)
    blocks = list(sch.get_child_blocks(sch.get_sblock("root")))
    if is_winograd(sch):
        res = _schedule_winograd_kernel(sch, unit, lanes, packable)
        if res is not None:
            return res
    conv = _sole_conv(sch)
    if conv is not None:
        res = _schedule_conv_kernel(sch, sch.get(conv).name_hint, unit, lanes, packable, tile)
        if res is not None:
            return res
    denses = [b for b in blocks if is_dense(sch, b)]
    if len(denses) == 1 and sum(_is_reduction(sch, b) for b in blocks) == 1:
        res = _schedule_dense_kernel(sch, sch.get(denses[0]).name_hint, unit, lanes, packable)
        if res is not None:
            return res
    _inline_producers(sch)
    blocks = list(sch.get_child_blocks(sch.get_sblock("root")))
    reductions = [sch.get(b).name_hint for b in blocks if _is_reduction(sch, b)]
    epilogues = {name: _sole_spatial_consumer(sch, sch.get_sblock(name)) for name in reductions}
    spatial = [sch.get(b).name_hint for b in blocks if not _is_reduction(sch, b)]
    applied: list[str] = []
    for name in reductions:
        epi = epilogues[name]
        sch, note = _try(sch, name, lambda s: _tile_reduction(
            s, s.get_sblock(name), s.get_sblock(epi) if epi else None, lanes,
            _DEPTHWISE_WIDTHS if is_depthwise(s, s.get_sblock(name)) else _WIDTHS))
        applied.append(note)
    for name in (n for n in spatial if n not in epilogues.values()):
        sch, note = _try(sch, name, lambda s: _schedule_spatial(s, s.get_sblock(name), lanes))
        applied.append(note)
    return ScheduleResult(sch.mod["main"], tuple(applied))


def _schedule_conv_kernel(sch, name: str, unit: VectorUnit, lanes: int,
                          packable: frozenset[int], tile: tuple[int, int] | None
                          ) -> ScheduleResult | None:
    """The conv rule on a copy; None (generic rules instead) if it does not apply."""
    trial = sch.copy()
    try:
        note, packs, pads = schedule_conv_nhwc(trial, trial.get_sblock(name), unit, lanes,
                                               packable, tile)
    except (ScheduleError, ValueError):
        return None
    applied = [f"{name}: {note}"]
    for pad in pads:
        trial, pad_note = _try(trial, pad, lambda s: _schedule_spatial(s, s.get_sblock(pad), lanes))
        applied.append(pad_note)
    return ScheduleResult(trial.mod["main"], tuple(applied), packs, by_conv_rule=True)


def _schedule_winograd_kernel(sch, unit: VectorUnit, lanes: int, packable: frozenset[int]
                              ) -> ScheduleResult | None:
    """The Winograd rule on a copy; None (generic rules instead) if it does not apply."""
    trial = sch.copy()
    try:
        notes, packs = schedule_winograd(trial, unit, lanes, packable)
    except (ScheduleError, ValueError):
        return None
    return ScheduleResult(trial.mod["main"], tuple(notes), packs)


def _schedule_dense_kernel(sch, name: str, unit: VectorUnit, lanes: int,
                           packable: frozenset[int]) -> ScheduleResult | None:
    trial = sch.copy()
    try:
        _inline_producers(trial)
        note, packs = schedule_dense(trial, trial.get_sblock(name), unit, lanes, packable)
    except (ScheduleError, ValueError):
        return None
    return ScheduleResult(trial.mod["main"], (f"{name}: {note}",), packs)


def _try(sch, name: str, rule) -> tuple[object, str]:
    """Applies a rule to a copy; on a schedule error the block keeps its serial loops."""
    trial = sch.copy()
    try:
        return trial, f"{name}: {rule(trial)}"
    except (ScheduleError, ValueError) as err:
        return sch, f"{name}: serial ({type(err).__name__}: {str(err).splitlines()[0][:80]})"


def _iter_kinds(sch, block) -> list[int]:
    return [int(iv.iter_type) for iv in sch.get(block).iter_vars]


def _is_reduction(sch, block) -> bool:
    return _REDUCE in _iter_kinds(sch, block)


def _extent(sch, loop) -> int:
    return int(sch.get(loop).extent)


def _pick(extent: int, candidates: list[int]) -> int:
    """The first candidate that divides the extent exactly (no tail loops, no predicates)."""
    return next((c for c in candidates if c <= extent and extent % c == 0), 1)


def _inline_producers(sch) -> None:
    """Inlines every spatial, non-output block into its consumers, until none is left."""
    root = sch.get_sblock("root")
    progress = True
    while progress:
        progress = False
        outputs = {sch.get(b).name_hint for b in sch.get_output_blocks(root)}
        for block in sch.get_child_blocks(root):
            if _is_reduction(sch, block) or sch.get(block).name_hint in outputs:
                continue
            try:
                sch.compute_inline(block)
                progress = True
                break
            except Exception:  # noqa: BLE001 - not inlinable (e.g. read twice); keep it
                continue


def _sole_spatial_consumer(sch, block) -> str | None:
    """The name of the elementwise epilogue (relu, residual add) of a reduction, if any."""
    consumers = list(sch.get_consumers(block))
    if len(consumers) == 1 and not _is_reduction(sch, consumers[0]):
        return sch.get(consumers[0]).name_hint
    return None


# a tile's column widths to try, in vectors of ``lanes`` (then 8 or 4 elements), widest first
_WIDTHS = (2, 1)
# a depthwise conv's: one vector. Two made 16 accumulators of an 8-row tile, and with the
# padding tested inline that ran 2x slower on AVX-512 (MobileNet-V2's 112x112x32 conv: 112 us
# against 60 us, one thread, its data in cache); 8 rows x 1 vector was within 15% of the best
# tile on every depthwise shape of the network
_DEPTHWISE_WIDTHS = (1,)


def _tile_reduction(sch, block, epilogue, lanes: int, widths: tuple[int, ...] = _WIDTHS) -> str:
    loops, kinds = sch.get_loops(block), _iter_kinds(sch, block)
    spatial = [lp for lp, k in zip(loops, kinds) if k == _SPATIAL]
    reduce = [lp for lp, k in zip(loops, kinds) if k == _REDUCE]
    if not spatial or len(loops) != len(kinds):
        return "serial (no spatial loop)"
    cols = _pick(_extent(sch, spatial[-1]), [v * lanes for v in widths] + [8, 4])
    col_outer, col_inner = sch.split(spatial[-1], [None, cols])
    outer, row_inner, rows = spatial[:-1], [], 1
    if outer and _extent(sch, outer[-1]) > 1:
        rows = _pick(_extent(sch, outer[-1]), [8, 7, 6, 4, 2])
        row_outer, row = sch.split(outer[-1], [None, rows])
        outer, row_inner = outer[:-1] + [row_outer], [row]
    sch.reorder(*outer, col_outer, *reduce, *row_inner, col_inner)
    tile = sch.fuse(*outer, col_outer) if outer else col_outer
    if epilogue is not None:
        sch.reverse_compute_at(epilogue, tile)
        _vectorize_inner(sch, sch.get_loops(epilogue)[1:], cols)
    sch.vectorize(col_inner)
    for row in row_inner:
        sch.unroll(row)
    sch.parallel(tile)
    if reduce:  # the init must be split out *after* the loop kinds are set (TVM's checks)
        init = sch.decompose_reduction(block, reduce[0])
        sch.vectorize(sch.get_loops(init)[-1])
    return f"tiled {rows}x{cols}, parallel x{_extent(sch, tile)}"


def _vectorize_inner(sch, loops, width: int) -> None:
    if not loops:  # the tile is a single element
        return
    fused = sch.fuse(*loops) if len(loops) > 1 else loops[0]
    _, inner = sch.split(fused, [None, width])
    sch.vectorize(inner)


def _schedule_spatial(sch, block, lanes: int) -> str:
    loops = sch.get_loops(block)
    if not loops:
        return "scalar"
    if sch.get(block).name_hint.startswith("T_transpose") and len(loops) > 2 \
            and _extent(sch, loops[-1]) < lanes:
        # e.g. NCHW -> NHWC of an RGB input: a vector over the fused output index is a
        # 16-way gather (5x slower than plain loops); rows in parallel, channels unrolled
        sch.unroll(loops[-1])
        sch.parallel(sch.fuse(*loops[:-2]))
        return "parallel rows, transpose"
    fused = sch.fuse(*loops) if len(loops) > 1 else loops[0]
    width = _pick(_extent(sch, fused), [lanes, 8, 4])
    if width == 1:
        sch.parallel(fused)
        return "parallel"
    outer, inner = sch.split(fused, [None, width])
    sch.vectorize(inner)
    sch.parallel(outer)
    return f"parallel, vector {width}"
