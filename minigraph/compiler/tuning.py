"""Measured conv tiles: ``minigraph build --tune``.

The conv rule's register tile comes from a model of FMAs per load (conv_tiles.py) that does not
see the caches, the prefetchers or the thread pool. With ``--tune`` each conv kernel is
scheduled with the model's tile and the next ``CANDIDATES - 1`` tiles the model ranks, each
compiled alone and timed on this host by ``time_evaluator`` at the thread count the executor
will use (threadpool/config.py ``default_threads``), rounds interleaved across the candidates,
best round per tile; another tile replaces the model's only when it is ``MARGIN`` faster (less
is the machine's noise, not the tile). Choices are cached per host (measure/peak.py
``machine_key``), target, thread count and kernel (its structural hash and which arguments
are constant) in ``$XDG_CACHE_HOME/minigraph/tiles.json``: the next build of the same kernels
measures nothing.

Every candidate computes each output's sum in the same order (a tile only changes which
outputs are computed together), so whichever tile wins, the outputs are the same bits.

Counterpart in TVM: meta-schedule (``tvm.s_tir.meta_schedule``), which searches whole schedules
with a cost model over hundreds of trials per kernel; this measures one choice among a few, in
a second or two per kernel.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, TypeVar

import numpy as np
import tvm
import tvm_ffi

from ..fileio import cache
from ..measure.peak import machine_key
from .machine_rates import set_pool
from .schedules import conv_problem, schedule_func
from .target import VectorUnit

CACHE = "tiles.json"
VERSION = 1        # bump when the conv rule changes what a (rows, cols) tile means
CANDIDATES = 8     # tiles timed per conv kernel, the model's first
ROUNDS = 3         # each candidate timed once per round, rounds interleaved
MARGIN = 0.03      # another tile must be this much faster than the model's to replace it
MIN_REPEAT_MS = 10  # time_evaluator repeats the kernel until one sample lasts this long

Tile = tuple[int, int]
T = TypeVar("T")
# (tile, scheduled PrimFunc) -> a call returning one sample, seconds per kernel call
Timer = Callable[[Tile, object], Callable[[], float]]


@dataclass(frozen=True)
class TileChoice:
    """The tile a conv kernel is built with, the model's, and what each candidate took."""

    tile: Tile
    model: Tile
    seconds: tuple[tuple[Tile, float], ...]  # best round per candidate; () when cached
    cached: bool

    def note(self, threads: int) -> str:
        """What build.json's schedule notes say of the choice."""
        how = "cached" if self.cached else f"{len(self.seconds)} timed"
        if self.tile == self.model:
            return f"tile measured at {threads} threads ({how}): the model's {_fmt(self.model)}"
        gain = ""
        t = dict(self.seconds)
        if self.tile in t and self.model in t:
            gain = f", {t[self.tile] / t[self.model]:.2f}x its time"
        return (f"tile measured at {threads} threads ({how}): {_fmt(self.tile)} over the "
                f"model's {_fmt(self.model)}{gain}")


def _fmt(tile: Tile) -> str:
    return f"{tile[0]}x{tile[1]}"


def pick(model: T, seconds: dict[T, float], margin: float = MARGIN) -> T:
    """The fastest candidate (a tile, an algorithm), unless it beats the model's by less than
    ``margin``: less is the machine's noise, not the candidate."""
    best = min(seconds, key=seconds.__getitem__)
    if model in seconds and seconds[best] > seconds[model] * (1 - margin):
        return model
    return best


class TileTuner:
    """Chooses conv tiles by measurement for one build (``minigraph build --tune``)."""

    def __init__(self, target, unit: VectorUnit, lanes: int, threads: int,
                 timer: Timer | None = None) -> None:
        self.unit, self.lanes, self.threads = unit, lanes, threads
        self.target, self._timer = target, timer  # the default made on first use: no pool
        # exists in a build that finds every choice in the cache
        self.prefix = f"v{VERSION} | {machine_key()} | {target} | T={threads}"
        self.entries: dict | None = None  # the cache file, read on the first choice
        self.measured = self.cached = 0
        self.seconds = 0.0  # spent choosing, cache reads included

    def choose(self, func, packable: frozenset[int]) -> TileChoice | None:
        """The tile for this kernel's conv, from the cache or measured now; None when the
        kernel has no conv the conv rule schedules."""
        t0 = time.perf_counter()
        try:
            return self._choose(func, packable)
        finally:
            self.seconds += time.perf_counter() - t0

    def _choose(self, func, packable: frozenset[int]) -> TileChoice | None:
        problem = conv_problem(func, self.unit, self.lanes)
        if problem is None:
            return None
        candidates = problem.candidates(CANDIDATES)
        key = (f"{self.prefix} | {tvm_ffi.structural_hash(func) & (2**64 - 1):016x}"
               f" | const {sorted(packable)}")
        if self.entries is None:
            self.entries = cache.read_entries(CACHE)
        tile = _cached_tile(self.entries.get(key), candidates)
        if tile is not None:
            self.cached += 1
            return TileChoice(tile, candidates[0], (), True)
        seconds = self._measure(func, packable, candidates)
        if not seconds:
            return None  # no candidate compiled: the model's tile, as without --tune
        tile = pick(candidates[0], seconds)
        self.measured += 1
        self.entries[key] = {"tile": list(tile), "us": {
            _fmt(t): round(s * 1e6, 2) for t, s in seconds.items()}}
        cache.store(CACHE, key, self.entries[key])  # now: an interrupted build keeps it
        return TileChoice(tile, candidates[0], tuple(seconds.items()), False)

    def _measure(self, func, packable: frozenset[int], candidates: list[Tile]
                 ) -> dict[Tile, float]:
        if self._timer is None:
            self._timer = kernel_timer(self.target, self.threads)
        calls = {}
        for tile in candidates:
            res = schedule_func(func, "default", self.lanes, self.unit, packable, tile)
            if res.by_conv_rule:
                try:
                    calls[tile] = self._timer(tile, res.func)
                except Exception:  # noqa: BLE001 - TVM's errors: that tile is not a candidate
                    continue
        return interleaved_best(calls)


def interleaved_best(calls: dict[T, Callable[[], float]], rounds: int = ROUNDS) -> dict[T, float]:
    """Each candidate's best of ``rounds`` samples, one sample of every candidate per round:
    a machine that changes speed during the rounds slows them all alike."""
    best: dict[T, float] = {}
    for _ in range(rounds):
        for key, call in calls.items():
            best[key] = min(best.get(key, float("inf")), call())
    return best


def _cached_tile(entry: object, candidates: list[Tile]) -> Tile | None:
    """A cached entry's tile, if it is one of today's candidates (a cache is data from disk:
    ``[8.0, 16]`` or ``[true, 16]`` equal a candidate in Python but are no tile, so only
    integers count; anything else is measured again)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("tile"), list):
        return None
    tile = tuple(entry["tile"])
    if not all(type(v) is int for v in tile):  # noqa: E721 - bool and float are not tiles
        return None
    return tile if tile in candidates else None  # type: ignore[return-value]


def kernel_timer(target, threads: int) -> Timer:
    """Compiles a scheduled kernel alone and times it with ``time_evaluator`` on random
    inputs of its parameters' shapes, TVM's pool set to ``threads`` workers first, the
    caller's CPUs given back (machine_rates.set_pool: a benchmark building with ``tune`` once
    ran ONNX Runtime's two threads on the one CPU the pool had pinned it to, 4x slower)."""
    set_pool(threads)
    rng = np.random.default_rng(0)

    def prepare(tile: Tile, func) -> Callable[[], float]:
        lib, args = compiled_alone(target, func, rng)
        ev = lib.time_evaluator("main", tvm.cpu(), number=1, repeat=1,
                                min_repeat_ms=MIN_REPEAT_MS)
        return lambda: float(ev(*args).results[0])
    return prepare


def compiled_alone(target, func, rng: np.random.Generator) -> tuple[object, list]:
    """The kernel compiled as a module of its own (``main``) and random arguments of its
    parameters' shapes, called once: page faults and code loading are not what is timed."""
    dev = tvm.cpu()
    lib = tvm.compile(tvm.IRModule({"main": func.with_attr("global_symbol", "main")}),
                      target=target).mod
    args = [tvm.runtime.tensor(_random(rng, p.shape, str(p.dtype)), dev) for p in func.params]
    lib["main"](*args)
    return lib, args


def _random(rng, shape, dtype: str) -> np.ndarray:
    dims = [int(d) for d in shape]
    if dtype.startswith("float"):
        return rng.standard_normal(dims).astype(dtype)
    return np.zeros(dims, dtype)
