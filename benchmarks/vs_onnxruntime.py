"""minigraph vs ONNX Runtime on the same networks: zoo ResNet-18/50, MobileNet-V2, built from the
zoo (NHWC) and from an ONNX export of the very same weights (NCHW, Conv + BatchNormalization,
Gemm head; written here by tests/helpers/zoo_onnx.py), both against ONNX Runtime on that ONNX file.

What it measures: warm end-to-end latency (median of ``--runs`` calls after ``--warmup``) of
  ort         onnxruntime.InferenceSession(model.onnx), CPU provider, intra_op threads = T
  mg-onnx     minigraph Executor.run on ``minigraph build model.onnx``
  mg-zoo      minigraph Executor.run on ``minigraph build <zoo name>``
each in a fresh process (``--worker``), T = 1 and 2 (TVM_NUM_THREADS / intra_op_num_threads),
interleaved: every round runs every (runtime, T) once, in an order that flips every round.
Reported per model and T: the median over rounds of each runtime's median, the ratio
minigraph/ORT of those, and the median of per-round ratios (paired samples, less sensitive to
load drifting between rounds); in parentheses the range of the rounds' medians. Outputs are checked first: each minigraph build against ORT on
the same input, max |diff| / max |ORT| <= 1e-4. Build time of the ONNX model is printed.

Then, per model and T, the five compute kernels (conv, matmul) furthest behind ORT's own
per-node profile (``enable_profiling``), paired in execution order (benchmarks/_ort_nodes.py):
the next slow kernel named, not guessed (``--no-kernels`` skips it).

Each model's achieved GFLOP/s is printed against this host's measured peak for T threads
(measure/peak.py: an FMA loop at the host's vector width, cached per CPU model; a ``--target``
build of narrower vectors reads against the host's wider peak): for ORT, the network's FLOPs
as direct convs compute them (build.json's direct_flops) over its median latency; for each
minigraph build, the FLOPs its kernels execute (total_flops: fewer where a 3x3 conv is
Winograd's) over its own.

``--tune`` builds with measured conv tiles (compiler/tuning.py), the default with the model's.

Goals (informational; the issue's acceptance): every model <= 1.1x ORT's time at 1 thread,
<= 1.0x at 2. On a shared machine the ratios are provisional: re-run on a quiet one.

``--onnx a.onnx,b.onnx`` measures ONNX files of your own instead (ORT and minigraph's build of
each; a seeded input of the file's input shape, symbolic dimensions as 1).

    pip install 'minigraph[bench]'   # onnxruntime, onnx
    python benchmarks/vs_onnxruntime.py --models resnet50 --rounds 5
    python benchmarks/vs_onnxruntime.py --onnx my_export.onnx
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent), str(HERE.parent / "tests" / "helpers")]

from _ort_nodes import input_nchw, kernel_gaps, ort_session, session_input  # noqa: E402

GOALS = {1: 1.1, 2: 1.0}  # threads -> the largest minigraph/ORT time ratio the issue accepts
BUILDS = {"mg-onnx": "onnx-build", "mg-zoo": "zoo-build"}  # each minigraph runtime's build dir


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=None, type=lambda s: [m for m in s.split(",") if m],
                   help="zoo models (default resnet18,resnet50,mobilenet_v2; none with --onnx)")
    p.add_argument("--onnx", default=[], type=lambda s: [Path(f) for f in s.split(",") if f],
                   help="ONNX files of your own (comma-separated): each built by minigraph and "
                        "run beside ORT on a seeded input of the file's input shape")
    p.add_argument("--threads", default="1,2", type=lambda s: [int(t) for t in s.split(",")])
    p.add_argument("--rounds", type=int, default=3, help="fresh processes per runtime and T")
    p.add_argument("--runs", type=int, default=20, help="timed runs per process")
    p.add_argument("--warmup", type=int, default=5, help="untimed runs per process first")
    p.add_argument("--out", type=Path, default=Path("/tmp/minigraph-vs-ort"),
                   help="where the ONNX files and builds go (default /tmp/minigraph-vs-ort)")
    p.add_argument("--reuse", action="store_true", help="reuse builds already in --out")
    p.add_argument("--target", default=None,
                   help="LLVM CPU name for minigraph's builds (default: this machine's); e.g. "
                        "znver2 on an AVX-512 host measures the AVX2 tiles, against an ORT that "
                        "still uses the host's AVX-512 (an upper bound on the AVX2 ratio)")
    p.add_argument("--tune", action="store_true",
                   help="build minigraph's models with measured conv tiles (minigraph build "
                        "--tune: timed at this host's CPU count, cached per machine)")
    p.add_argument("--no-kernels", dest="kernels", action="store_false",
                   help="skip the per-kernel gaps against ORT's own node profile")
    p.add_argument("--worker", nargs=4, metavar=("RUNTIME", "PATH", "THREADS", "SEED"),
                   help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.models is None:
        args.models = [] if args.onnx else ["resnet18", "resnet50", "mobilenet_v2"]
    return args


def make_runner(runtime: str, path: str, seed: int):
    """A zero-argument call running the model once on a fixed input, and a way to read its
    output (in the ONNX model's layout). The input is the ONNX file's (ORT's) shape; a zoo
    build takes the same image NHWC."""
    if runtime == "ort":
        sess = ort_session(path, int(os.environ["MG_BENCH_THREADS"]))
        name, x = session_input(sess, seed)
        box: list = []
        return (lambda: box.__setitem__(slice(None), sess.run(None, {name: x}))), lambda: box[0]
    from minigraph.runtime.debug import DebugExecutor
    out = Path(path)
    ex = DebugExecutor.from_files(out / "model.so", out / "graph.json")
    first = ex.graph.input_names()[0]
    shape = tuple(ex.graph.shapes[ex.graph.eid(ex.graph.node_by_name(first).index)])
    if runtime == "mg-zoo":  # the zoo model takes the ONNX export's NCHW image as NHWC
        n, h, w, c = shape
        x = np.ascontiguousarray(input_nchw(seed, (n, c, h, w)).transpose(0, 2, 3, 1))
    else:
        x = input_nchw(seed, shape)
    ex.set_input(**{first: x})
    return ex.run, lambda: ex.get_output(0).numpy()


def worker(runtime: str, path: str, threads: int, seed: int, runs: int, warmup: int) -> None:
    os.environ["MG_BENCH_THREADS"] = str(threads)
    run, output = make_runner(runtime, path, seed)
    for _ in range(warmup):
        run()
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter_ns()
        run()
        samples.append((time.perf_counter_ns() - t0) / 1e6)
    np.save(os.environ["MG_BENCH_OUTPUT"], output())
    print(json.dumps({"median_ms": statistics.median(samples), "min_ms": min(samples)}))


def spawn(runtime: str, path: Path, threads: int, args, output: Path | None = None) -> dict:
    env = {**os.environ, "TVM_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads),
           "MG_BENCH_OUTPUT": str(output or args.out / "last_output.npy")}
    cmd = [sys.executable, __file__, "--worker", runtime, str(path), str(threads), "0",
           "--runs", str(args.runs), "--warmup", str(args.warmup)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(f"{runtime} worker failed: {proc.stderr.strip()[-500:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def prepare_onnx(onnx_path: Path, args) -> dict[str, Path]:
    """Builds a given ONNX file (``--onnx``); returns runtime -> path (ORT and minigraph's)."""
    paths = {"ort": onnx_path.resolve(), "mg-onnx": args.out / onnx_path.stem / BUILDS["mg-onnx"]}
    _build("mg-onnx", str(onnx_path), paths["mg-onnx"], args)
    return paths


def prepare(model: str, args) -> dict[str, Path]:
    """Writes model.onnx and builds it and the zoo model; returns runtime -> path."""
    from zoo_onnx import zoo_to_onnx

    from minigraph.compiler.zoo import load_zoo_model
    root = args.out / model
    root.mkdir(parents=True, exist_ok=True)
    onnx_path = root / "model.onnx"
    paths = {"ort": onnx_path, **{r: root / d for r, d in BUILDS.items()}}
    if not (args.reuse and onnx_path.is_file()):
        zoo_to_onnx(load_zoo_model(model), onnx_path)
    for runtime, source in (("mg-onnx", str(onnx_path)), ("mg-zoo", model)):
        _build(runtime, source, paths[runtime], args)
    return paths


def _build(runtime: str, source: str, out: Path, args) -> None:
    """minigraph's build of ``source`` into ``out`` (kept with ``--reuse``), timed."""
    from minigraph.compiler.compiler import build
    if args.reuse and (out / "build.json").is_file():
        return
    t0 = time.perf_counter()
    res = build(source, out, target=args.target, tune=args.tune)
    print(f"  built {runtime} in {time.perf_counter() - t0:.1f} s "
          f"({len(res.graph.op_nodes())} ops, model.vm.so "
          f"{(out / 'model.vm.so').stat().st_size / 1024:.0f} KiB)", flush=True)


def check_outputs(paths: dict[str, Path], args) -> str:
    outs = {}
    for runtime, path in paths.items():
        dst = args.out / f"output-{runtime}.npy"
        spawn(runtime, path, 1, argparse.Namespace(**{**vars(args), "runs": 1, "warmup": 0}), dst)
        outs[runtime] = np.load(dst)
    ref = outs["ort"].astype(np.float64)
    lines = []
    for runtime in (r for r in BUILDS if r in paths):
        rel = float(np.abs(outs[runtime] - ref).max() / np.abs(ref).max())
        lines.append(f"{runtime} vs ort: max rel diff {rel:.2e} "
                     f"{'ok' if rel <= 1e-4 else 'MISMATCH (> 1e-4)'}")
    return "; ".join(lines)


def measure(paths: dict[str, Path], args) -> dict[tuple[str, int], list[float]]:
    medians: dict[tuple[str, int], list[float]] = {}
    for r in range(args.rounds):
        order = [(rt, t) for t in args.threads for rt in paths]
        for runtime, threads in (order if r % 2 == 0 else order[::-1]):
            res = spawn(runtime, paths[runtime], threads, args)
            medians.setdefault((runtime, threads), []).append(res["median_ms"])
    return medians


def report(model: str, medians: dict, args) -> list[str]:
    lines = []
    for t in args.threads:
        ort = medians[("ort", t)]
        cells = [f"ort {statistics.median(ort):7.2f} ms ({min(ort):.1f}-{max(ort):.1f})"]
        for runtime in (r for r in BUILDS if (r, t) in medians):
            mine = medians[(runtime, t)]
            ratio = statistics.median(mine) / statistics.median(ort)
            paired = statistics.median(m / o for m, o in zip(mine, ort))
            goal = GOALS.get(t)
            verdict = "" if goal is None else (" ok" if ratio <= goal else f" > {goal}x goal")
            cells.append(f"{runtime} {statistics.median(mine):7.2f} ms ({min(mine):.1f}-"
                         f"{max(mine):.1f}) = {ratio:.2f}x (paired {paired:.2f}x){verdict}")
        lines.append(f"{model:13s} T={t}: " + " | ".join(cells))
        lines.append(achieved(model, medians, t, args))
    return lines


def achieved(model: str, medians: dict, threads: int, args) -> str:
    """GFLOP/s each runtime executes and its share of the host's measured peak at ``threads``:
    ORT the direct convs' FLOPs (build.json direct_flops), minigraph its kernels' own."""
    from minigraph.measure.peak import machine_peak
    peak = machine_peak(threads).get("gflops")
    cells = []
    for runtime in ("ort", *(r for r in BUILDS if (r, threads) in medians)):
        flops = executed_flops(args.out / model, runtime)
        g = flops / (statistics.median(medians[(runtime, threads)]) * 1e6)
        cells.append(f"{runtime} {g:.0f}" + (f" ({g / peak:.0%})" if peak else ""))
    where = f"of the host's measured peak {peak:.0f}" if peak else "no plausible peak measured"
    return f"{'':13s} T={threads}: GFLOP/s ({where}): " + " | ".join(cells)


def executed_flops(root: Path, runtime: str) -> float:
    """The FLOPs a run executes: a minigraph build's total_flops; ORT's, the ONNX network's
    with direct convs (the ONNX build's direct_flops; total_flops from builds before it)."""
    info = json.loads((root / BUILDS.get(runtime, BUILDS["mg-onnx"]) / "build.json").read_text())
    return float(info.get("direct_flops" if runtime == "ort" else "total_flops")
                 or info.get("total_flops") or 0.0)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker:
        runtime, path, threads, seed = args.worker
        worker(runtime, path, int(threads), int(seed), args.runs, args.warmup)
        return 0
    from _common import context_line
    args.out.mkdir(parents=True, exist_ok=True)
    results = []
    jobs = [(m, prepare, m) for m in args.models] + [(f.stem, prepare_onnx, f) for f in args.onnx]
    for model, prepare_paths, source in jobs:
        print(f"{model}:", flush=True)
        paths = prepare_paths(source, args)
        print("  " + check_outputs(paths, args), flush=True)
        lines = report(model, measure(paths, args), args)
        results += lines
        print("\n".join(lines), flush=True)
        if args.kernels:
            print("  the compute kernels furthest behind ORT's own node profile (mg-onnx build):")
            for t in args.threads:
                print("\n".join(kernel_gaps(paths["ort"], paths["mg-onnx"], t,
                                            args.out / model)), flush=True)
    print("\nsummary (medians over rounds; minigraph / ORT; provisional on a shared machine)")
    print("\n".join(results))
    print(context_line() + (f" minigraph target={args.target}" if args.target else "")
          + (" tiles measured (--tune)" if args.tune else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
