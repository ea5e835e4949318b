"""TVM's measuring protocols side by side on one model (minigraph.protocols).

What it measures: the same model, on the same kernels, under debug_executor.profile(), the old
VM profiler, run_individual, benchmark(end_to_end=True), and TVM 0.27's Relax VM (time_evaluator
on main, and per call via set_instrument). Prints the side-by-side table, how long it took, and
optionally writes the results as JSON (--json). Set TVM_NUM_THREADS explicitly.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from _common import add_build_args, artifacts, context_line  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_build_args(p)
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    p.add_argument("--top", type=int, default=10)
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    os.environ.setdefault("TVM_NUM_THREADS", str(args.threads))
    from minigraph.artifacts.buildinfo import read_build
    from minigraph.protocols.measure import measure_protocols
    from minigraph.report.protocols import format_protocols
    from minigraph.results.protocols import to_dict
    from minigraph.runtime.debug import DebugExecutor
    from minigraph.runtime.opened import VmReference
    from minigraph.values.inputs import random_inputs
    with artifacts(args.model, args.out, args.reuse) as out:
        ex = DebugExecutor.from_files(out / "model.so", out / "graph.json")
        ex.set_input(**random_inputs(ex, {}, args.seed))
        print(f"context at start: {context_line()}")
        t0 = time.perf_counter()
        vm = VmReference(out / "model.vm.so", read_build(out / "model.vm.so"))
        res = measure_protocols(ex, vm=vm, threads=args.threads)
        took = time.perf_counter() - t0
    print(format_protocols(res, [op.name for op in ex.ops], args.top))
    print(f"measure_protocols took {took:.1f} s; context at end: {context_line()}")
    if args.json:
        args.json.write_text(json.dumps(to_dict(res), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
