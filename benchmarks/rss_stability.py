"""Memory stability: does profiling over and over, in one process, grow its resident memory?

What it measures: the process's RSS (psutil) after the 1st and after the Nth full profile
(default 100) of a small model (tiny-cnn by default), and the growth between them in percent.

How: as a user's script would: for each profile a fresh ``DebugExecutor.from_files`` (model.so,
graph.json, model.params), seeded random inputs, and ``minigraph.profile.measure`` with every
mode (first-run, one-pass, warm, cold, e2e); the executor and profile are then dropped. RSS is
read after ``gc.collect()``, so what remains is what leaked (pools, views, loaded modules,
TVM-side caches), not garbage waiting for the collector. The first profile is the baseline
because it pays one-time costs (TVM's thread pool, imports, allocator arenas).
Goal: growth from profile 1 to profile N <= 5%.
"""
from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from _common import add_build_args, artifacts, context_line, verdict  # noqa: E402

GOAL_PCT = 5.0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_build_args(p, model="tiny-cnn")
    p.add_argument("--profiles", type=int, default=100, help="full profiles to run (default 100)")
    p.add_argument("--warm-budget-ms", type=int, default=20,
                   help="warm mode's time budget per op (default 20; the CLI's is 200)")
    args = p.parse_args(argv)
    if args.profiles < 2:
        p.error("--profiles must be >= 2")
    return args


def rss_mib() -> float:
    import psutil
    gc.collect()
    return psutil.Process().memory_info().rss / 2**20


def one_profile(out: Path, settings, seed: int) -> None:
    """What a user's script does: load, feed, profile, drop."""
    from minigraph.profile.profiler import measure
    from minigraph.runtime.debug import DebugExecutor
    from minigraph.values.inputs import random_inputs
    ex = DebugExecutor.from_files(out / "model.so", out / "graph.json")
    ex.set_input(**random_inputs(ex, {}, seed))
    prof = measure(ex, settings)
    if prof.partial:
        raise KeyboardInterrupt


def run(out: Path, args: argparse.Namespace) -> tuple[float, float, list[float]]:
    from minigraph.results.profile import Settings
    settings = Settings(warm_budget_ms=args.warm_budget_ms)
    trace = []
    t0 = time.perf_counter()
    for i in range(args.profiles):
        one_profile(out, settings, args.seed)
        trace.append(rss_mib())
        if (i + 1) % 10 == 0:
            print(f"  profile {i + 1:4d}: RSS {trace[-1]:8.1f} MiB  "
                  f"({time.perf_counter() - t0:.0f} s)", flush=True)
    return trace[0], trace[-1], trace


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    print(context_line())
    with artifacts(args.model, args.out, args.reuse) as out:
        first, last, trace = run(out, args)
    growth = 100 * (last - first) / first
    print(f"RSS after profile 1: {first:.2f} MiB; after profile {args.profiles}: {last:.2f} MiB; "
          f"growth {growth:+.2f}% (max {max(trace):.2f} MiB)")
    print(verdict(growth <= GOAL_PCT, f"RSS growth <= {GOAL_PCT:.0f}% over {args.profiles} "
                  "profiles", f"{growth:+.2f}%"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
