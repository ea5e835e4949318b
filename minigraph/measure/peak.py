"""The machine's peak float32 FLOP/s, measured once and cached: the roofline's ceiling.

An FMA loop compiled with TVM for the host CPU: ``chains`` independent vector accumulators (enough
to hide the FMA latency on every x86 core: 2 FMA pipes x 4-5 cycles), each updated
``acc = acc * a + b`` (one fused multiply-add, 2 FLOPs per lane) ``iters`` times. The loop is
serial (no thread pool), so measuring it does not create or disturb TVM's pool; the peak for T
threads is T times the one-thread figure (all cores at the one-core clock: an upper bound).
The best of several repeats is kept (a peak is a best case; a busy machine only lowers it).
Cached per CPU model, LLVM CPU name and TVM version in ``$XDG_CACHE_HOME/minigraph/peak.json``
(default ~/.cache); the counterpart in TVM is none: its profiler never had a roofline.
The cache is data from disk, not trusted: an entry is used only when its figure is a finite
number this CPU could reach (above 0.05 GFLOP/s, at most its vector lanes x 2 FMA pipes x 2
FLOPs x its highest clock, with margin) and was measured with this CPU's vector width;
anything else is measured again (and a figure that is not plausible is never cached or used).
"""
from __future__ import annotations

import functools
import math
import platform
import time
from pathlib import Path

import numpy as np

from ..fileio import cache

# lazy: TVM (~1.2 s to import) is imported where it is called; TVM-free commands load this module

CHAINS = 16      # independent accumulators (vector registers)
MIN_GFLOPS = 0.05  # a per-thread figure below this is no measurement of an FMA loop
_FMA_PIPES = 2     # no x86 or Arm core issues more than two vector FMAs per cycle
_MAX_GHZ = 6.0     # when the kernel does not say: above any shipping CPU's boost clock
ITERS = 200_000  # FMAs per accumulator per call: ~5-50 ms
REPEATS = 7


CACHE = "peak.json"


def cache_path() -> Path:
    return cache.cache_path(CACHE)


def machine_key() -> str:
    """This host for a cache of measurements: its CPU model, LLVM CPU name and TVM version."""
    import tvm
    from tvm.target import codegen
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        model = platform.processor()
    return f"{model} | {codegen.llvm_get_system_cpu()} | tvm {tvm.__version__}"


def _fma_kernel(lanes: int):
    """The PrimFunc (TVMScript: its parser reads this module's source)."""
    from tvm.script import tirx as T

    @T.prim_func
    def fma_peak(a: T.Buffer((CHAINS, lanes), "float32"), b: T.Buffer((CHAINS, lanes), "float32")):
        T.func_attr({"global_symbol": "fma_peak", "tirx.noalias": True})
        acc = T.alloc_buffer((CHAINS, lanes), "float32", scope="local")
        for c in T.unroll(CHAINS):
            for v in T.vectorized(lanes):
                acc[c, v] = a[c, v]
        for _ in range(ITERS):
            for c in T.unroll(CHAINS):
                for v in T.vectorized(lanes):
                    acc[c, v] = acc[c, v] * T.float32(0.999999) + T.float32(1e-6)
        for c in T.unroll(CHAINS):
            for v in T.vectorized(lanes):
                b[c, v] = acc[c, v]
    return fma_peak


@functools.lru_cache(maxsize=None)
def _target_and_bits():
    """This host's LLVM target and its float vector width in bits (once per process: the
    cache check and a measurement both ask)."""
    import tvm
    from tvm.target import codegen
    target = tvm.target.Target({"kind": "llvm", "mcpu": codegen.llvm_get_system_cpu()})
    feats = {str(f) for f in codegen.llvm_get_cpu_features(target)}
    return target, 512 if "avx512f" in feats else 256 if "avx" in feats else 128


def vector_bits() -> int:
    """This host's float vector width in bits (512 with AVX-512, 256 with AVX, else 128)."""
    return _target_and_bits()[1]


@functools.lru_cache(maxsize=None)
def _max_ghz() -> float:
    """The highest clock this CPU reports (cpufreq), else a bound above any real one."""
    try:
        khz = int(Path("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq").read_text())
        return max(khz / 1e6, 0.1) * 1.25  # margin: boost beyond the nominal maximum
    except (OSError, ValueError):
        return _MAX_GHZ


def ceiling(bits: int) -> float:
    """The most one thread of this CPU could do, GFLOP/s: lanes x FMA pipes x 2 x clock."""
    return bits / 32 * _FMA_PIPES * 2 * _max_ghz()


def plausible(entry: object, bits: int) -> bool:
    """A cached (or just measured) peak this CPU could have produced, with its vector width."""
    if not isinstance(entry, dict) or entry.get("vector_bits") != bits:
        return False
    g = entry.get("gflops_per_thread")
    return type(g) in (int, float) and math.isfinite(g) and MIN_GFLOPS < g <= ceiling(bits)


def measure_peak() -> dict:
    """One thread's peak float32 GFLOP/s on this host, measured now."""
    import tvm
    target, bits = _target_and_bits()
    lanes = bits // 32
    lib = tvm.compile(tvm.IRModule({"fma_peak": _fma_kernel(lanes)}), target=target)
    a = tvm.runtime.tensor(np.ones((CHAINS, lanes), "float32"))
    b = tvm.runtime.tensor(np.zeros((CHAINS, lanes), "float32"))
    fn = lib.mod["fma_peak"]
    fn(a, b)
    best_s = min(_timed(fn, a, b) for _ in range(REPEATS))
    flops = 2.0 * ITERS * CHAINS * lanes
    return {"gflops_per_thread": round(flops / max(best_s, 1e-9) / 1e9, 2), "vector_bits": bits,
            "method": f"FMA loop: {CHAINS} chains x {lanes} lanes x {ITERS} iterations, "
                      f"best of {REPEATS}", "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S")}


def _timed(fn, a, b) -> float:
    t0 = time.perf_counter()
    fn(a, b)
    return time.perf_counter() - t0


def machine_peak(threads: int = 1, refresh: bool = False) -> dict:
    """{"gflops": peak for ``threads``, "gflops_per_thread", "threads", "method", "key",
    "cache"}: from the cache when this machine was measured before and the figure is
    plausible, else measured and cached (an unwritable cache only costs a re-measurement next
    time); {} when even a fresh measurement is not plausible (the roofline then says so)."""
    key = machine_key()
    _, bits = _target_and_bits()
    entry = None if refresh else cache.read_entries(CACHE).get(key)
    if not plausible(entry, bits):
        entry = measure_peak()
        if not plausible(entry, bits):
            return {}
        cache.store(CACHE, key, entry)
    return {**entry, "threads": threads, "key": key, "cache": str(cache_path()),
            "gflops": round(entry["gflops_per_thread"] * threads, 2)}
