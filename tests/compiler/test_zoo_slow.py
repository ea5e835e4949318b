"""Every full-size zoo model: minigraph's outputs equal TVM's Relax VM on model.vm.so.

Both run the very same scheduled kernels, so outputs must agree to float32 rounding of the
same operations: we require rtol 1e-5 with atol 1e-5 x max|output|.
"""
from __future__ import annotations

import cli_runner
import numpy as np
import pytest

from minigraph.artifacts.params import load_params_file
from minigraph.runtime.debug import DebugExecutor

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("model", ["resnet18", "resnet50", "mobilenet_v2", "bert-block"])
def test_outputs_match_relax_vm(build_dir, model):
    import tvm
    from tvm import relax
    out = build_dir(model)
    ex = DebugExecutor.from_files(out / "model.so", out / "graph.json")
    x = np.random.default_rng(3).standard_normal(ex.graph.shapes[0]).astype("float32")
    ex.run(data=x)
    got = ex.get_output(0).numpy()
    vm = relax.VirtualMachine(tvm.runtime.load_module(str(out / "model.vm.so")), tvm.cpu())
    params = load_params_file(out / "model.params")
    names = ex.graph.input_names()
    args = [tvm.runtime.tensor(x)] + [tvm.runtime.tensor(params[n]) for n in names[1:]]
    want = vm["main"](*args).numpy()
    scale = float(np.abs(want).max())
    assert scale > 0
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * scale)


@pytest.fixture(scope="session")
def onnx_resnet50(tmp_path_factory, build_dir):
    """The zoo ResNet-50 exported as ONNX (NCHW, Conv + BatchNormalization, Gemm head: the same
    function) and built from that file, once per session."""
    import onnx  # noqa: F401 - the test extra installs it
    from zoo_onnx import zoo_to_onnx

    from minigraph.compiler.compiler import build
    from minigraph.compiler.zoo import load_zoo_model
    tmp = tmp_path_factory.mktemp("onnx_resnet50")
    path = zoo_to_onnx(load_zoo_model("resnet50"), tmp / "resnet50.onnx")
    build(str(path), tmp / "out")
    return tmp / "out"


def test_onnx_resnet50_is_prepared_and_matches_the_zoo_build(onnx_resnet50, build_dir):
    import json
    out, zoo = onnx_resnet50, build_dir("resnet50")
    info = json.loads((out / "build.json").read_text())
    steps = {s["step"]: s for s in info["preparation"]}
    assert steps["fold"]["batch_norms_folded"] == 53
    assert steps["convert_layout"]["how"] == "in process" and steps["convert_layout"][
        "nchw_conv2d"] == 53
    ex = DebugExecutor.from_files(out / "model.so", out / "graph.json")
    convs = [n for n in ex.graph.op_nodes() if "conv2d" in n.func_name]
    assert len(convs) == 53 and all(n.attr("data_layout") == "NHWC" for n in convs)
    assert not any("batch_norm" in n.func_name for n in ex.graph.op_nodes())
    assert (out / "model.vm.so").stat().st_size < 4 << 20  # code only: weights are params
    x = np.random.default_rng(3).standard_normal((1, 3, 224, 224)).astype("float32")
    ex.run(data=x)
    got = ex.get_output(0).numpy()
    zex = DebugExecutor.from_files(zoo / "model.so", zoo / "graph.json")
    zex.run(data=np.ascontiguousarray(x.transpose(0, 2, 3, 1)))
    want = zex.get_output(0).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


@pytest.mark.subprocess
def test_the_default_profile_of_resnet50_fits_one_screen(build_dir, tmp_path):
    """The command a new user runs first: its report fits a 50-line, 120-column terminal
    (the full one is --wide's and show's). The measuring budget is small: the report's length
    does not depend on it."""
    import os
    out = build_dir("resnet50")
    done = cli_runner.run(["profile", out, "--repeat", "3", "--budget-ms", "5", "--inrun-passes",
                           "3", "--quiet"], timeout=600, cwd=tmp_path,
                          env={**os.environ, "COLUMNS": "120"})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.rstrip("\n").splitlines()
    assert len(lines) <= 50, done.stdout
    assert max(map(len, lines)) <= 120, done.stdout
    assert "more ops: --wide" in done.stdout and "Summary:" in done.stdout
