"""A conv's register tile: ``rows`` output pixels along W by ``cols`` output channels, chosen
by a model of FMAs per load (``conv_tile``) or among the candidates that model ranks
(``TileProblem.candidates``: what ``minigraph build --tune`` measures, compiler/tuning.py).

The model: a tile needs rows * vecs accumulators + vecs weight registers + 1 broadcast
register (vecs = cols / lanes), and per reduction step does rows * vecs FMAs for rows + vecs
loads; the more FMAs per load, the less the loads bound it. It does not see what the
measurements did (AVX-512, two threads, one Zen 5 guest): a 3x3 stride-2 conv to 28x28x128
ran 0.72-0.79x the model's 4x64 time as 5x64 or 14x32, and elsewhere the model's pick was
within 3% of the best. Counterpart in TVM: the tile sizes of TOPI's x86 conv2d schedules
(``_get_default_config``), which meta-schedule tuning replaces by measurement.
"""
from __future__ import annotations

from dataclasses import dataclass


MAX_VECTORS = 4  # a tile's columns are at most this many vector registers


def _col_options(out_c: int, lanes: int, whole: bool = False) -> list[int]:
    if whole:  # the channels were padded to whole vectors: one block of all of them
        return [out_c] if out_c % lanes == 0 and out_c <= MAX_VECTORS * lanes else []
    options = [v * lanes for v in range(1, MAX_VECTORS + 1) if out_c % (v * lanes) == 0]
    if not options and out_c <= MAX_VECTORS * lanes and out_c % 4 == 0:
        options = [out_c]  # e.g. 24 channels (MobileNet-V2): three 8-lane vectors
    return options


def _per_load(rows: int, vecs: int) -> float:
    """FMAs per load of a rows x vecs tile's reduction step: rows * vecs FMAs, rows
    broadcasts + vecs weight loads."""
    return rows * vecs / (rows + vecs)


def _per_load_over(out_w: int, rows: int, vecs: int) -> float:
    """FMAs per load averaged over a row of ``out_w`` pixels: the tail tile does fewer."""
    full, tail = divmod(out_w, rows)
    return (full * rows * _per_load(rows, vecs) + tail * _per_load(tail, vecs)) / out_w


def _fits(rows: int, vecs: int, registers: int) -> bool:
    """rows * vecs accumulators + vecs weight registers + 1 broadcast register."""
    return rows * vecs + vecs + 1 <= registers


TAIL_GAIN = 1.1  # a tile with a tail must do this many times the FMAs per load of the best
# tile without one: with the same columns, more rows ran 3x3 and 1x1 convs 10-13% faster on
# AVX2 (ResNet-50's 4x16 tiles at 56 and 28 pixels wide -> 6x16); trading columns for rows did
# not pay (2x32 -> 6x16 at 14 wide: 0-16% slower, the input re-read per channel block doubles)
TAIL_BELOW = 1.5  # ... and only where the best tile without one does fewer FMAs per load: at 2
# (AVX-512's 4x64) loads no longer bound the tile, and 6x64 ran 3% faster to 11% slower


def conv_tile(out_w: int, out_c: int, lanes: int, registers: int,
              tails: bool = False, whole: bool = False) -> tuple[int, int]:
    """(rows, cols): the register tile with the most FMAs per load that fits the registers.

    A tile needs rows * vecs accumulators + vecs weight registers + 1 broadcast register
    (vecs = cols / lanes); per reduction step it does rows * vecs FMAs for rows + vecs loads.
    Cols divide the channel count; rows divide the output width, or with ``tails`` may leave
    a shorter last tile where the best divisor tile does under TAIL_BELOW FMAs per load and
    the tail tile does TAIL_GAIN more: at the same columns, or at any where the divisor tile
    does under one (AVX2's 7x8 at 7 pixels wide: 6x16 ran ResNet-50's last stage 5-10%
    faster). ``whole``: cols are all ``out_c`` (padded channels: one block)."""
    best, best_key = (1, out_c if out_c <= MAX_VECTORS * lanes else lanes), (-1.0, 0)
    for cols in _col_options(out_c, lanes, whole):
        vecs = cols // vector_part(cols, lanes)  # 24 channels: three 8-lane vectors
        for rows in range(1, min(out_w, 16) + 1):
            if out_w % rows or not _fits(rows, vecs, registers):
                continue
            key = (_per_load(rows, vecs), rows * vecs)
            if key > best_key:
                best, best_key = (rows, cols), key
    return _with_tail(best, out_w, out_c, lanes, registers, whole) if tails else best


def _with_tail(base: tuple[int, int], out_w: int, out_c: int, lanes: int,
               registers: int, whole: bool) -> tuple[int, int]:
    """``base``, or a tile whose rows leave a tail, by conv_tile's rule; a tile's worth is its
    FMAs per load averaged over the output width (the tail tile does fewer)."""
    base_key = _per_load(base[0], base[1] // vector_part(base[1], lanes))
    if base_key >= TAIL_BELOW:
        return base
    best, best_eff = base, base_key * TAIL_GAIN
    for cols in _col_options(out_c, lanes, whole):
        if cols != base[1] and base_key >= 1.0:
            continue
        vecs = cols // vector_part(cols, lanes)
        for rows in range(2, min(out_w, 16) + 1):
            if not out_w % rows or not _fits(rows, vecs, registers):
                continue
            eff = _per_load_over(out_w, rows, vecs)
            if eff > best_eff:
                best, best_eff = (rows, cols), eff
    return best


def vector_part(cols: int, lanes: int) -> int:
    """The vector length a tile's columns are cut into: whole registers. LLVM turns a
    <48 x float> into slow code; three <16 x float> are what the registers hold. 24 channels
    on AVX-512 are three <8 x float>, half-width FMAs: one <24 x float> ran MobileNet-V2's
    24-channel 1x1 convs 16x slower, and a 16 + 8 loop partition is refused by TVM's
    vectorize (two blocks then write the one accumulator tile)."""
    lane = lanes
    while lane > 4 and cols % lane:
        lane //= 2
    return lane if cols % lane == 0 else cols


@dataclass(frozen=True)
class TileProblem:
    """What a conv's tile is chosen for: its output width and channels, the target's lanes and
    registers, whether a shorter last tile is allowed (conv_schedule says where not), and
    whether the tile must take all the channels (padded to whole vectors: channel_padding.py)."""

    out_w: int
    out_c: int
    lanes: int
    registers: int
    tails: bool
    whole: bool = False

    def model_tile(self) -> tuple[int, int]:
        return conv_tile(self.out_w, self.out_c, self.lanes, self.registers, self.tails,
                         self.whole)

    def candidates(self, count: int) -> list[tuple[int, int]]:
        """The model's tile, then up to ``count`` - 1 others that fit the registers, by FMAs
        per load averaged over the width (tails only where allowed)."""
        first = self.model_tile()
        ranked = []
        for cols in _col_options(self.out_c, self.lanes, self.whole):
            vecs = cols // vector_part(cols, self.lanes)
            for rows in range(1, min(self.out_w, 16) + 1):
                if not _fits(rows, vecs, self.registers) or (self.out_w % rows and not self.tails):
                    continue
                eff = _per_load_over(self.out_w, rows, vecs)
                ranked.append((-eff, -rows * vecs, (rows, cols)))
        others = [t for _, _, t in sorted(ranked) if t != first]
        return [first, *others][:max(count, 1)]
