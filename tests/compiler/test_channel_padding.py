"""Output channels padded to whole vectors (channel_padding.py): which counts are padded, the
rewrite of the convs and their weights, the scheduled kernel against numpy (this host's code
and AVX2's), and a real ONNX build whose padded convs fuse their epilogues."""
from __future__ import annotations

import json

import numpy as np
import pytest

from minigraph.compiler.channel_padding import pad_weight, padded_channels, padded_conv_func
from minigraph.compiler.conv_algorithms import choose_algorithms
from minigraph.compiler.conv_tiles import TileProblem
from minigraph.compiler.schedules import schedule_func
from minigraph.compiler.target import make_target, vector_unit

RNG = np.random.default_rng(1)


def _host_lanes() -> int:
    return vector_unit(make_target(None)).lanes("float32")


@pytest.mark.parametrize("k, lanes, padded", [
    (24, 16, 32), (40, 16, 48), (12, 8, 16), (20, 16, 32),
    (8, 16, None),   # one 8-lane vector is half used either way
    (32, 16, None),  # already whole vectors
    (72, 16, None),  # 80 would be 5 vectors: wider than one tile
    (3, 16, None),
])
def test_which_channel_counts_are_padded(k, lanes, padded):
    assert padded_channels(k, lanes) == padded


def test_a_padded_tile_takes_all_the_channels():
    for problem in (TileProblem(56, 32, 16, 32, True, whole=True),
                    TileProblem(7, 48, 16, 32, False, whole=True),
                    TileProblem(28, 16, 8, 16, True, whole=True)):
        assert problem.model_tile()[1] == problem.out_c
        assert {cols for _, cols in problem.candidates(100)} == {problem.out_c}
    assert {cols for _, cols in TileProblem(56, 32, 16, 32, True).candidates(100)} == {16, 32}


def _conv(x, w, strides=1, padding=0):
    from tvm import relax
    return relax.op.nn.conv2d(x, w, strides=strides, padding=padding, data_layout="NHWC",
                              kernel_layout="HWIO")


def test_convs_are_rewritten_onto_a_padded_weight():
    from tvm import relax
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 9, 9, 16), "float32"))
    shapes = {"w1": (1, 1, 16, 24), "w3s2": (3, 3, 24, 24), "w16": (1, 1, 24, 16)}
    ws = {n: relax.Var(n, relax.TensorType(s, "float32")) for n, s in shapes.items()}
    with bb.function("main", [x, *ws.values()]):
        with bb.dataflow():
            a = bb.emit(_conv(x, ws["w1"]))
            b = bb.emit(_conv(a, ws["w3s2"], strides=2, padding=1))
            c = bb.emit_output(_conv(b, ws["w16"]))
        bb.emit_func_output(c)
    params = {n: RNG.standard_normal(s).astype("float32") for n, s in shapes.items()}
    mod, new_params, choices = choose_algorithms(bb.get(), params, 16, _never)
    assert [(c.conv, c.algorithm) for c in choices] == [
        (a.name, "direct, 24 channels padded to 32"), (b.name, "direct, 24 channels padded to 32")]
    assert choices[1].direct_flops == 2 * 5 * 5 * 9 * 24 * 24
    assert choices[1].flops == 2 * 5 * 5 * 9 * 24 * 32  # the zero channels are executed too
    assert sorted(new_params) == ["w1.pad32", "w16", "w3s2.pad32"]
    np.testing.assert_array_equal(new_params["w1.pad32"][..., :24], params["w1"])
    assert not new_params["w1.pad32"][..., 24:].any()
    assert [p.name for p in mod["main"].params] == ["x", "w16", "w1.pad32", "w3s2.pad32"]
    # AVX2's 8 lanes: 24 channels are three whole vectors, nothing to pad
    _, same, none = choose_algorithms(bb.get(), params, 8, _never)
    assert none == [] and same is params



def _never():
    raise AssertionError("no 3x3 stride-1 conv here: the machine's rate must not be asked")


@pytest.mark.parametrize("mcpu", [None, "znver2"], ids=["host", "avx2"])
@pytest.mark.parametrize("kernel, stride, pad, hw", [(1, 1, 0, 13), (3, 2, 1, 15), (3, 1, 1, 11)])
def test_scheduled_padded_conv_matches_numpy(mcpu, kernel, stride, pad, hw):
    """A 1x1, a 3x3 stride-2 and a 3x3 conv over odd widths (the tile's rows leave a tail), with
    as many output channels as one and a half vectors: computed over the padded weight, the
    extra channels dropped from registers."""
    import tvm
    from tvm import relax, s_tir
    from tvm.tirx import ForKind
    target = make_target(mcpu)
    unit = vector_unit(target)
    lanes = unit.lanes("float32")
    k, c = lanes + lanes // 2, 20
    x = relax.Var("x", relax.TensorType((1, hw, hw, c), "float32"))
    w = relax.Var("w", relax.TensorType((kernel, kernel, c, k), "float32"))
    call = relax.BlockBuilder().normalize(_conv(x, w, stride, pad))
    res = schedule_func(padded_conv_func(call, padded_channels(k, lanes)), "default", lanes,
                        unit, frozenset({1}))
    assert res.applied[0].startswith("conv2d_nhwc: conv tile") and \
        f"x{2 * lanes} in registers" in res.applied[0], res.applied
    # the output's k channels leave the registers as vectors of lanes / 2 that divide k, not
    # as 2 full vectors under a bounds test per channel
    sch = s_tir.Schedule(res.func)
    (out_block,) = sch.get_output_blocks(sch.get_sblock("root"))
    inner = sch.get(sch.get_loops(out_block)[-1])
    assert (int(inner.extent), inner.kind) == (lanes // 2, ForKind.VECTORIZED)
    xv = RNG.standard_normal((1, hw, hw, c)).astype("float32")
    wv = RNG.standard_normal((kernel, kernel, c, k)).astype("float32")
    u = pad_weight(wv, 2 * lanes)
    for pack in res.packs:
        u = pack.apply(u)
    out = np.zeros([int(d) for d in call.ty.shape], "float32")
    lib = tvm.compile(tvm.IRModule({"main": res.func.with_attr("global_symbol", "main")}),
                      target=target).mod
    args = [tvm.runtime.tensor(v) for v in (xv, u, out)]
    lib["main"](*args)
    want = _conv_reference(xv, wv, stride, pad)
    np.testing.assert_allclose(args[2].numpy(), want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def _conv_reference(x, w, stride: int, pad: int) -> np.ndarray:
    """NHWC x HWIO, square stride and padding, in float64."""
    kh = w.shape[0]
    xp = np.pad(x.astype(np.float64), ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    ho = (xp.shape[1] - kh) // stride + 1
    out = np.zeros((x.shape[0], ho, ho, w.shape[3]))
    for i in range(kh):
        for j in range(kh):
            win = xp[:, i:i + stride * ho:stride, j:j + stride * ho:stride]
            out += np.einsum("nhwc,ck->nhwk", win, w[i, j])
    return out


def _onnx(path, k: int) -> dict[str, np.ndarray]:
    """x (1,16,12,12) -> Conv 1x1 + bias -> Relu -> Conv 3x3 pad 1 -> + the relu's output
    -> Conv 3x3 stride 2 pad 1 -> y (1,k,6,6); k channels throughout."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    init = {"W1": RNG.standard_normal((k, 16, 1, 1)).astype("float32") / 4,
            "B1": RNG.standard_normal(k).astype("float32"),
            "W2": RNG.standard_normal((k, k, 3, 3)).astype("float32") / 12,
            "W3": RNG.standard_normal((k, k, 3, 3)).astype("float32") / 12}
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "W1", "B1"], ["c1"]),
         helper.make_node("Relu", ["c1"], ["r1"]),
         helper.make_node("Conv", ["r1", "W2"], ["c2"], pads=[1, 1, 1, 1]),
         helper.make_node("Add", ["c2", "r1"], ["s"]),
         helper.make_node("Conv", ["s", "W3"], ["y"], pads=[1, 1, 1, 1], strides=[2, 2])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 12, 12])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, k, 6, 6])],
        [numpy_helper.from_array(v, n) for n, v in init.items()])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return init


def test_onnx_build_with_padded_convs(tmp_path):
    """On this host's vector width, one and a half vectors of channels: every conv padded, the
    bias, relu and residual add fused into the padded kernels, the answer numpy's."""
    from minigraph.compiler.compiler import build
    from minigraph.runtime.debug import DebugExecutor
    lanes = _host_lanes()
    k = lanes + lanes // 2
    init = _onnx(tmp_path / "m.onnx", k)
    build(str(tmp_path / "m.onnx"), tmp_path / "out", vm=False)
    info = json.loads((tmp_path / "out" / "build.json").read_text())
    said = f"direct, {k} channels padded to {2 * lanes}"
    assert [c["algorithm"] for c in info["conv_algorithms"]] == [said] * 3
    names = [k["relax_name"] for k in info["kernels"].values()]
    assert any("relu" in n and "padded" in n for n in names), names
    assert any("add" in n and "padded" in n for n in names), names
    assert info["direct_flops"] == pytest.approx(info["total_flops"] * k / (2 * lanes), rel=0.02)
    from minigraph.cli.build import _direct  # the build line
    assert _direct(info).endswith("; 3 with output channels padded to whole vectors)")
    ex = DebugExecutor.from_files(tmp_path / "out" / "model.so", tmp_path / "out" / "graph.json")
    x = RNG.standard_normal((1, 16, 12, 12)).astype("float32")
    ex.run(x=x)
    hwio = {n: init[n].transpose(2, 3, 1, 0) for n in ("W1", "W2", "W3")}
    r1 = np.maximum(_conv_reference(x.transpose(0, 2, 3, 1), hwio["W1"], 1, 0) + init["B1"], 0)
    s = _conv_reference(r1, hwio["W2"], 1, 1) + r1
    want = _conv_reference(s, hwio["W3"], 2, 1).transpose(0, 3, 1, 2)
    np.testing.assert_allclose(ex.get_output(0).numpy(), want, rtol=1e-4,
                               atol=1e-4 * np.abs(want).max())
