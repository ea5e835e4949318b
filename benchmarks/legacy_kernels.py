"""Legacy (old packed C ABI) kernels: TVM 0.27's thread pool, and what a call costs by itself.

1. Thread scaling: one parallel legacy kernel (``fuse_heavy`` from tests/helpers/legacy_abi_fixtures.py:
   65,536 elements x 400 dependent multiply-adds, split with TVMBackendParallelLaunch), built
   here with the system C compiler as a variant A library, run through minigraph's legacy door
   (``Executor.benchmark``) in a fresh process per thread count (TVM sizes its pool once per
   process, from TVM_NUM_THREADS). The ratio 1-thread time / 2-thread time says whether the
   kernel's parallel loop really runs on TVM 0.27's pool (goal: > 1.5x); the process's CPU
   time over wall time says how many CPUs it kept busy (near 2 with two threads, even on a
   machine too busy for the speedup to show).
2. Call cost: what the per-op timing loop adds to every warm/cold sample of a legacy kernel,
   i.e. one clock pair around a call to a native no-op kernel, through the trampoline minigraph
   uses (no ctypes arguments) and, side by side, through a ctypes call with the six arguments.
   Goal: the trampoline path under 1 us per call.
Both measured in this run, side by side; on a shared machine treat the numbers as provisional.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent), str(HERE.parent / "tests" / "helpers")]

from _common import context_line, verdict  # noqa: E402

SPEEDUP_GOAL, CALL_GOAL_NS = 1.5, 1000.0


def _graph() -> dict:
    return {"nodes": [{"op": "null", "name": "x", "inputs": []},
                      {"op": "tvm_op", "name": "heavy0", "inputs": [[0, 0, 0]],
                       "attrs": {"func_name": "fuse_heavy", "num_inputs": "1",
                                 "num_outputs": "1", "flatten_data": "0"}}],
            "arg_nodes": [0], "heads": [[1, 0, 0]],
            "attrs": {"shape": ["list_shape", [[65536], [65536]]],
                      "dltype": ["list_str", ["float32", "float32"]],
                      "storage_id": ["list_int", [0, 1]]}}


def build(d: Path) -> Path:
    import legacy_abi_fixtures as fx
    fx.build_library(d / "deploy_lib.so", fx.MODEL_KERNELS + fx.WHOAMI_KERNEL)
    (d / "deploy_graph.json").write_text(json.dumps(_graph()))
    return d


def worker(d: Path, number: int, repeat: int) -> dict:
    import numpy as np
    import tvm

    from minigraph.measure import contention
    from minigraph.runtime.doors import locate, open_executor
    ex = open_executor(locate(d / "deploy_lib.so", d / "deploy_graph.json"))
    ex.set_input("x", np.random.default_rng(0).random(65536, dtype=np.float32))
    ex.run()  # the pool exists before the CPU-time window opens
    taken: dict = {}
    cpu0, wall0 = time.process_time(), time.perf_counter()
    with contention.recorded(taken):
        runs = ex.benchmark(number=number, repeat=repeat)
    busy = (time.process_time() - cpu0) / (time.perf_counter() - wall0)
    return {"s": statistics.median(runs), "runs": list(runs), "cpus_busy": busy,
            "others_cpus": taken.get("others_cpus", float("nan")),
            "pool": int(tvm.get_global_func("runtime.NumThreads")()), "context": context_line()}


def child(d: Path, threads: int, args: argparse.Namespace) -> dict:
    env = dict(os.environ, TVM_NUM_THREADS=str(threads))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE.parent), env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, __file__, "--worker", str(d), "--number",
                           str(args.number), "--repeat", str(args.repeat)],
                          env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"worker with {threads} thread(s) failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def call_costs(shots: int) -> tuple[float, float]:
    """(trampoline ns, six-argument ctypes ns): median of clock pair + no-op call."""
    from minigraph.runtime.legacy import call as lc
    nop = lc.native_nop()
    if nop is None:
        raise RuntimeError(f"no executable memory here: {lc._UNAVAILABLE}")
    vals, codes = (ctypes.c_uint64 * 4)(), (ctypes.c_int * 4)()
    ret, ret_code = (ctypes.c_uint64 * 1)(), (ctypes.c_int * 1)()

    def check(result, func, args):
        if result:
            raise RuntimeError(result)
        return result
    tramp, t_args = lc.prebuilt(nop, vals, codes, 4, ret, ret_code, check)
    direct = lc.CALL(nop)
    direct.errcheck = check
    d_args = (vals, codes, 4, ret, ret_code, None)
    clock, out = time.perf_counter_ns, {"t": [], "d": []}
    for _ in range(shots):  # interleaved, so both see the same machine
        for key, fn, a in (("t", tramp, t_args), ("d", direct, d_args)):
            t0 = clock()
            fn(*a)
            out[key].append(clock() - t0)
    return statistics.median(out["t"]), statistics.median(out["d"])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--number", type=int, default=5)
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--shots", type=int, default=20000, help="calls per call-cost sample set")
    p.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args.number, args.repeat)))
        return 0
    print(f"parent: {context_line()}")
    with tempfile.TemporaryDirectory(prefix="legacy-bench-") as tmp:
        d = build(Path(tmp))
        res = {n: child(d, n, args) for n in (1, 2)}
    for n, r in res.items():
        print(f"{n} thread(s) (pool {r['pool']}): fuse_heavy {r['s'] * 1e3:8.3f} ms median "
              f"(min {min(r['runs']) * 1e3:.3f}, max {max(r['runs']) * 1e3:.3f}); CPUs busy "
              f"{r['cpus_busy']:.2f} (process CPU time / wall time), other processes used "
              f"{r['others_cpus']:.2f} CPUs meanwhile; {r['context']}")
    speedup = res[1]["s"] / res[2]["s"]
    print(f"speedup 1 -> 2 threads: {speedup:.2f}x")
    print(verdict(speedup > SPEEDUP_GOAL, f"legacy parallel kernel 1->2 threads > "
                  f"{SPEEDUP_GOAL}x", f"{speedup:.2f}x"))
    tramp, direct = call_costs(args.shots)
    print(f"timing-loop cost per call (clock pair + no-op legacy kernel): trampoline "
          f"{tramp:.0f} ns, six-argument ctypes call {direct:.0f} ns (ratio {direct / tramp:.2f})")
    print(verdict(tramp < CALL_GOAL_NS, f"trampoline call < {CALL_GOAL_NS:.0f} ns",
                  f"{tramp:.0f} ns"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
