"""The machine's memory bandwidth for reads, measured once per thread count and cached: the
decode roofline's ceiling (a decode step streams every weight once).

A STREAM-like read kernel compiled with TVM for the host: a buffer several times the
last-level cache (at least ``MIN_BYTES``; a 300 MiB LLC reported by a VM guest is not trusted
to hold less) summed in 16-lane partial sums, blocks parallel on TVM's thread pool, as the
decode GEMV reads its weights. The best of ``REPEATS`` is kept (a bandwidth ceiling is a best
case). Measured on every call and kept per machine (peak.py's key) and thread count in
``$XDG_CACHE_HOME/minigraph/bandwidth.json`` as the best seen; an entry outside 0.1-2000 GB/s
is ignored.
Counterpart: STREAM's "Copy"/"Sum" kernels, llama-bench's memory-bound tg figures.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..fileio import cache
from .peak import machine_key, machine_peak

# lazy: TVM (~1.2 s to import) is imported where it is called; TVM-free commands load this module

CACHE = "bandwidth.json"
MIN_BYTES = 1 << 30   # 1 GiB read per pass: past any LLC this project has met, 300 MiB included
LANES = 16
ROW = 4096            # floats per row of a block: 16 KiB contiguous per task step
REPEATS = 5
PLAUSIBLE_GBPS = (0.1, 2000.0)


def _kernel(blocks: int):
    import tvm
    from tvm import te
    from tvm.s_tir import Schedule
    x = te.placeholder((blocks, ROW, LANES), "float32", name="x")
    k = te.reduce_axis((0, ROW), name="k")
    y = te.compute((blocks, LANES), lambda b, v: te.sum(x[b, k, v], axis=k), name="y")
    sch = Schedule(te.create_prim_func([x, y]).with_attr("global_symbol", "read_sum"))
    block = sch.get_sblock("y")
    b, v, kk = sch.get_loops(block)
    sch.reorder(b, kk, v)
    sch.parallel(b)
    sch.vectorize(v)
    target = tvm.target.Target({"kind": "llvm", "mcpu": tvm.target.codegen.llvm_get_system_cpu()})
    return tvm.compile(sch.mod, target=target)


def measure_bandwidth(nbytes: int = MIN_BYTES) -> float:
    """GB/s of one read pass over ``nbytes`` at the pool's thread count (best of REPEATS)."""
    import tvm
    blocks = max(64, nbytes // (ROW * LANES * 4))
    lib = _kernel(blocks)
    dev = tvm.cpu()
    x = tvm.runtime.tensor(np.ones((blocks, ROW, LANES), dtype=np.float32), dev)
    y = tvm.runtime.tensor(np.zeros((blocks, LANES), dtype=np.float32), dev)
    timer = lib.mod.time_evaluator("read_sum", dev, number=1, repeat=REPEATS)
    best = min(timer(x, y).results)
    return blocks * ROW * LANES * 4 / best / 1e9


def _cached(key: str) -> dict | None:
    """The cache's entry for ``key`` when it holds a plausible figure (a cache is data from
    disk, not trusted)."""
    entry = cache.read_entries(CACHE).get(key)
    lo, hi = PLAUSIBLE_GBPS
    ok = isinstance(entry, dict) and type(entry.get("gbps")) in (int, float) \
        and lo <= entry["gbps"] <= hi
    return entry if ok else None


def known_bandwidth(threads: int, set_pool: Callable[[], None]) -> dict:
    """{"gbps", ...}: the best this machine and thread count have shown, measured (and
    cached) only when nothing is cached yet, after ``set_pool`` gives the pool ``threads``
    workers: for a build, which must not spend a second and 1 GiB on every run."""
    key = f"{machine_key()} | threads {threads}"
    entry = _cached(key)
    if entry is not None:
        return {**entry, "threads": threads, "key": key}
    set_pool()
    return machine_bandwidth(threads)


def machine_bandwidth(threads: int, refresh: bool = False) -> dict:
    """{"gbps", "threads", "method", "key"}: measured now (about a second) and kept as the
    best this machine and thread count have shown (a ceiling is a best case: a measurement
    beside a busy neighbour reads low and must not stay the roofline); the caller's pool must
    already have ``threads`` workers."""
    key = f"{machine_key()} | threads {threads}"
    cached = None if refresh else _cached(key)
    lo, hi = PLAUSIBLE_GBPS
    now = round(measure_bandwidth(), 2)
    entry = {"gbps": now, "method": f"parallel 16-lane read-sum over {MIN_BYTES >> 20} MiB, "
                                    f"best of {REPEATS}; the best run kept"}
    if cached is not None and cached["gbps"] >= now:
        entry = cached
    elif lo <= now <= hi:
        cache.store(CACHE, key, entry)
    return {**entry, "threads": threads, "key": key, "measured_now_gbps": now}


def rooflines(threads: int) -> dict:
    """An LLM profile's two ceilings at ``threads``: {"gflops": FMA peak, "gbps": read
    bandwidth} (None where a figure could not be had)."""
    return {"gflops": machine_peak(threads).get("gflops"),
            "gbps": machine_bandwidth(threads).get("gbps")}
