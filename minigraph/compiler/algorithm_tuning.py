"""Measured conv algorithms: with ``minigraph build --tune``, each 3x3 stride-1 conv's
candidates (direct, F(4x4, 3x3), F(2x2, 3x3)) are timed on this host, not only modelled.

The cost model (conv_algorithms.py) prices a weight byte at this machine's measured rate,
but it still does not see the prefetchers, the caches' sizes or how well each kernel's tile
fits this core. With ``--tune`` each candidate is scheduled as the build would schedule it,
compiled alone, and timed by ``time_evaluator`` with the weight (and output) flushed from the
caches before every call (``cache_flush_cpu_non_first_arg``): in a run, a conv's weight was
last read a whole network ago and comes from DRAM, which is what makes Winograd's 4x weight
dear. Rounds are interleaved across the candidates (tuning.py's three), best round each; another candidate
replaces the model's only when tuning.py's ``MARGIN`` faster. Choices are cached per host
(measure/peak.py ``machine_key``), target, thread count and conv shape in
``$XDG_CACHE_HOME/minigraph/algorithms.json``: the next build measures nothing.

Counterpart in TVM: AutoTVM/meta-schedule measuring ``conv2d_NCHWc`` against
``conv2d_winograd`` per workload (the x86 strategy registers both; tuning logs pick one).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import tvm
from tvm import te, topi

from ..fileio import cache
from ..measure.peak import machine_key
from .conv_calls import i64, relax_like
from .machine_rates import set_pool
from .schedules import schedule_func
from .target import VectorUnit
from .tuning import compiled_alone, interleaved_best, pick
from .winograd import F2, F4, ConvShape, Transform, winograd_func

CACHE = "algorithms.json"
VERSION = 1         # bump when a candidate's kernel changes
REPEATS = 5         # cold calls per sample (each flushed first), the best kept
NAMES: dict[Transform | None, str] = {None: "direct", F4: "F(4x4,3x3)", F2: "F(2x2,3x3)"}
BY_NAME = {v: k for k, v in NAMES.items()}

# (name, scheduled PrimFunc) -> a call returning one sample, seconds per cold kernel call
Timer = Callable[[str, object], Callable[[], float]]


@dataclass(frozen=True)
class AlgorithmChoice:
    """The algorithm a conv is built with, the model's, and what each candidate took."""

    tf: Transform | None
    model: Transform | None
    seconds: tuple[tuple[str, float], ...]  # best round per candidate (from the cache too)
    cached: bool

    def note(self, threads: int) -> str:
        """What build.json's conv reason says of the measurement."""
        how = "cached" if self.cached else "timed now"
        said = ", ".join(f"{n} {s * 1e6:.0f} us" for n, s in self.seconds)
        return (f"measured at {threads} threads, weights cold ({how}): {said}; "
                f"{NAMES[self.tf]} over the model's {NAMES[self.model]}"
                if self.tf is not self.model else
                f"measured at {threads} threads, weights cold ({how}): {said}; the model's "
                f"{NAMES[self.model]} kept")


class AlgorithmTuner:
    """Chooses 3x3 stride-1 conv algorithms by measurement for one build (``--tune``)."""

    def __init__(self, target, unit: VectorUnit, lanes: int, threads: int,
                 timer: Timer | None = None) -> None:
        self.unit, self.lanes, self.threads = unit, lanes, threads
        self.target, self._timer = target, timer  # made on first use: a cached build makes none
        self.prefix = f"v{VERSION} | {machine_key()} | {target} | T={threads}"
        self.entries: dict | None = None  # the cache file, read on the first choice
        self.measured = self.cached = 0

    def choose(self, shape: ConvShape, candidates: list[Transform | None],
               model: Transform | None) -> AlgorithmChoice | None:
        """The algorithm for this conv, from the cache or measured now; None when fewer than
        two candidates compiled (the model's choice stands)."""
        key = f"{self.prefix} | {_shape_key(shape)}"
        if self.entries is None:  # the cache file read once per build, not once per conv
            self.entries = cache.read_entries(CACHE)
        seconds = _cached_seconds(self.entries.get(key), [NAMES[tf] for tf in candidates])
        cached = seconds is not None
        if not cached:
            seconds = self._measure(shape, candidates)
            if len(seconds) < 2:
                return None
            self.entries[key] = {"us": {n: round(s * 1e6, 2) for n, s in seconds.items()}}
            cache.store(CACHE, key, self.entries[key])  # now: an interrupted build keeps it
        self.cached, self.measured = self.cached + cached, self.measured + (not cached)
        return AlgorithmChoice(BY_NAME[pick(NAMES[model], seconds)], model,
                               tuple(seconds.items()), cached)

    def _measure(self, shape: ConvShape, candidates: list[Transform | None]
                 ) -> dict[str, float]:
        if self._timer is None:
            self._timer = cold_timer(self.target, self.threads)
        calls = {}
        for tf in candidates:
            func = direct_func(shape) if tf is None else winograd_func(shape, tf)
            res = schedule_func(func, "default", self.lanes, self.unit, frozenset({1}))
            try:
                calls[NAMES[tf]] = self._timer(NAMES[tf], res.func)
            except Exception:  # noqa: BLE001 - TVM's errors: that algorithm is no candidate
                continue
        return interleaved_best(calls)


def _shape_key(shape: ConvShape) -> str:
    return (f"conv3x3 n{shape.n} h{shape.h} w{shape.w} c{shape.c} k{shape.k} "
            f"pad{list(shape.pad)} {shape.dtype}")


def _cached_seconds(entry: object, names: list[str]) -> dict[str, float] | None:
    """A cached entry's times, when it has a finite positive one for every candidate of
    today (a cache is data from disk: anything else is measured again)."""
    us = entry.get("us") if isinstance(entry, dict) else None
    if not isinstance(us, dict) or sorted(us) != sorted(names):
        return None
    if not all(type(v) in (int, float) and 0 < v < float("inf") for v in us.values()):
        return None
    return {n: us[n] / 1e6 for n in names}


def direct_func(shape: ConvShape):
    """The conv as Relax legalizes it (TOPI's NHWC/HWIO ``conv2d``): data, weight, output."""
    data = te.placeholder(i64(shape.n, shape.h, shape.w, shape.c), shape.dtype, "data")
    weight = te.placeholder(i64(3, 3, shape.c, shape.k), shape.dtype, "weight")
    # int64 attributes, as Relax's legalization has them: the padding stage's indices must
    # match the placeholders' for the conv rule to inline it
    conv = topi.nn.conv2d(data, weight, list(i64(1, 1)), list(i64(*shape.pad)), list(i64(1, 1)),
                          "NHWC", "HWIO", shape.dtype)
    return relax_like(te.create_prim_func([data, weight, conv]))


def cold_timer(target, threads: int) -> Timer:
    """Compiles a scheduled kernel alone and times one call at a time, every argument but the
    input flushed from the caches first (TVM's ``cache_flush_cpu_non_first_arg``), the pool
    set to ``threads`` workers (machine_rates.set_pool)."""
    set_pool(threads)
    rng = np.random.default_rng(0)

    def prepare(name: str, func) -> Callable[[], float]:
        lib, args = compiled_alone(target, func, rng)
        ev = lib.time_evaluator("main", tvm.cpu(), number=1, repeat=REPEATS,
                                f_preproc="cache_flush_cpu_non_first_arg")
        return lambda: float(min(ev(*args).results))
    return prepare
