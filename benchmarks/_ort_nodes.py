"""The kernels that carry minigraph's gap to ONNX Runtime: ORT's own per-node profile
(``SessionOptions.enable_profiling``) beside minigraph's in-run medians of the same build,
paired in execution order over the compute nodes (conv and matmul: both runtimes fuse the
elementwise tail into them, one node per ONNX Conv/Gemm), the largest differences first.

Not a benchmark itself: benchmarks/vs_onnxruntime.py prints its lines. Both sides run in
fresh processes at the same thread count; ORT's figure is a node's mean duration over the
timed runs (its profile records every call), minigraph's the op's in-run median.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

COMPUTE_ORT = ("Conv", "FusedConv", "NhwcFusedConv", "QLinearConv", "Gemm", "MatMul",
               "FusedGemm", "FusedMatMul")
COMPUTE_MG = ("conv2d", "dense/matmul")


def input_nchw(seed: int, shape: tuple[int, ...] = (1, 3, 224, 224)):
    """The benchmarks' one input: a seeded float32 tensor (by default a 1x3x224x224 image,
    NCHW; an ONNX file's own input shape for ``--onnx``)."""
    import numpy as np
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


def session_input(sess, seed: int):
    """(name, tensor) for an ORT session's first input: its shape, symbolic dims as 1."""
    first = sess.get_inputs()[0]
    shape = tuple(d if isinstance(d, int) and d > 0 else 1 for d in first.shape)
    return first.name, input_nchw(seed, shape)


def ort_session(onnx_path: str, threads: int, profile: bool = False):
    """ONNX Runtime on the CPU provider at ``threads`` intra-op threads (one inter-op);
    ``profile``: with its per-node profile on."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
    if profile:
        so.enable_profiling = True
        so.profile_file_prefix = str(Path(tempfile.mkdtemp()) / "ort")
    return ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])


def ort_worker(onnx_path: str, threads: int, runs: int, seed: int) -> list[dict]:
    """In a fresh process: ORT's per-node mean duration (us) over ``runs`` calls after one
    warm-up, in the order the nodes first ran."""
    sess = ort_session(onnx_path, threads, profile=True)
    name, x = session_input(sess, seed)
    for _ in range(runs + 1):
        sess.run(None, {name: x})
    events = json.loads(Path(sess.end_profiling()).read_text())
    nodes: dict[str, dict] = {}
    for e in events:
        if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time"):
            node = nodes.setdefault(e["name"][:-len("_kernel_time")],
                                    {"op": e.get("args", {}).get("op_name", "?"), "us": []})
            node["us"].append(float(e["dur"]))
    return [{"name": n, "op": v["op"], "us": statistics.mean(v["us"][1:] or v["us"])}
            for n, v in nodes.items()]


def _ort_nodes(onnx_path: Path, threads: int, runs: int) -> list[dict]:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    done = subprocess.run([sys.executable, __file__, str(onnx_path), str(threads), str(runs)],
                          capture_output=True, text=True, env=env, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"ORT profile failed: {done.stderr.strip()[-300:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _mg_ops(build: Path, threads: int, out: Path) -> list[dict]:
    saved = out / f"inrun-T{threads}.json"
    done = subprocess.run([sys.executable, "-m", "minigraph", "profile", str(build / "model.so"),
                           str(build / "graph.json"), "--threads", str(threads), "--mode",
                           "in-run", "--quiet", "--json", str(saved)],
                          capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"minigraph profile failed: {done.stderr.strip()[-300:]}")
    from minigraph.results.profile import Profile
    prof = Profile.from_dict(json.loads(saved.read_text()))
    return [{"name": op["name"], "kind": op["kind"],
             "us": prof.median("in-run", op["index"]) / 1e3} for op in prof.ops]


def kernel_gaps(onnx_path: Path, build: Path, threads: int, out: Path, runs: int = 20,
                top: int = 5) -> list[str]:
    """Lines naming the ``top`` compute kernels slowest against ORT's node, or why they
    cannot be paired."""
    ort_nodes = [n for n in _ort_nodes(onnx_path, threads, runs) if n["op"] in COMPUTE_ORT]
    mg = [o for o in _mg_ops(build, threads, out) if o["kind"] in COMPUTE_MG]
    if len(ort_nodes) != len(mg):
        return [f"  T={threads}: {len(mg)} minigraph compute ops vs {len(ort_nodes)} ORT compute "
                "nodes: not paired by order (a fusion differs)"]
    pairs = sorted(zip(mg, ort_nodes), key=lambda p: p[1]["us"] - p[0]["us"])
    total = sum(m["us"] - o["us"] for m, o in pairs)
    lines = [f"  T={threads}: compute kernels minigraph - ORT = {total:+.0f} us over "
             f"{len(pairs)} pairs; largest gaps:"]
    for m, o in pairs[:top]:
        lines.append(f"    {m['us'] - o['us']:+7.0f} us  {m['name']} {m['us']:.0f} us vs ORT "
                     f"{o['name']} ({o['op']}) {o['us']:.0f} us")
    return lines


if __name__ == "__main__":  # the fresh process _ort_nodes runs: ONNX THREADS RUNS
    print(json.dumps(ort_worker(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), 0)))
