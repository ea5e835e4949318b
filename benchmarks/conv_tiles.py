"""Conv tiles with a tail against tiles that divide the output width, side by side.

Builds one model twice for one target (``--target``, e.g. ``znver2`` for AVX2 code on any
machine that runs it): as minigraph builds it (compiler/conv_tiles.py ``conv_tile``: a
shorter last tile where the divisor tiles are load-bound) and with every tile dividing the
width (the rule before tails). Then profiles both in fresh processes, alternating A B A B for
``--rounds`` rounds (in-run, one thread by default), and prints each round's ratio of the
per-op sums (paired: a slow spell of the machine hits the neighbouring pair alike), their
median, the ops whose tile changed, and the outputs' largest difference (they must agree).

    PYTHONPATH=. python benchmarks/conv_tiles.py --model resnet50 --target znver2
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from _common import context_line  # noqa: E402

# run in a fresh interpreter: the build with every tile dividing the width (tails off)
DIVISOR_BUILD = """
import sys
import minigraph.compiler.conv_tiles as ct
tile = ct.conv_tile
ct.conv_tile = lambda w, c, lanes, regs, tails=False, whole=False: tile(w, c, lanes, regs,
                                                                     whole=whole)
from minigraph.compiler.compiler import build
build(sys.argv[1], sys.argv[2], target=sys.argv[3] or None, vm=False)
"""


def build_both(model: str, target: str, out: Path) -> dict[str, Path]:
    dirs = {"tails": out / "tails", "divisor": out / "divisor"}
    from minigraph.compiler.compiler import build
    build(model, dirs["tails"], target=target or None, vm=False)
    subprocess.run([sys.executable, "-c", DIVISOR_BUILD, model, str(dirs["divisor"]), target],
                   check=True, cwd=HERE.parent)
    return dirs


def in_run_sum_ms(build: Path, threads: int, out: Path) -> tuple[float, dict[str, float]]:
    subprocess.run([sys.executable, "-m", "minigraph", "profile", str(build), "--threads",
                    str(threads), "--mode", "in-run", "--quiet", "--json", str(out)],
                   check=True, capture_output=True, cwd=HERE.parent)
    from minigraph.results.profile import Profile
    prof = Profile.from_dict(json.loads(out.read_text()))
    per_op = {op["name"]: (prof.median("in-run", op["index"]) or 0.0) / 1e3 for op in prof.ops}
    return sum(per_op.values()) / 1e3, per_op


def tiles(build: Path) -> dict[str, str]:
    kernels = json.loads((build / "build.json").read_text())["kernels"]
    return {k: next((n for n in v["schedule"] if "conv tile" in n), "") for k, v in
            kernels.items()}


def max_rel_diff(a: Path, b: Path) -> float:
    import numpy as np

    from minigraph.runtime.debug import DebugExecutor
    outs = []
    for d in (a, b):
        ex = DebugExecutor.from_files(d / "model.so", d / "graph.json")
        for name in ex.input_names():
            eid = ex.entry_of(name)
            if name not in ex.bound_params:
                x = np.random.default_rng(0).standard_normal(ex.graph.shapes[eid])
                ex.set_input(name, x.astype(ex.graph.dltypes[eid]))
        ex.run()
        outs.append(ex.get_output(0).numpy())
    return float(np.abs(outs[0] - outs[1]).max() / max(np.abs(outs[0]).max(), 1e-30))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="resnet50")
    p.add_argument("--target", default="", help="LLVM CPU (default: this machine's)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=4)
    args = p.parse_args()
    print(context_line())
    with tempfile.TemporaryDirectory() as tmp:
        dirs = build_both(args.model, args.target, Path(tmp))
        changed = {k: (tiles(dirs["divisor"])[k], v) for k, v in tiles(dirs["tails"]).items()
                   if v != tiles(dirs["divisor"])[k]}
        print(f"{args.model} for {args.target or 'this CPU'}: {len(changed)} kernels take a "
              f"tile with a tail; outputs differ by {max_rel_diff(*dirs.values()):.2e} "
              "(relative)")
        ratios, per_op = [], {}
        for r in range(args.rounds):
            sums = {}
            for name, d in dirs.items():
                sums[name], ops = in_run_sum_ms(d, args.threads, Path(tmp) / f"{name}{r}.json")
                for op, us in ops.items():
                    per_op.setdefault(op, {}).setdefault(name, []).append(us)
            ratios.append(sums["tails"] / sums["divisor"])
            print(f"  round {r + 1}: divisor tiles {sums['divisor']:.2f} ms, with tails "
                  f"{sums['tails']:.2f} ms, ratio {ratios[-1]:.3f}")
        print(f"per-op sum, tails / divisor, median of {args.rounds} paired rounds at "
              f"{args.threads} thread(s): {statistics.median(ratios):.3f}x")
        moved = sorted((statistics.median(v["tails"]) / statistics.median(v["divisor"]), op)
                       for op, v in per_op.items() if statistics.median(v["divisor"]) > 100)
        for ratio, op in moved[:5] + moved[-3:]:
            print(f"    {ratio:.2f}x  {op}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
