"""Valid seed inputs for tools/fuzz.py, written in code (no binary files in the repository).

Seeds cover what the readers accept: a minigraph-style graph (multi-output op, shared storage,
``__nop``/``__copy``, flatten_data, metadata), a Relay-era graph (``attr`` key, two-element
entries, int attrs, no node_row_ptr, device_index/storage_scope), param blobs in every dtype
including 0-d and empty arrays, a full saved profile, a kernel signature string, every other
saved document (diagnosis, fleet, comparison, kernel comparison, protocol results: the golden
documents tools/golden.py writes, read as text) and TVM's own reports in each form it printed
(text table in two locales, CSV, JSON, BenchmarkResult, a table and a benchmark in one log),
printed by tests/helpers/tvm_printer.py.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from graphdoc import null as _null, op as _op
from tvm_printer import EN_US, C, Cnt, Dur, as_csv, as_json, as_table, benchmark_str, profiled_run

from minigraph.artifacts.params import np_dtype, save_params


def _minigraph_style() -> dict:
    nodes = [_null("data"), _null("w"), _null("b"),
             _op("conv", "k_conv", [[0, 0, 0], [1, 0, 0], [2, 0, 0]], hash="ab12",
                 data_layout="NHWC"),
             _op("split", "k_split", [[3, 0, 0]], n_out=2),
             _op("add", "k_add", [[4, 0, 0], [4, 1, 0]]),
             _op("nop", "__nop", [[5, 0, 0]]),
             _op("flat", "k_flat", [[6, 0, 0]], flatten="1"),
             _op("copy", "__copy", [[7, 0, 0]])]
    shapes = [[1, 8, 8, 3], [3, 3, 3, 4], [4], [1, 8, 8, 4], [1, 8, 8, 2], [1, 8, 8, 2],
              [1, 8, 8, 2], [1, 8, 8, 2], [128], [128]]
    return {"nodes": nodes, "arg_nodes": [0, 1, 2], "heads": [[8, 0, 0], [4, 1, 0]],
            "attrs": {"dltype": ["list_str", ["float32"] * 10],
                      "shape": ["list_shape", shapes],
                      "storage_id": ["list_int", [0, 1, 2, 3, 4, 5, 3, 3, 4, 6]]},
            "node_row_ptr": [0, 1, 2, 3, 4, 6, 7, 8, 9, 10],
            "metadata": {"signature": "minigraph", "version": 1}}


def _relay_style() -> dict:
    nodes = [_null("x"), _null("p0"),
             {"op": "tvm_op", "name": "fused_add", "inputs": [[0, 0], [1, 0]],
              "attr": {"func_name": "fused_add", "num_inputs": 2, "num_outputs": 1,
                       "flatten_data": 0}},
             {"op": "tvm_op", "name": "fused_cast", "inputs": [[2, 0]],
              "attrs": {"func_name": "fused_cast", "num_inputs": "1", "num_outputs": "1",
                        "flatten_data": "0", "out_layout": ""}}]
    return {"nodes": nodes, "arg_nodes": [0, 1], "heads": [[3, 0]],
            "attrs": {"dltype": ["list_str", ["float16", "float16", "float16", "int8"]],
                      "shape": ["list_shape", [[2, 3], [2, 3], [2, 3], []]],
                      "storage_id": ["list_int", [0, 1, 2, 3]],
                      "device_index": ["list_int", [1, 1, 1, 1]],
                      "storage_scope": ["list_str", ["global"] * 4],
                      "ignored_int_attr": ["list_int", [5]]}}


GRAPH_SEEDS = (_minigraph_style(), _relay_style())


def graph_seed_text(i: int) -> str:
    import json
    return json.dumps(GRAPH_SEEDS[i])


def params_seeds() -> tuple[bytes, ...]:
    """Blobs for the minigraph-style graph's params, and one array of every dtype."""
    rng = np.random.default_rng(0)
    fit = {"w": rng.standard_normal((3, 3, 3, 4)).astype("float32"),
           "b": np.arange(4, dtype="float32")}
    dtypes = ["float32", "float16", "float64", "bfloat16", "int8", "int16", "int32", "int64",
              "uint8", "uint16", "uint32", "uint64", "bool"]
    every = {f"t_{d}": (np.arange(6) % 3).astype(np_dtype(d)).reshape(2, 3) for d in dtypes}
    odd = {"scalar": np.float32(1.5), "empty": np.zeros((0, 5), "int32"), "ünï": np.ones(1)}
    return save_params(fit), save_params(every), save_params(odd), save_params({})


def _profile() -> dict:
    ops = [{"index": i, "node_id": 3 + i, "name": f"op{i}", "func_name": f"k{i}",
            "kind": kind, "hash": f"{i:04x}", "shapes": [["float32", [1, 8, 8, 4]]],
            "layouts": {"data_layout": "NHWC"} if i == 0 else {}}
           for i, kind in enumerate(("conv2d", "elementwise", "copy"))]
    return {"format": "minigraph-profile/1", "partial": False, "ops": ops,
            "settings": {"modes": ["first-run", "one-pass", "warm", "cold", "e2e"],
                         "warmups": 3, "warm_repeat": 7, "flush": "llc",
                         "warm_target_cv": 0.05, "warm_budget_ms": 200},
            "env": {"tvm": {"version": "0.27.0"}, "cpu": {"model": "fuzz"}},
            "threads": {"tvm_num_threads": 2, "requested": {"threads": 2},
                        "main_affinity_after": [0, 1], "mismatches": ["none really"]},
            "samples_ns": {"first-run": [[50_000.0], [900.0], [100.0]],
                           "one-pass": [[2_000.0], [800.0], [90.0]],
                           "warm": [[1_000.0, 1_100.0, 990.0], [700.0, 710.0], [80.0, 82.0]],
                           "cold": [[3_000.0, 3_100.0], [1_500.0], [100.0, 120.0]]},
            "first_run_counters": [{"minflt": 12, "majflt": 0, "nvcsw": 1, "nivcsw": 0,
                                    "threads_created": 1, "cpu": 0}] * 3,
            "e2e_ns": [2_500.0, 2_400.0, 2_600.0],
            "warmup_ns": {"one-pass": [9_000.0, 3_000.0, 2_900.0]},
            # busy, so the summary's contention warning is rendered from fuzzed values too
            "contention": {"wall_s": 3.0, "others_cpus": 0.9, "steal_cpus": 0.0},
            "timeline": {"first-run": {
                "mode": "first-run", "clock_ns": 10_000, "op_start_ns": [0, 60_000, 62_000],
                "op_end_ns": [50_000, 61_000, 62_100], "spans": [],
                "threads": [{"tid": 7, "name": "python", "role": "main",
                             "cpu_start_ns": [0, 40_000, 41_000],
                             "cpu_end_ns": [30_000, 41_000, 41_100]},
                            {"tid": 8, "name": "python", "role": "other",
                             "cpu_start_ns": [None, 45_000, 45_500],
                             "cpu_end_ns": [40_000, 45_500, 45_600]}]},
                "one-pass": {
                "mode": "one-pass", "clock_ns": 90_000, "op_start_ns": [20_000, 23_000, 24_000],
                "op_end_ns": [22_000, 23_800, 24_090],
                "spans": [{"name": "pool reset", "start_ns": 0, "end_ns": 1_000}],
                "threads": [{"tid": 7, "name": "python", "role": "main",
                             "cpu_start_ns": [1, 2, 3], "cpu_end_ns": [2, 3, 4]}]}}}


PROFILE_SEED = _profile()
SIGNATURE_SEED = ("k_conv", "k_conv(data: Tensor([T.int64(1), T.int64(8), T.int64(8), "
                  "T.int64(3)], float32), w: Tensor([3, 3, 3, 4], float32), b: Tensor([n], "
                  "float32), out: Tensor([T.int64(1), T.int64(8), T.int64(8), T.int64(4)], "
                  "float32))")


GOLDEN = Path(__file__).resolve().parents[1] / "tests" / "data" / "golden"
# every saved format but the profile's (PROFILE_SEED), as its golden document holds it
DOCUMENT_SEEDS = tuple(json.loads((GOLDEN / f"{name}.json").read_text())
                       for name in ("diagnosis", "fleet", "comparison", "kernel-comparison",
                                    "protocols", "sweep"))


def tvm_report_seeds() -> tuple[bytes, ...]:
    """TVM's Report as table (C and en_US locales), CSV and JSON, a BenchmarkResult, and a
    log holding a table and a benchmark (the classic complaint, both in one file)."""
    calls = [{"Name": "tvmgen_default_fused_conv2d_add_relu", "Duration (us)": Dur(1234.5),
              "Hash": "00ab12cd34ef5678", "Argument Shapes": "float32[1, 3, 8, 8], "
              "float32[4, 3, 3, 3], float32[1, 4, 8, 8]", "data_layout": "NCHW"},
             {"Name": "tvmgen_default_fused_add", "Duration (us)": Dur(45.25),
              "Hash": "22ab12cd34ef5678", "Argument Shapes": "float32[1, 4], float32[1, 4]"},
             {"Name": "tvmgen_default_fused_add", "Duration (us)": Dur(7.25),
              "Hash": "22ab12cd34ef5678", "Argument Shapes": "float32[1, 4], float32[1, 4]"}]
    run = profiled_run(calls, 1400.0)
    config = {"Number of threads": Cnt(2), "Executor": "Graph"}
    bench = benchmark_str([0.0014, 0.0015, 0.0013]).encode()
    table = as_table(*run, config, loc=C)
    return (table, as_table(*run, config, loc=EN_US), as_csv(run[0]).encode(),
            as_json(*run, config).encode(), bench, table + b"\n" + bench)
