"""minigraph build: artifacts, graph.json schema, kernels present, planner invariants, numerics."""
from __future__ import annotations

import json

import cli_runner
import numpy as np
import pytest

from minigraph.artifacts.dlpack import entry_nbytes
from minigraph.artifacts.graph_json import load_graph
from minigraph.artifacts.library import classify
from minigraph.artifacts.params import load_params_file
from minigraph.compiler.planner import plan_memory
from minigraph.report.explain import lifetimes


def test_artifacts_and_schema(tiny_cnn):
    for name in ("model.so", "graph.json", "model.params", "model.vm.so", "build.json"):
        assert (tiny_cnn / name).is_file(), name
    raw = json.loads((tiny_cnn / "graph.json").read_text())
    assert set(raw) >= {"nodes", "arg_nodes", "heads", "attrs", "node_row_ptr"}
    assert raw["attrs"]["shape"][0] == "list_shape"
    assert raw["attrs"]["storage_id"][0] == "list_int"
    assert raw["attrs"]["dltype"][0] == "list_str"
    for node in raw["nodes"]:
        if node["op"] == "tvm_op":
            attrs = node["attrs"]
            assert attrs["func_name"].startswith("tvmgen_default_fused_")
            assert {"num_inputs", "num_outputs", "flatten_data", "hash"} <= set(attrs)
            assert all(isinstance(v, str) for v in attrs.values())
    info = json.loads((tiny_cnn / "build.json").read_text())
    assert info["tvm_version"].startswith("0.27")
    assert all(k["flops"] > 0 for k in info["kernels"].values())


def test_every_func_name_in_library(tiny_cnn):
    graph = load_graph(tiny_cnn / "graph.json")
    exported = set(classify(tiny_cnn / "model.so").kernels)
    assert {n.func_name for n in graph.op_nodes()} <= exported


def test_params_cover_the_weights(tiny_cnn):
    graph = load_graph(tiny_cnn / "graph.json")
    params = load_params_file(tiny_cnn / "model.params")
    assert set(graph.input_names()) - set(params) == {"data"}
    for name, arr in params.items():
        eid = graph.eid(graph.node_by_name(name).index)
        assert arr.shape == graph.shapes[eid] and str(arr.dtype) == graph.dltypes[eid]


def _check_plan_invariants(graph):
    life = lifetimes(graph)
    sizes = {}
    for eid, sid in enumerate(graph.storage_ids):
        sizes[sid] = max(sizes.get(sid, 0), entry_nbytes(graph.shapes[eid], graph.dltypes[eid]))
    by_sid: dict[int, list[int]] = {}
    for eid, sid in enumerate(graph.storage_ids):
        by_sid.setdefault(sid, []).append(eid)
    for sid, eids in by_sid.items():
        for i, a in enumerate(eids):
            for b in eids[i + 1:]:
                (a0, a1), (b0, b1) = life[a], life[b]
                # overlap includes the op that reads one and writes the other
                assert a1 < b0 or b1 < a0, f"entries {a} and {b} share sid {sid} while both live"
    return sizes


@pytest.mark.parametrize("model", ["tiny-cnn", "mlp"])
def test_planner_invariants(build_dir, model):
    graph = load_graph(build_dir(model) / "graph.json")
    _check_plan_invariants(graph)
    plan = plan_memory(graph)
    assert plan.storage_ids == graph.storage_ids  # deterministic
    for eid, sid in enumerate(plan.storage_ids):
        assert plan.pool_nbytes[sid] >= entry_nbytes(graph.shapes[eid], graph.dltypes[eid])


def test_planner_shares_storage(tiny_cnn):
    plan = plan_memory(load_graph(tiny_cnn / "graph.json"))
    assert plan.activation_nbytes < plan.naive_nbytes


def _reference_outputs(model: str, x: np.ndarray):
    """The unfused Relax module compiled by TVM's default pipeline and run in the Relax VM."""
    import tvm
    from tvm import relax

    from minigraph.compiler.zoo import load_zoo_model
    zm = load_zoo_model(model)
    exe = tvm.compile(zm.mod, target=tvm.target.Target({"kind": "llvm"}))
    vm = relax.VirtualMachine(exe, tvm.cpu())
    names = [p.name for p in zm.mod["main"].params]
    args = [tvm.runtime.tensor(x)] + [tvm.runtime.tensor(zm.params[n]) for n in names[1:]]
    return vm["main"](*args).numpy()


@pytest.mark.parametrize("model", ["tiny-cnn", "mlp"])
def test_numerics_against_unfused_relax_vm(build_dir, model):
    """Fused + scheduled kernels vs TVM's own unscheduled build: rtol 1e-4, atol 1e-4 * scale
    (float32; only the summation order of reductions may differ)."""
    from minigraph.runtime.debug import DebugExecutor
    out = build_dir(model)
    ex = DebugExecutor.from_files(out / "model.so", out / "graph.json")
    x = np.random.default_rng(1).standard_normal(ex.graph.shapes[0]).astype("float32")
    ex.run(data=x)
    got, want = ex.get_output(0).numpy(), _reference_outputs(model, x)
    scale = float(np.abs(want).max())
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * scale)


def test_onnx_model_built_in_test(tmp_path):
    import onnx  # the test extra installs it
    from onnx import TensorProto, helper, numpy_helper

    from minigraph.compiler.compiler import build
    from minigraph.runtime.debug import DebugExecutor
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 3, 3, 3)).astype("float32")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "W"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, 8, 8])],
        [numpy_helper.from_array(w, "W")])
    path = tmp_path / "conv.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    build(str(path), tmp_path / "out")
    ex = DebugExecutor.from_files(tmp_path / "out" / "model.so", tmp_path / "out" / "graph.json")
    x = rng.standard_normal((1, 3, 8, 8)).astype("float32")
    ex.run(x=x)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.zeros((1, 4, 8, 8), "float32")
    for i in range(3):
        for j in range(3):
            ref += np.einsum("nchw,oc->nohw", xp[:, :, i:i + 8, j:j + 8], w[:, :, i, j])
    np.testing.assert_allclose(ex.get_output(0).numpy(), np.maximum(ref, 0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("argv, needle", [
    (["build", "no-such-model", "-o", "{tmp}/o"], "unknown model"),
    (["build", "{tmp}/broken.onnx", "-o", "{tmp}/o"], "not a valid ONNX model"),
    (["build", "mlp", "-o", "/proc/minigraph-out"], "cannot write to output directory"),
])
@pytest.mark.subprocess
def test_build_errors_are_one_line(tmp_path, argv, needle):
    (tmp_path / "broken.onnx").write_bytes(b"this is not protobuf")
    argv = [a.format(tmp=tmp_path) for a in argv]
    proc = cli_runner.run(argv, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error: ") and needle in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1


def test_onnx_constant_node_becomes_a_param(tmp_path):
    """A Constant node survives FoldConstant as a relax constant: lowered to a p_const param."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    const = numpy_helper.from_array(np.arange(4, dtype=np.float32).reshape(1, 4), "c")
    graph = helper.make_graph(
        [helper.make_node("Constant", [], ["k"], value=const),
         helper.make_node("Add", ["x", "k"], ["y"])], "const",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    path = tmp_path / "const.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    from minigraph.compiler.compiler import build
    from minigraph.runtime.debug import DebugExecutor
    build(str(path), tmp_path / "out", vm=False)
    ex = DebugExecutor.from_files(tmp_path / "out" / "model.so", tmp_path / "out" / "graph.json")
    ex.run(x=np.ones((1, 4), np.float32))
    np.testing.assert_array_equal(ex.get_output(0).numpy(), np.arange(4).reshape(1, 4) + 1.0)
