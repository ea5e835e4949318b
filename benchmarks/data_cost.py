"""The data as a cause, measured: subnormal weights, and weights never set.

1. Accuracy of the data cost: the first conv's weights made subnormal; minigraph's profile
   reports that op's time as given vs with its subnormal inputs flushed. Independently, two
   executors are built, one on the subnormal weights and one on the same weights flushed to
   zero, and that one op is timed in each by TVM's own ``time_evaluator`` (C++ loop),
   alternating. Prints both ratios side by side and whether they agree within 30%.
2. The forum thread's situation: per-op one-pass times (the old debug_executor protocol) of
   the model with its params, and of the model whose weights were never set (``--fill
   uninitialized``: storage as the allocator left it), paired per op: the ops the data slowed
   and the median op. On a CPU without a subnormal penalty every ratio is about 1: said so.

    PYTHONPATH=. python benchmarks/data_cost.py [--model resnet18] [--out DIR --reuse]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from _common import add_build_args, artifacts, context_line, verdict  # noqa: E402

from minigraph.artifacts.model_files import locate  # noqa: E402
from minigraph.artifacts.params import load_params_file, save_params_file  # noqa: E402
from minigraph.measure.environment import capture_env  # noqa: E402
from minigraph.profile.session import profile_files  # noqa: E402
from minigraph.results.profile import Settings  # noqa: E402
from minigraph.runtime.doors import open_model  # noqa: E402
from minigraph.threadpool.config import ThreadRequest  # noqa: E402
from minigraph.values.policy import prepare_values  # noqa: E402

SUBNORMAL = np.float32(1e-40)


def _first_conv_weight(out: Path) -> str:
    params = load_params_file(out / "model.params")
    return next(n for n, a in params.items() if a.ndim == 4)


def _variant(src: Path, dst: Path, name: str, value) -> Path:
    shutil.copytree(src, dst)
    p = load_params_file(dst / "model.params")
    p[name] = np.where(p[name] >= 0, 1, -1).astype(np.float32) * value
    save_params_file(dst / "model.params", p)
    return dst


def _op_time(d: Path, index: int, rounds: int) -> list[float]:
    """time_evaluator of op ``index`` of the model in ``d`` (seconds per call, per round)."""
    import tvm
    model = open_model(locate(d))
    prepare_values(model)
    ex = model.executor
    ex.run()
    op = ex.ops[index]
    ev = ex.module.time_evaluator(op.func_name, tvm.cpu(), number=10, repeat=1,
                                  min_repeat_ms=20)
    return [ev(*op.args).mean for _ in range(rounds)]


def accuracy(out: Path, work: Path, rounds: int) -> None:
    weight = _first_conv_weight(out)
    sub = _variant(out, work / "subnormal", weight, SUBNORMAL)
    zero = _variant(out, work / "flushed", weight, 0.0)
    settings = Settings(modes=("e2e",), e2e_repeat=5, flush_nbytes=None)
    prof, _, _ = profile_files(locate(sub), settings, ThreadRequest(threads=1))
    report = prof.data_report()
    cost = min(report.costs, key=lambda c: c.index) if report and report.costs else None
    if cost is None:
        print("minigraph reported no op reading subnormal values: nothing to compare")
        return
    a, b = [], []
    for _ in range(rounds):  # alternating, so a drift of the machine lands on both
        a += _op_time(sub, cost.index, 1)
        b += _op_time(zero, cost.index, 1)
    independent = statistics.median(a) / statistics.median(b)
    agree = abs(cost.ratio / independent - 1) <= 0.30
    print(f"op {cost.index} {cost.name}: weights {weight} 100% subnormal")
    print(f"  minigraph's data cost:      {cost.ratio:.3f}x [{cost.ratio_lo:.3f}, "
          f"{cost.ratio_hi:.3f}] ({len(cost.given_ns)} interleaved pairs)")
    print(f"  independent time_evaluator: {independent:.3f}x (subnormal {statistics.median(a) * 1e6:.1f} "
          f"us vs flushed {statistics.median(b) * 1e6:.1f} us, {rounds} alternating rounds)")
    print(verdict(agree, "within 30% of the independent ratio",
                  f"{100 * (cost.ratio / independent - 1):+.1f}%"))


def thread_pattern(out: Path, work: Path) -> None:
    unset = work / "no-params"
    unset.mkdir()
    for name in ("model.so", "graph.json", "build.json"):
        shutil.copy(out / name, unset / name)
    settings = Settings(modes=("one-pass",), flush_nbytes=None)
    given, _, _ = profile_files(locate(out), settings, ThreadRequest(threads=1))
    left, _, _ = profile_files(locate(unset), settings, ThreadRequest(threads=1),
                               fill="uninitialized")
    ratios = [(left.median("one-pass", i) / given.median("one-pass", i), i)
              for i in range(len(given.ops))]
    ratios.sort(reverse=True)
    report = left.data_report()
    share = [sum(v.subnormal for v in report.values.values()),
             sum(v.n for n, v in report.values.items() if report.sources[n]["role"] == "weight")]
    print(f"weights never set: {100 * share[0] / max(share[1], 1):.2f}% of their values "
          f"subnormal (what this process's allocator left)")
    print("  one-pass per op, never set / with params: " + ", ".join(
        f"op {i} {r:.2f}x" for r, i in ratios[:3]) +
        f"; median op {statistics.median(r for r, _ in ratios):.2f}x")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_build_args(p, model="tiny-cnn")
    p.add_argument("--rounds", type=int, default=9)
    args = p.parse_args(argv)
    os.environ.setdefault("TVM_NUM_THREADS", "1")
    cpu = capture_env().get("cpu", {})
    print(f"CPU: {cpu.get('model')} ({cpu.get('microarchitecture', '?')}); {context_line()}")
    t0 = time.perf_counter()
    with artifacts(args.model, args.out, args.reuse) as out:
        import tempfile
        with tempfile.TemporaryDirectory(prefix="mg-data-") as tmp:
            accuracy(out, Path(tmp), args.rounds)
            thread_pattern(out, Path(tmp))
    print(f"took {time.perf_counter() - t0:.1f} s; context at end: {context_line()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
