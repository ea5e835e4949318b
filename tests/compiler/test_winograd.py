"""Winograd F(4x4,3x3) and F(2x2,3x3) for the 3x3 stride-1 convs: the transforms' algebra, the
cost model's choices, the scheduled kernels against numpy (AVX-512 and AVX2 code, odd sizes),
and real builds of an ONNX model whose convs are forced to each algorithm."""
from __future__ import annotations

import json

import numpy as np
import pytest

from minigraph.compiler import conv_algorithms, machine_rates
from minigraph.compiler.conv_algorithms import choose, choose_algorithms, cost_mmac
from minigraph.compiler.machine_rates import MachineRates
from minigraph.compiler.schedules import schedule_func
from minigraph.compiler.target import make_target, vector_unit
from minigraph.compiler.winograd import F2, F4, ConvShape, winograd_func

RNG = np.random.default_rng(0)


def _conv_nhwc(x: np.ndarray, w: np.ndarray, pad: tuple[int, int, int, int]) -> np.ndarray:
    """Reference 3x3 stride-1 conv: x NHWC, w HWIO, pad (top, left, bottom, right)."""
    top, left, bottom, right = pad
    xp = np.pad(x.astype(np.float64), ((0, 0), (top, bottom), (left, right), (0, 0)))
    ho, wo = xp.shape[1] - 2, xp.shape[2] - 2
    out = np.zeros((x.shape[0], ho, wo, w.shape[3]))
    for i in range(3):
        for j in range(3):
            out += np.einsum("nhwc,ck->nhwk", xp[:, i:i + ho, j:j + wo], w[i, j])
    return out


@pytest.mark.parametrize("tf", [F4, F2], ids=["F4", "F2"])
def test_transforms_compute_the_3x3_correlation(tf):
    a, m = tf.alpha, tf.m
    d, g = RNG.standard_normal((a, a)), RNG.standard_normal((3, 3))
    y = tf.AT @ ((tf.G @ g @ tf.G.T) * (tf.BT @ d @ tf.BT.T)) @ tf.AT.T
    want = [[np.sum(d[i:i + 3, j:j + 3] * g) for j in range(m)] for i in range(m)]
    np.testing.assert_allclose(y, want, atol=1e-12)
    g32 = g.astype(np.float32)
    u = tf.weight(g32.reshape(3, 3, 1, 1))
    assert u.dtype == np.float32
    np.testing.assert_allclose(u[:, :, 0, 0], tf.G @ g32.astype(np.float64) @ tf.G.T, rtol=1e-6,
                               atol=1e-7)


def _forced(tf):
    """``choose`` always answering ``tf``."""
    return lambda shape, lanes, rates, tuner: (tf, "forced")


def _rate(mac_per_byte: float):
    return lambda: MachineRates(mac_per_byte, "given")


def test_cost_model_choices():
    def shape(hw, c):
        return ConvShape(1, hw, hw, c, c, (1, 1, 1, 1), "float32")
    ref = _rate(3.72)  # the first fit's rate at 16 lanes
    assert choose(shape(56, 64), 16, ref)[0] is F4       # many tiles, a small weight
    assert choose(shape(7, 512), 16, ref)[0] is F2       # 4 tiles of 4x4; F4's weight is 37 MB
    assert choose(shape(56, 3), 16, ref)[0] is None      # 3 output channels: no whole vector
    said = choose(shape(28, 128), 8, ref)[1]
    assert "MMAC" in said and "a weight byte costs 3.72 MAC (given)" in said
    # 68x68: 17x17 tiles of 4x4, and no row count in 4..16 divides 289: F(4x4) is not offered
    assert choose(shape(68, 64), 16, ref)[0] is not F4
    assert "F(4x4" not in choose(shape(68, 64), 16, ref)[1]
    assert cost_mmac(shape(7, 512), None, 3.72) > cost_mmac(shape(7, 512), F2, 3.72)


def test_dearer_weight_bytes_choose_fewer_transformed_weights():
    """A CPU doing twice the multiply-adds per DRAM byte (two 512-bit FMA pipes, the same
    memory) makes the transformed weights dearer: the 7x7x512 stage goes direct, the
    14x14x256 stage from F(4x4) to F(2x2); a cheaper byte does the opposite."""
    def shape(hw, c):
        return ConvShape(1, hw, hw, c, c, (1, 1, 1, 1), "float32")
    assert cost_mmac(shape(7, 512), F4, 7.4) > cost_mmac(shape(7, 512), F4, 3.7)
    assert choose(shape(7, 512), 16, _rate(7.4))[0] is None
    assert choose(shape(14, 256), 16, _rate(2.0))[0] is F4
    assert choose(shape(14, 256), 16, _rate(3.72))[0] is F2
    asked = []
    choose(shape(56, 3), 16, lambda: asked.append(1))  # no choice to make: the rate not asked
    assert not asked


def test_a_build_for_another_cpu_uses_the_reference_rate():
    rate = machine_rates.for_build(False, 2, 8)()
    assert rate.mac_per_byte == pytest.approx(machine_rates.REFERENCE_MAC_PER_BYTE / 2)
    assert "not this host" in rate.source


@pytest.mark.parametrize("mcpu, tf, shape", [
    (None, F4, ConvShape(1, 9, 7, 16, 32, (1, 1, 1, 1), "float32")),    # tiles overhang
    (None, F2, ConvShape(2, 8, 8, 12, 16, (0, 0, 0, 0), "float32")),    # batch 2, no padding
    ("znver2", F4, ConvShape(1, 12, 12, 8, 24, (1, 1, 1, 1), "float32")),  # AVX2, 3 vectors
    ("znver2", F2, ConvShape(1, 6, 10, 16, 8, (0, 1, 2, 1), "float32")),   # uneven padding
])
def test_scheduled_kernel_matches_numpy(mcpu, tf, shape):
    import tvm
    target = make_target(mcpu)
    unit = vector_unit(target)
    lanes = unit.lanes("float32")
    res = schedule_func(winograd_func(shape, tf), "default", lanes, unit, frozenset({1}))
    assert res.applied[0].startswith(f"winograd F({tf.m}x{tf.m},3x3)"), res.applied
    x = RNG.standard_normal((shape.n, shape.h, shape.w, shape.c)).astype("float32")
    w = RNG.standard_normal((3, 3, shape.c, shape.k)).astype("float32")
    u = tf.weight(w)
    for pack in res.packs:
        u = pack.apply(u)
    out = np.zeros((shape.n, *shape.out_hw, shape.k), "float32")
    lib = tvm.compile(tvm.IRModule({"main": res.func.with_attr("global_symbol", "main")}),
                      target=target).mod
    args = [tvm.runtime.tensor(v) for v in (x, u, out)]
    lib["main"](*args)
    want = _conv_nhwc(x, w, shape.pad)
    np.testing.assert_allclose(args[2].numpy(), want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def _two_conv_onnx(path, batch: int) -> dict[str, np.ndarray]:
    """x (N,16,10,10) -> Conv 3x3 pad 1 + bias -> Relu -> Conv 3x3 pad 0 -> y (N,32,8,8)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    init = {"W1": RNG.standard_normal((16, 16, 3, 3)).astype("float32") / 12,
            "B1": RNG.standard_normal(16).astype("float32"),
            "W2": RNG.standard_normal((32, 16, 3, 3)).astype("float32") / 12}
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "W1", "B1"], ["c1"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c1"], ["r1"]),
         helper.make_node("Conv", ["r1", "W2"], ["y"], pads=[0, 0, 0, 0])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 16, 10, 10])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 32, 8, 8])],
        [numpy_helper.from_array(v, k) for k, v in init.items()])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return init


def _reference(x: np.ndarray, init: dict[str, np.ndarray]) -> np.ndarray:
    hwio = {k: init[k].transpose(2, 3, 1, 0) for k in ("W1", "W2")}
    r1 = np.maximum(_conv_nhwc(x.transpose(0, 2, 3, 1), hwio["W1"], (1, 1, 1, 1)) + init["B1"], 0)
    return _conv_nhwc(r1, hwio["W2"], (0, 0, 0, 0)).transpose(0, 3, 1, 2)


@pytest.mark.parametrize("tf", [F4, F2], ids=["F4", "F2"])
def test_onnx_build_with_winograd_convs(tmp_path, monkeypatch, tf):
    """Both convs forced to ``tf``: the build fuses the bias and relu into the first one,
    packs nothing it cannot, records the choice, and the answer is numpy's."""
    from minigraph.compiler.compiler import build
    from minigraph.runtime.debug import DebugExecutor
    monkeypatch.setattr(conv_algorithms, "choose", _forced(tf))
    init = _two_conv_onnx(tmp_path / "m.onnx", batch=2)
    build(str(tmp_path / "m.onnx"), tmp_path / "out", vm=False)
    info = json.loads((tmp_path / "out" / "build.json").read_text())
    assert [c["algorithm"] for c in info["conv_algorithms"]] == [f"winograd F({tf.m}x{tf.m},3x3)"] * 2
    kernels = info["kernels"]
    assert sum(any(n.startswith("winograd") for n in k["schedule"]) for k in kernels.values()) == 2
    assert any("relu" in k["relax_name"] and "winograd" in k["relax_name"] for k in kernels.values())
    assert not any(n in ("W1", "W2") or n.startswith(("W1.HWIO", "W2.HWIO")) and
                   "winograd" not in n for n in _param_names(tmp_path / "out"))
    ex = DebugExecutor.from_files(tmp_path / "out" / "model.so", tmp_path / "out" / "graph.json")
    x = RNG.standard_normal((2, 16, 10, 10)).astype("float32")
    ex.run(x=x)
    want = _reference(x, init)
    np.testing.assert_allclose(ex.get_output(0).numpy(), want, rtol=1e-4,
                               atol=1e-4 * np.abs(want).max())


def _param_names(out) -> list[str]:
    from minigraph.artifacts.params import load_params
    return list(load_params((out / "model.params").read_bytes()))


def test_no_winograd_keeps_every_conv_direct(tmp_path, monkeypatch):
    from minigraph.compiler.compiler import build
    monkeypatch.setattr(conv_algorithms, "choose", _forced(F4))
    _two_conv_onnx(tmp_path / "m.onnx", batch=1)
    info = build(str(tmp_path / "m.onnx"), tmp_path / "out", vm=False, winograd=False).build_json
    assert info["conv_algorithms"] == []
    assert not any("winograd" in k["relax_name"] for k in info["kernels"].values())


def test_only_3x3_stride_1_convs_with_known_weights_are_candidates():
    from tvm import relax
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 8, 8, 16), "float32"))
    ws = {n: relax.Var(n, relax.TensorType(s, "float32")) for n, s in
          [("w3", (3, 3, 16, 16)), ("w1", (1, 1, 16, 16)), ("w3s2", (3, 3, 16, 16))]}
    with bb.function("main", [x, *ws.values()]):
        with bb.dataflow():
            a = bb.emit(relax.op.nn.conv2d(x, ws["w3"], padding=1, data_layout="NHWC",
                                           kernel_layout="HWIO"))
            b = bb.emit(relax.op.nn.conv2d(a, ws["w1"], data_layout="NHWC", kernel_layout="HWIO"))
            c = bb.emit_output(relax.op.nn.conv2d(b, ws["w3s2"], strides=2, padding=1,
                                                  data_layout="NHWC", kernel_layout="HWIO"))
        bb.emit_func_output(c)
    params = {n: RNG.standard_normal([int(d) for d in v.ty.shape]).astype("float32")
              for n, v in ws.items()}
    mod, new_params, choices = choose_algorithms(bb.get(), params, 16, _rate(3.72))
    assert [c.conv for c in choices] == [a.name]  # the 1x1 and the stride-2 conv are not asked
    if choices[0].algorithm != "direct":
        assert "w3" not in new_params and any(n.startswith("w3.winograd") for n in new_params)
        assert [p.name for p in mod["main"].params][:3] == ["x", "w1", "w3s2"]


def test_a_weight_two_convs_share_is_transformed_once(monkeypatch):
    from tvm import relax
    monkeypatch.setattr(conv_algorithms, "choose", _forced(F4))
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 8, 8, 16), "float32"))
    w = relax.Var("w", relax.TensorType((3, 3, 16, 16), "float32"))
    with bb.function("main", [x, w]):
        with bb.dataflow():
            a = bb.emit(relax.op.nn.conv2d(x, w, padding=1, data_layout="NHWC",
                                           kernel_layout="HWIO"))
            b = bb.emit_output(relax.op.nn.conv2d(a, w, padding=1, data_layout="NHWC",
                                                  kernel_layout="HWIO"))
        bb.emit_func_output(b)
    params = {"w": RNG.standard_normal((3, 3, 16, 16)).astype("float32")}
    mod, new_params, choices = choose_algorithms(bb.get(), params, 16, _rate(3.72))
    assert len(choices) == 2 and list(new_params) == ["w.winograd4"]
    assert [p.name for p in mod["main"].params] == ["x", "w.winograd4"]
    np.testing.assert_array_equal(new_params["w.winograd4"], F4.weight(params["w"]))
