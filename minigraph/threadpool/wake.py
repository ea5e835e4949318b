"""A tiny parallel kernel that creates or wakes TVM's thread pool without touching the model.

Diagnose needs "the pool exists and its workers are awake" as a precondition on its own, apart
from any model kernel (running one of those would also warm that kernel's code and data). TVM
0.27 has no packed global that launches a parallel job, so minigraph compiles one: a 1-D add
whose outer loop is ``parallel``, i.e. one ``TVMBackendParallelLaunch`` per call, the same path
every scheduled model kernel takes (thread_pool.cc ``ThreadPool::Launch``).
"""
from __future__ import annotations

import os
from pathlib import Path

# lazy: TVM (~1.2 s to import) is imported where it is called; TVM-free commands load this module

SYMBOL = "minigraph_pool_wake"
LENGTH = 4096  # float32 elements: 16 KiB per buffer, a rounding error next to any model


def build_wake_library(out_dir: str | os.PathLike) -> Path:
    """Compiles the wake kernel for this machine into ``out_dir/pool_wake.so``."""
    import tvm
    from tvm import te
    a = te.placeholder((LENGTH,), "float32", name="A")
    b = te.compute((LENGTH,), lambda i: a[i] + 1.0, name="B")
    func = te.create_prim_func([a, b]).with_attr("global_symbol", SYMBOL)
    sch = tvm.s_tir.Schedule(func)
    (loop,) = sch.get_loops(sch.get_sblock("B"))
    outer, _ = sch.split(loop, [None, 64])
    sch.parallel(outer)
    mod = tvm.IRModule({SYMBOL: sch.mod["main"].with_attr("global_symbol", SYMBOL)})
    path = Path(out_dir) / "pool_wake.so"
    tvm.compile(mod, target=tvm.target.Target({"kind": "llvm"})).export_library(str(path))
    return path


class PoolWaker:
    """Calls the wake kernel: the first call creates TVM's pool, later calls wake its workers."""

    def __init__(self, library: str | os.PathLike) -> None:
        import tvm
        self._fn = tvm.runtime.load_module(str(library))[SYMBOL]
        self._args = tuple(tvm.runtime.empty((LENGTH,), "float32", tvm.cpu(0)) for _ in "ab")

    def __call__(self) -> None:
        self._fn(*self._args)
