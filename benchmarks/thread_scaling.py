"""Thread scaling: end-to-end latency at 1 and 2 TVM threads, minigraph vs the Relax VM.

What it measures: the warm end-to-end latency of one model (ResNet-50 by default), through
minigraph's Executor (``ex.benchmark(number, repeat)``) and through the Relax VM running the
same scheduled kernels (``model.vm.so``, ``vm.time_evaluator("main", number, repeat)``), at each
thread count in ``--threads``; the median of the repeats is reported, with their min..max.

How: TVM sizes its CPU thread pool once per process, from TVM_NUM_THREADS, so each thread count
runs in a fresh subprocess (this script with ``--worker``, TVM_NUM_THREADS set in its env). The
worker reports its timings and the pool size TVM actually created as one JSON line. The parent
prints ms per thread count, GFLOP/s (build.json ``total_flops`` / latency), and the speedup from
the first to the last thread count. Goals (informational, exit status 0 either way): speedup
1->2 threads >= 1.6x, and ResNet-50 at 2 threads <= 700 ms, both for minigraph.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from _common import add_build_args, artifacts, build_info, context_line, load_both, verdict  # noqa: E402

SPEEDUP_GOAL = 1.6
RESNET50_2T_GOAL_MS = 700.0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_build_args(p)
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    p.add_argument("--number", type=int, default=2, help="runs averaged per repeat (default 2)")
    p.add_argument("--repeat", type=int, default=10,
                   help="repeats; the median is reported (default 10)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def worker(out: Path, number: int, repeat: int, seed: int) -> dict:
    """Runs inside the child: times both executors in this process's thread pool."""
    import statistics

    import tvm
    ld = load_both(out, seed)
    mg = ld.ex.benchmark(number=number, repeat=repeat)
    vm = ld.vm.time_evaluator("main", tvm.cpu(), number=number, repeat=repeat)(*ld.vm_args)
    pool = int(tvm.get_global_func("runtime.NumThreads")())
    return {"minigraph_s": statistics.median(mg), "vm_s": statistics.median(vm.results),
            "minigraph_repeats_s": list(mg), "vm_repeats_s": list(vm.results),
            "pool_threads": pool, "context": context_line()}


def run_child(out: Path, threads: int, args: argparse.Namespace) -> dict:
    """This script with --worker in a fresh process with TVM_NUM_THREADS=threads."""
    env = dict(os.environ, TVM_NUM_THREADS=str(threads))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE.parent), env.get("PYTHONPATH")]))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--out", str(out),
           "--model", args.model, "--number", str(args.number), "--repeat", str(args.repeat),
           "--seed", str(args.seed)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"worker with TVM_NUM_THREADS={threads} failed "
                           f"(exit {proc.returncode}):\n{proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _span(xs_s: list[float]) -> str:
    return f"{min(xs_s) * 1e3:>9.3f}..{max(xs_s) * 1e3:<8.3f}"


def print_table(results: dict[int, dict], flops: float) -> None:
    print(f"{'threads':>7} {'pool':>4} {'minigraph ms':>13} {'(min..max)':>19} {'VM ms':>10} "
          f"{'(min..max)':>19} {'mg GFLOP/s':>10} {'VM GFLOP/s':>10}")
    for n, r in results.items():
        mg, vm = r["minigraph_s"], r["vm_s"]
        print(f"{n:>7} {r['pool_threads']:>4} {mg * 1e3:>13.3f} {_span(r['minigraph_repeats_s'])}"
              f" {vm * 1e3:>10.3f} {_span(r['vm_repeats_s'])} "
              f"{flops / mg / 1e9:>10.2f} {flops / vm / 1e9:>10.2f}")
    for n, r in results.items():
        print(f"  child with {n} thread(s) started at: {r['context']}")


def report(results: dict[int, dict], model: str, flops: float) -> None:
    print_table(results, flops)
    counts = list(results)
    lo, hi = results[counts[0]], results[counts[-1]]
    mg_speedup = lo["minigraph_s"] / hi["minigraph_s"]
    vm_speedup = lo["vm_s"] / hi["vm_s"]
    print(f"speedup {counts[0]}->{counts[-1]} threads: minigraph {mg_speedup:.2f}x, "
          f"VM {vm_speedup:.2f}x; minigraph/VM at {counts[-1]} threads: "
          f"{hi['minigraph_s'] / hi['vm_s']:.3f}")
    mismatched = [n for n, r in results.items() if r["pool_threads"] != n]
    if mismatched:
        print(f"note: TVM created a pool of a different size than requested for {mismatched}")
    if counts[:1] == [1] and counts[-1] == 2:
        print(verdict(mg_speedup >= SPEEDUP_GOAL, f"minigraph speedup 1->2 threads >= "
                      f"{SPEEDUP_GOAL}x", f"{mg_speedup:.2f}x"))
    else:
        print("speedup goal (1->2 threads) not evaluated: --threads is not 1,...,2")
    if model == "resnet50" and 2 in results:
        ms = results[2]["minigraph_s"] * 1e3
        print(verdict(ms <= RESNET50_2T_GOAL_MS, f"ResNet-50 at 2 threads <= "
                      f"{RESNET50_2T_GOAL_MS:.0f} ms (minigraph)", f"{ms:.1f} ms"))
    else:
        print("latency goal not evaluated: it is stated for resnet50 at 2 threads")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.out, args.number, args.repeat, args.seed)))
        return 0
    counts = [int(t) for t in args.threads.split(",") if t.strip()]
    with artifacts(args.model, args.out, args.reuse) as out:
        flops = float(build_info(out)["total_flops"])
        print(f"{args.model}: {flops / 1e9:.4g} GFLOP per run; number={args.number} "
              f"repeat={args.repeat}; parent: {context_line()}")
        results = {n: run_child(out, n, args) for n in counts}
    report(results, args.model, flops)
    return 0


if __name__ == "__main__":
    sys.exit(main())
