"""The legacy door: Relay/NNVM-era libraries (old packed C ABI) run, profile and diagnose.

The libraries are compiled here from tests/helpers/legacy_abi_fixtures.py (variant A: weak context
pointers; variant B: system-lib with a registering constructor) and checked against a float64
numpy implementation of the same NNVM-style model.
"""
from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path

import legacy_abi_fixtures as fx
import numpy as np
import pytest

from minigraph.artifacts.library import classify
from minigraph.cli import main
from minigraph.errors import GraphError
from minigraph.runtime.doors import door_of, locate, open_executor

ROOT = Path(__file__).resolve().parents[2]
VARIANTS = ("A", "B", "B-now", "B-noplt")


def _data(seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((1, 4, 6, 6)).astype("float32")


def _check_outputs(ex, x: np.ndarray) -> None:
    for i, want in enumerate(fx.reference(x, fx.model_params())):
        got = ex.get_output(i).numpy()
        if np.issubdtype(got.dtype, np.integer):
            assert got.tolist() == want.tolist(), i
        else:
            np.testing.assert_allclose(got.astype(np.float64), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("variant", VARIANTS)
def test_outputs_match_numpy(legacy_model, variant):
    files = locate(legacy_model(variant))
    assert door_of(files) == "legacy"
    ex = open_executor(files)
    assert ex.module is None  # no TVM module: time_evaluator cannot time these kernels
    for seed in (1, 2):
        x = _data(seed)
        ex.set_input("data", x)
        ex.run()
        _check_outputs(ex, x)


def test_facts_tell_the_variants_apart(legacy_model):
    a, b = (classify(legacy_model(v) / "deploy_lib.so") for v in ("A", "B"))
    assert (a.abi, b.abi) == ("legacy-a", "legacy-b")
    assert "NNVM" in a.era and a.kernels == b.kernels and "fuse_add_many" in a.kernels
    assert dict(a.arity)["fuse_add_many"] == 11 and dict(a.arity) == dict(b.arity)
    assert {"TVMBackendParallelLaunch", "TVMBackendAllocWorkspace",
            "TVMBackendGetFuncFromEnv"} <= set(a.uses)
    assert "TVMBackendRegisterSystemLibSymbol" in b.uses and not a.unsupported
    assert a.packed == b.packed == ("tvm.contrib.sort.argsort",)
    assert a.factory is None and not a.modules


@pytest.mark.parametrize("variant", ["A", "B-now"])
def test_packed_calls_are_served_by_tvm_027s_registry(legacy_model, variant):
    """A kernel that sorts through tvm.contrib.sort.argsort (as old CPU NMS did)."""
    import tvm

    from minigraph.runtime.legacy.kernels import kernel_table
    from minigraph.runtime.legacy.loader import load_legacy
    lib = load_legacy(legacy_model(variant) / "deploy_lib.so")
    k = kernel_table(lib, ["fuse_argsort"])["fuse_argsort"]
    x = np.array([0.3, -1, 5, 2, 2.5, 0.1], "float32")
    out = tvm.runtime.empty((6,), "int32")
    k(tvm.runtime.tensor(x), out)
    assert out.numpy().tolist() == np.argsort(-x).tolist()


def test_packed_bridge_copies_unaligned_tensors_in_and_out():
    from minigraph.runtime.legacy.kernels import DLTensor
    from minigraph.runtime.legacy.packed import PackedBridge
    errors: list[bytes] = []
    bridge = PackedBridge(errors.append)
    handle = (ctypes.c_void_p * 1)()
    assert bridge.get_func(None, b"tvm.contrib.sort.argsort", handle) == 0
    assert bridge.get_func(None, b"tvm.contrib.nope", handle) == -1 and b"nope" in errors[-1]
    buf = np.zeros(64 + 6 * 4, np.uint8)
    start = (-buf.ctypes.data) % 64 + 4  # 4 bytes past a 64-byte boundary
    x = np.array([0.3, -1, 5, 2, 2.5, 0.1], "float32")
    out = buf[start:start + 24].view("int32")
    dims = (ctypes.c_int64 * 1)(6)  # DLTensors as a kernel builds them for a packed call
    ts = [DLTensor(x.ctypes.data, 1, 0, 1, 2, 32, 1, dims, None, 0),
          DLTensor(out.ctypes.data, 1, 0, 1, 0, 32, 1, dims, None, 0)]
    values = (ctypes.c_uint64 * 4)(ctypes.addressof(ts[0]), ctypes.addressof(ts[1]), 0, 0)
    codes = (ctypes.c_int * 4)(7, 7, 0, 0)
    assert bridge.call(1, values, codes, 4, None, None) == 0, errors
    assert out.tolist() == np.argsort(-x).tolist()


def test_system_lib_cannot_be_dlopened_plainly(legacy_model):
    """Why variant B needs the patched copy: TVM 0.27 lacks what it imports."""
    import tvm  # noqa: F401  (libtvm_runtime loaded globally, as when minigraph runs)
    with pytest.raises(OSError, match="undefined symbol"):
        ctypes.CDLL(str(legacy_model("B-now") / "deploy_lib.so"), mode=os.RTLD_NOW)


WHO = """
import json, sys, threading
import numpy as np, tvm
from minigraph.runtime.legacy.kernels import kernel_table
from minigraph.runtime.legacy.loader import load_legacy
for lib in sys.argv[1:]:
    k = kernel_table(load_legacy(lib), ["fuse_whoami"])["fuse_whoami"]
    t = tvm.runtime.tensor(np.zeros((8, 2), "int64"))
    k(t)
    print(json.dumps({"rows": t.numpy().tolist(), "main": threading.get_native_id()}))
"""


@pytest.mark.subprocess
def test_parallel_loops_run_on_tvm_027s_thread_pool(legacy_model):
    """A kernel calling TVMBackendParallelLaunch gets TVM's pool: 2 tasks with 2 threads, one
    of them a pool worker (not the main thread); both variants, one fresh process."""
    env = {**os.environ, "TVM_NUM_THREADS": "2", "PYTHONPATH": str(ROOT)}
    libs = [str(legacy_model(v) / "deploy_lib.so") for v in ("A", "B")]
    proc = subprocess.run([sys.executable, "-c", WHO, *libs], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    for line in proc.stdout.splitlines():
        out = json.loads(line)
        tasks = [row for row in out["rows"] if row[0]]
        assert [row[0] for row in tasks] == [2, 2]
        tids = {row[1] for row in tasks}
        assert len(tids) == 2 and out["main"] in tids
    assert len(proc.stdout.splitlines()) == 2


def test_embedded_graph_and_params_are_used_without_graph_json(tmp_path, legacy_model):
    from minigraph.artifacts.params import save_params
    blob = fx.factory_blob(json.dumps(fx.model_graph()), save_params(fx.model_params()))
    lib = fx.build_library(tmp_path / "deploy_lib.so", fx.MODEL_KERNELS,
                           extra_c=fx.blob_c("__tvm_dev_mblob", blob))
    facts = classify(lib)
    assert facts.modules == ("GraphExecutorFactory", "_lib", "_import_tree")
    assert not facts.unsupported and "factory" in facts.era
    ex = open_executor(locate(lib))
    x = _data()
    ex.set_input("data", x)
    ex.run_checked()
    _check_outputs(ex, x)


@pytest.mark.parametrize("archive", [True, False])
def test_tar_and_object_exports_are_linked(tmp_path, legacy_model, archive):
    import tarfile
    d = legacy_model("A")
    obj = tmp_path / "lib0.o"
    subprocess.run([fx.compiler(), "-O2", "-fPIC", "-c", "-x", "c", "-o", str(obj),
                    str(d / "deploy_lib.c")], check=True)
    lib = obj
    if archive:
        lib = tmp_path / "model.tar"
        with tarfile.open(lib, "w") as tar:
            tar.add(obj, arcname="lib0.o")
    ex = open_executor(locate(lib, d / "deploy_graph.json", d / "deploy_param.params"))
    x = _data()
    ex.set_input("data", x)
    ex.run()
    _check_outputs(ex, x)


def test_nnvm_graph_quirks(tmp_path, legacy_model):
    """'attr' for 'attrs', no node_row_ptr, control_deps, extra list_int attrs, an elementwise
    op on a [1, 4] entry with flatten_data=1 (its kernel takes [4]): still runs."""
    d = legacy_model("A")
    doc = fx.model_graph()
    doc["nodes"][9]["inputs"][0] = [6, 0, 0]  # mean0's [1, 4] itself, not the __nop's [4]
    doc["nodes"][9]["attrs"]["flatten_data"] = "1"
    for node in doc["nodes"]:
        if "attrs" in node:
            node["attr"] = node.pop("attrs")
        node["control_deps"] = []
    del doc["node_row_ptr"]
    doc["attrs"]["storage_allocated_bytes"] = ["list_int", [0] * 16]
    g = tmp_path / "graph.json"
    g.write_text(json.dumps(doc))
    ex = open_executor(locate(d / "deploy_lib.so", g, d / "deploy_param.params"))
    x = _data()
    ex.set_input("data", x)
    ex.run()
    _check_outputs(ex, x)


def test_assert_failure_names_the_op_and_the_assert_text(tmp_path, legacy_model, capsys):
    d = legacy_model("B")
    doc = fx.model_graph()
    doc["attrs"]["shape"][1][6] = [1, 2]  # mean0's output: the kernel demands [1, 4]
    (tmp_path / "graph.json").write_text(json.dumps(doc))
    code = main(["run", str(d / "deploy_lib.so"), str(tmp_path / "graph.json"),
                 "--params", str(d / "deploy_param.params")])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1, err
    assert "node 6 'mean0'" in err and "fuse_mean" in err
    assert "Assert fail: (4 == int32(arg1.shape[1]))" in err


def test_argument_count_is_checked_before_any_kernel_runs(tmp_path, legacy_model):
    d = legacy_model("A")
    doc = fx.model_graph()
    sum_node = doc["nodes"][13]
    sum_node["inputs"] = sum_node["inputs"][:-1]
    sum_node["attrs"]["num_inputs"] = "9"
    g = tmp_path / "graph.json"
    g.write_text(json.dumps(doc))
    with pytest.raises(GraphError, match="checks for 11 arguments") as err:
        open_executor(locate(d / "deploy_lib.so", g, d / "deploy_param.params"))
    assert err.value.node_index == 13


def test_explain_and_env_say_what_the_library_is(legacy_model, capsys):
    lib = legacy_model("B") / "deploy_lib.so"
    assert main(["explain", str(lib)]) == 0
    text = capsys.readouterr().out
    assert "era: NNVM-era" in text and "variant B: imports TVMBackend*" in text
    assert "fuse_add_many  (11 args)" in text and "TVMBackendParallelLaunch: TVM 0.27's thread" \
        in text and "unsupported: nothing found" in text
    assert "packed function tvm.contrib.sort.argsort: served by TVM 0.27" in text
    assert main(["env", str(legacy_model("A") / "deploy_lib.so")]) == 0
    assert "variant A: weak context pointers" in capsys.readouterr().out


def test_profile_every_mode_times_legacy_kernels_with_its_own_loop(legacy_model):
    from minigraph.profile.profiler import measure
    from minigraph.report.table import render
    from minigraph.results.profile import Profile, Settings
    ex = open_executor(locate(legacy_model("A")))
    ex.set_input("data", _data())
    prof = measure(ex, Settings(warm_repeat=3, warm_budget_ms=5, inrun_passes=2, cold_repeat=2,
                                flush_nbytes=1 << 20, e2e_repeat=3))
    assert set(prof.samples) == {"first-run", "one-pass", "warm", "in-run", "cold"}
    assert all(len(rows) == 10 and all(min(r) > 0 for r in rows)
               for rows in prof.samples.values())
    assert prof.timer["method"] == "python loop" and prof.timer["loop_ns"] > 0
    assert "warm/cold timer: minigraph's own loop" in render(prof)
    assert prof.dispatch_ns and prof.e2e_ns
    again = Profile.from_dict(json.loads(json.dumps(prof.to_dict())))
    assert again.timer == prof.timer


@pytest.mark.subprocess
def test_diagnose_worker_process_runs_a_legacy_library(legacy_model):
    """The ladder's worker in a fresh process, rung f: every warm-up of the ladder (scratch
    executor over the same kernels, steady runs) and the timed iteration, on variant B."""
    from minigraph.diagnose.ladder import spawn, worker_env
    from minigraph.diagnose.spec import DiagnoseSettings, WorkerSpec
    files = locate(legacy_model("B-now"))
    spec = WorkerSpec.for_rung(DiagnoseSettings(gap_s=0), files, "f", wake_lib="")
    result = spawn(spec, worker_env(2), timeout_s=120)
    assert result["rung"] == "f" and len(result["ops"]) == 10
    assert all(op["ns"] > 0 for op in result["ops"]) and result["prepared"]["pages_touched"] > 0
