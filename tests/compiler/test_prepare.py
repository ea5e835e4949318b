"""ONNX models prepared for inference at build time (build/prepare.py, fold.py, layout.py) and
the conv schedule's pieces (tile choice, weight packing), on tiny models written here."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import onnx  # noqa: E402,F401 - the test extra installs it: missing, the file fails

from onnx_models import conv_bn_relu_gemm, reference  # noqa: E402

from minigraph.compiler.onnx_import import load_onnx  # noqa: E402

VARIANTS = {"conv-bias": dict(bias=True), "conv-no-bias": dict(bias=False),
            "depthwise-relu6": dict(depthwise=True, relu6=True)}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """variant -> (build dir, initializers); each built once."""
    from minigraph.compiler.compiler import build
    cache: dict[str, tuple] = {}

    def get(variant: str):
        if variant not in cache:
            tmp = tmp_path_factory.mktemp(variant.replace("-", "_"))
            path, init = conv_bn_relu_gemm(tmp / "m.onnx", **VARIANTS[variant])
            build(str(path), tmp / "out")
            cache[variant] = (tmp / "out", init)
        return cache[variant]
    return get


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_numerics_against_numpy(built, variant):
    from minigraph.runtime.debug import DebugExecutor
    out, init = built(variant)
    ex = DebugExecutor.from_files(out / "model.so", out / "graph.json")
    x = np.random.default_rng(1).standard_normal(ex.graph.shapes[0]).astype("float32")
    ex.run(x=x)
    want = reference(x, init, relu6=VARIANTS[variant].get("relu6", False))
    np.testing.assert_allclose(ex.get_output(0).numpy(), want, rtol=1e-4,
                               atol=1e-4 * np.abs(want).max())


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_nhwc_kernels_and_no_batch_norm(built, variant):
    from minigraph.artifacts.graph_json import load_graph
    out, _ = built(variant)
    graph = load_graph(out / "graph.json")
    funcs = [n.func_name for n in graph.op_nodes()]
    assert not any("batch_norm" in f for f in funcs), funcs
    convs = [n for n in graph.op_nodes() if "conv2d" in n.func_name]
    assert len(convs) == 1 and convs[0].attr("data_layout") == "NHWC"
    info = json.loads((out / "build.json").read_text())
    assert [s["step"] for s in info["preparation"]] == ["fold", "convert_layout", "fold_layout"]
    assert info["preparation"][0]["batch_norms_folded"] == 1
    assert info["preparation"][1]["how"] == "in process"
    notes = " ".join(info["kernels"][convs[0].func_name]["schedule"])
    # a depthwise conv gets the generic reduction tiling (conv_schedule.py says why)
    assert ("tiled " if VARIANTS[variant].get("depthwise") else "conv tile") in notes


def test_weights_are_named_params_not_code(built):
    """The folded, transposed weights are in model.params under derived names; the FC weight
    is transposed once at build time; no weight bytes are in model.so or model.vm.so."""
    from minigraph.artifacts.graph_json import load_graph
    from minigraph.artifacts.params import load_params_file
    out, init = built("conv-bias")
    params = load_params_file(out / "model.params")
    graph = load_graph(out / "graph.json")
    assert set(graph.input_names()) - set(params) == {"x"}
    assert np.array_equal(params["G.T"], init["G"].T)
    assert "G" not in params and not any(n.startswith(("gamma", "var")) for n in params)
    hwio = next(v for k, v in params.items() if k.startswith("W.") and v.ndim == 4)
    s = init["gamma"] / np.sqrt(init["var"] + 1e-5)
    np.testing.assert_allclose(hwio, (init["W"] * s[:, None, None, None]).transpose(2, 3, 1, 0),
                               rtol=1e-6)
    for lib in ("model.so", "model.vm.so"):
        blob = (out / lib).read_bytes()
        assert params["G.T"].tobytes()[:64] not in blob and hwio.tobytes()[:64] not in blob


def test_fold_step_alone(tmp_path):
    from minigraph.compiler.fold import fold_for_inference
    path, init = conv_bn_relu_gemm(tmp_path / "m.onnx")
    mod, params, _, _ = load_onnx(str(path), 1, "float32")
    assert "batch_norm" in mod["main"].script()
    new, folded, stats = fold_for_inference(mod, params)
    text = new["main"].script()
    assert "batch_norm" not in text and "permute_dims" not in text
    assert stats.batch_norms_folded == 1 and stats.affine_into_conv == 1
    s = init["gamma"] / np.sqrt(init["var"] + 1e-5)
    np.testing.assert_allclose(folded["W.folded"], init["W"] * s[:, None, None, None], rtol=1e-6)
    np.testing.assert_allclose(folded["W.bias"].reshape(-1),
                               (init["B"] - init["mean"]) * s + init["beta"], rtol=1e-5)


def test_scalar_operand_guard(tmp_path):
    """TVM's own FoldBatchnormToConv2D leaves ``add(var, T.float32(eps))``; ConvertLayout on
    it segfaults. The guard finds it and never runs the pass in this process."""
    import tvm
    from tvm import relax

    from minigraph.compiler.layout import convert_layout, scalar_operands
    path, _ = conv_bn_relu_gemm(tmp_path / "m.onnx", bias=False)
    mod, params, _, _ = load_onnx(str(path), 1, "float32")
    mod = relax.transform.BindParams("main", {k: tvm.runtime.tensor(v)
                                              for k, v in params.items()})(mod)
    mod = relax.transform.FoldBatchnormToConv2D()(mod)
    leftovers = scalar_operands(mod)
    assert leftovers and "add" in leftovers[0]
    res = convert_layout(mod, timeout_s=120)
    assert res.leftovers and "scalar-operand" in res.reason and res.reason.endswith("0 left")
    assert res.how == "in process after a probe"
    text = res.mod["main"].script()
    assert 'data_layout="NHWC"' in text and 'data_layout="NCHW"' not in text


def test_probe_process_takes_the_crash():
    """What the guard relies on when a repair is not enough: a pass that segfaults kills only
    the forked probe, and the build learns how it died."""
    import ctypes

    from minigraph.compiler.layout import survives
    ok, why = survives(lambda: ctypes.string_at(0), timeout_s=60)
    assert not ok and "signal" in why and "SEGV" in why
    assert survives(lambda: None, timeout_s=60) == (True, "")


def test_conv_tile_uses_the_registers_it_has():
    from minigraph.compiler.conv_tiles import conv_tile
    for width, regs, lanes in ((56, 32, 16), (7, 32, 16), (56, 16, 8), (14, 16, 8), (112, 32, 16)):
        rows, cols = conv_tile(width, 256, lanes, regs)
        vecs = cols // lanes
        assert width % rows == 0 and 256 % cols == 0 and cols % lanes == 0
        assert rows * vecs + vecs + 1 <= regs and rows * vecs >= 4
    assert conv_tile(56, 24, 16, 32)[1] == 24  # 24 channels: one tile across them


def test_pack_matches_its_index_map():
    from minigraph.compiler.packing import Pack
    w = np.arange(3 * 3 * 4 * 64, dtype="float32").reshape(3, 3, 4, 64)
    pack = Pack(1, 3, 32, "OHWI32o")
    packed = pack.apply(w)
    assert packed.shape == pack.shape(w.shape) == (2, 3, 3, 4, 32)
    mapping = pack.index_map()
    for idx in [(0, 0, 0, 0), (2, 1, 3, 63), (1, 2, 0, 33)]:
        assert packed[mapping(*idx)] == w[idx]


def _computes_right(out: Path, init: dict, seed: int) -> None:
    """The built model's output against the numpy reference (relu6 variant)."""
    from minigraph.runtime.debug import DebugExecutor
    ex = DebugExecutor.from_files(out / "model.so", out / "graph.json")
    x = np.random.default_rng(seed).standard_normal(ex.graph.shapes[0]).astype("float32")
    ex.run(x=x)
    want = reference(x, init, relu6=True)
    np.testing.assert_allclose(ex.get_output(0).numpy(), want, rtol=1e-4,
                               atol=1e-4 * np.abs(want).max())


def test_avx2_target_gets_avx2_tiles(tmp_path):
    """Tiles come from the target's features, not the host's: an AVX2 CPU (16 registers of
    8 float32 lanes) gets tiles that fit 16 registers, and the kernels still compute right."""
    from minigraph.compiler.compiler import build
    if "avx2" not in Path("/proc/cpuinfo").read_text():
        pytest.skip("this host cannot run AVX2 code")
    path, init = conv_bn_relu_gemm(tmp_path / "m.onnx", relu6=True)
    res = build(str(path), tmp_path / "out", target="haswell", vm=False)
    assert res.build_json["vector_unit"] == {"isa": "avx2", "bits": 256, "registers": 16}
    notes = " ".join(n for k in res.build_json["kernels"].values() for n in k["schedule"])
    assert "conv tile" in notes
    _computes_right(tmp_path / "out", init, seed=2)


def test_a_depthwise_conv_gets_the_reduction_tiling_and_computes_right(tmp_path):
    """A depthwise conv (one input channel per group) is not given the conv rule's register
    tile (conv_schedule.py: it has no channel reduction): the generic reduction tiling, with
    the target's vector width, parallel and vectorised, and the output still right."""
    from minigraph.compiler.compiler import build
    path, init = conv_bn_relu_gemm(tmp_path / "m.onnx", depthwise=True, relu6=True)
    res = build(str(path), tmp_path / "out", vm=False)
    conv = [k["schedule"] for k in res.build_json["kernels"].values()
            if any(n.startswith("group_conv2d_nhwc") for n in k["schedule"])]
    assert len(conv) == 1 and conv[0][0].startswith("group_conv2d_nhwc: tiled ")
    assert "parallel" in conv[0][0] and "serial" not in " ".join(conv[0])
    _computes_right(tmp_path / "out", init, seed=3)


def test_a_failing_step_is_recorded_and_the_model_still_builds(tmp_path, monkeypatch):
    """An ONNX export with a pattern a step does not foresee: the step is abandoned with its
    reason in build.json, and the model is built from the state before it, still correct."""
    from minigraph.compiler import prepare
    from minigraph.compiler.compiler import build
    from minigraph.runtime.debug import DebugExecutor

    def broken(mod):
        raise ValueError("unforeseen pattern")
    monkeypatch.setattr(prepare, "convert_layout", broken)
    path, init = conv_bn_relu_gemm(tmp_path / "m.onnx")
    res = build(str(path), tmp_path / "out", vm=False)
    steps = res.build_json["preparation"]
    assert [s["step"] for s in steps] == ["fold", "abandoned"]
    assert "unforeseen pattern" in steps[1]["reason"]
    ex = DebugExecutor.from_files(tmp_path / "out" / "model.so", tmp_path / "out" / "graph.json")
    x = np.random.default_rng(4).standard_normal(ex.graph.shapes[0]).astype("float32")
    ex.run(x=x)
    want = reference(x, init)
    np.testing.assert_allclose(ex.get_output(0).numpy(), want, rtol=1e-4,
                               atol=1e-4 * np.abs(want).max())


def test_a_tile_may_leave_a_tail_where_the_divisor_tiles_are_load_bound():
    """AVX2 (16 registers of 8 lanes): at 56 pixels wide the best tile dividing the width is
    4x16 (1.33 FMAs per load); 6x16 leaves a tail of 2 and does 1.5. AVX-512's 4x64 (2 per
    load) is not load-bound and keeps dividing; every tile fits the registers."""
    from minigraph.compiler.conv_tiles import conv_tile
    assert conv_tile(56, 256, 8, 16) == (4, 16) and conv_tile(56, 256, 8, 16, True) == (6, 16)
    assert conv_tile(7, 512, 8, 16, True) == (6, 16)  # 7x8 did under one FMA per load
    assert conv_tile(14, 256, 8, 16, True) == (2, 32)  # no more rows fit 2x32's columns
    assert conv_tile(56, 256, 16, 32, True) == conv_tile(56, 256, 16, 32) == (4, 64)
    for width, lanes, regs in ((56, 8, 16), (7, 8, 16), (28, 4, 16), (112, 16, 32)):
        rows, cols = conv_tile(width, 256, lanes, regs, True)
        assert rows * (cols // lanes) + cols // lanes + 1 <= regs


def test_a_conv_with_a_tail_tile_computes_right(tmp_path):
    """A 3x3 conv over 32 channels at 7x7 built for AVX2 gets a 6x16 tile and a one-pixel
    tail (its own loop): the output equals a direct numpy convolution."""
    from onnx import TensorProto, helper, numpy_helper

    from minigraph.compiler.compiler import build
    from minigraph.runtime.debug import DebugExecutor
    if "avx2" not in Path("/proc/cpuinfo").read_text():
        pytest.skip("this host cannot run AVX2 code")
    rng = np.random.default_rng(5)
    w = rng.standard_normal((32, 32, 3, 3)).astype("float32") * 0.2
    g = rng.standard_normal((10, 32 * 49)).astype("float32") * 0.1
    nodes = [helper.make_node("Conv", ["x", "W"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]), helper.make_node("Flatten", ["r"], ["f"]),
             helper.make_node("Gemm", ["f", "G"], ["y"], transB=1)]
    graph = helper.make_graph(nodes, "tail", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [1, 32, 7, 7])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, [1, 10])],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(g, "G")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
              str(tmp_path / "m.onnx"))
    res = build(str(tmp_path / "m.onnx"), tmp_path / "out", target="haswell", vm=False)
    notes = " ".join(n for k in res.build_json["kernels"].values() for n in k["schedule"])
    assert "conv tile 6x16" in notes, notes
    x = rng.standard_normal((1, 32, 7, 7)).astype("float32")
    xp = np.pad(x[0].astype("float64"), ((0, 0), (1, 1), (1, 1)))
    conv = np.zeros((32, 7, 7))
    for i in range(3):
        for j in range(3):
            conv += np.einsum("chw,oc->ohw", xp[:, i:i + 7, j:j + 7], w[:, :, i, j])
    want = np.maximum(conv, 0).reshape(1, -1) @ g.T
    ex = DebugExecutor.from_files(tmp_path / "out" / "model.so", tmp_path / "out" / "graph.json")
    ex.run(x=x)
    np.testing.assert_allclose(ex.get_output(0).numpy(), want, rtol=1e-4,
                               atol=1e-4 * np.abs(want).max())
