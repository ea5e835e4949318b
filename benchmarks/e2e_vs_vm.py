"""End to end: minigraph's Executor.run vs the Relax VM on the same kernels, one process.

What it measures: warm end-to-end latency of one model (ResNet-50 by default) through
minigraph's ``Executor.run`` (model.so + graph.json) and through the Relax VM's ``main``
(model.vm.so: the same scheduled kernels), with the same input data and params.

How: both are loaded in this process (sharing TVM's thread pool, sized by TVM_NUM_THREADS; set
it explicitly, the default pool behaves differently from an explicit 1) and their outputs compared.
After ``--warmup`` untimed runs of each, ``--repeat`` rounds alternate the two (which one goes
first flips every round); each sample is the mean of ``--number`` back-to-back calls timed with
``time.perf_counter_ns`` from Python. Both calls have their arguments bound up front:
minigraph's views are bound at load time, the VM's via ``vm.save_function``. Reported per
executor: median, IQR and min in ms; the ratio of medians; and the median of per-round ratios
(samples taken next to each other, so less sensitive to drifting load). Goal (informational):
minigraph within 2% of the VM, i.e. |median ratio - 1| <= 0.02.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from _common import (  # noqa: E402
    Loaded,
    add_build_args,
    artifacts,
    context_line,
    first_output,
    load_both,
    stats_ms,
    verdict,
)

TOLERANCE = 0.02


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_build_args(p)
    p.add_argument("--number", type=int, default=1, help="calls averaged per sample (default 1)")
    p.add_argument("--repeat", type=int, default=20, help="samples of each executor (default 20)")
    p.add_argument("--warmup", type=int, default=2, help="untimed runs of each first (default 2)")
    return p.parse_args(argv)


def callables(ld: Loaded) -> dict[str, Callable[[], object]]:
    """Zero-argument calls of both executors, arguments pre-bound."""
    ld.vm.save_function("main", "main_bound", *ld.vm_args)
    return {"minigraph": ld.ex.run, "relax-vm": ld.vm["main_bound"]}


def compare_outputs(ld: Loaded, fns: dict[str, Callable[[], object]]) -> str:
    fns["minigraph"]()
    mine = ld.ex.get_output(0).numpy()
    theirs = first_output(fns["relax-vm"]())
    if mine.shape != theirs.shape:
        raise RuntimeError(f"output shapes differ: minigraph {mine.shape}, VM {theirs.shape}")
    diff = float(np.max(np.abs(mine.astype(np.float64) - theirs))) if mine.size else 0.0
    scale = float(np.max(np.abs(theirs))) if theirs.size else 0.0
    return f"output 0 {list(mine.shape)}: max |minigraph - VM| = {diff:.3g} (max |VM| {scale:.3g})"


def sample(fn: Callable[[], object], number: int) -> float:
    t0 = time.perf_counter_ns()
    for _ in range(number):
        fn()
    return (time.perf_counter_ns() - t0) / number / 1e9


def interleaved(fns: dict[str, Callable[[], object]], number: int, repeat: int,
                warmup: int) -> dict[str, list[float]]:
    """Seconds per call, one sample of each per round; the order flips every round."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    names = list(fns)
    samples: dict[str, list[float]] = {n: [] for n in names}
    for r in range(repeat):
        for name in (names if r % 2 == 0 else names[::-1]):
            samples[name].append(sample(fns[name], number))
    return samples


def report(samples: dict[str, list[float]]) -> None:
    print(f"{'executor':<10} {'median ms':>10} {'IQR ms':>9} {'min ms':>9} {'n':>4}")
    for name, xs in samples.items():
        st = stats_ms(xs)
        print(f"{name:<10} {st.median_ns:>10.3f} {st.iqr_ns:>9.3f} {st.min_ns:>9.3f} {st.n:>4}")
    mg, vm = samples["minigraph"], samples["relax-vm"]
    ratio = statistics.median(mg) / statistics.median(vm)
    paired = statistics.median(a / b for a, b in zip(mg, vm))
    print(f"ratio minigraph/VM: {ratio:.4f} (of medians), {paired:.4f} (median of per-round "
          f"ratios)")
    print(verdict(abs(ratio - 1) <= TOLERANCE, f"minigraph within {TOLERANCE:.0%} of the VM "
                  f"(|ratio - 1| <= {TOLERANCE})", f"{(ratio - 1) * 100:+.2f}%"))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with artifacts(args.model, args.out, args.reuse) as out:
        ld = load_both(out, args.seed)
        fns = callables(ld)
        print(compare_outputs(ld, fns))
        print(f"{args.model}: {args.warmup} warm-up + {args.repeat} interleaved samples x "
              f"{args.number} call(s) each; context at start: {context_line()}")
        samples = interleaved(fns, args.number, args.repeat, args.warmup)
        import tvm
        pool = int(tvm.get_global_func("runtime.NumThreads")())
    print(f"context at end: {context_line()}; TVM thread pool: {pool} thread(s)")
    report(samples)
    return 0


if __name__ == "__main__":
    sys.exit(main())
