"""Small ONNX models written at test time (no binaries in the repository)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

EPS = 1e-5


def conv_bn_relu_gemm(path: Path, *, bias: bool = True, depthwise: bool = False,
                      relu6: bool = False, seed: int = 0) -> tuple[Path, dict[str, np.ndarray]]:
    """x[1,C,8,8] -> Conv(3x3, stride 2, pad 1) -> BatchNormalization -> Relu (or Clip 0..6)
    -> Flatten -> Gemm(transB=1): what a PyTorch export of a tiny CNN looks like.
    Returns the path and the initializers (for a numpy reference)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(seed)
    cin = 8 if depthwise else 3
    cout = 8
    w = rng.standard_normal((cout, 1 if depthwise else cin, 3, 3)).astype("float32") * 0.3
    init = {"W": w, "B": rng.standard_normal(cout).astype("float32") * 0.1,
            "gamma": rng.uniform(0.5, 1.5, cout).astype("float32"),
            "beta": rng.standard_normal(cout).astype("float32") * 0.1,
            "mean": rng.standard_normal(cout).astype("float32") * 0.1,
            "var": rng.uniform(0.5, 2.0, cout).astype("float32"),
            "G": rng.standard_normal((10, cout * 16)).astype("float32") * 0.1,
            "GB": rng.standard_normal(10).astype("float32")}
    if not bias:
        del init["B"]
    act = (helper.make_node("Clip", ["bn", "lo", "hi"], ["r"]) if relu6
           else helper.make_node("Relu", ["bn"], ["r"]))
    if relu6:
        init["lo"], init["hi"] = np.array(0.0, "float32"), np.array(6.0, "float32")
    nodes = [helper.make_node("Conv", ["x", "W"] + (["B"] if bias else []), ["c"],
                              pads=[1, 1, 1, 1], strides=[2, 2], group=cin if depthwise else 1),
             helper.make_node("BatchNormalization", ["c", "gamma", "beta", "mean", "var"], ["bn"],
                              epsilon=EPS),
             act,
             helper.make_node("Flatten", ["r"], ["f"]),
             helper.make_node("Gemm", ["f", "G", "GB"], ["y"], transB=1)]
    graph = helper.make_graph(
        nodes, "conv_bn_relu_gemm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", cin, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])],
        [numpy_helper.from_array(v, k) for k, v in init.items()])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path, init


def reference(x: np.ndarray, init: dict[str, np.ndarray], relu6: bool = False) -> np.ndarray:
    """The model in plain numpy (NCHW, direct convolution)."""
    w = init["W"]
    cout, cin_g = w.shape[:2]
    groups = x.shape[1] // cin_g
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((x.shape[0], cout, 4, 4), "float64")
    per = cout // groups
    for o in range(cout):
        g = o // per
        for i in range(3):
            for j in range(3):
                patch = xp[:, g * cin_g:(g + 1) * cin_g, i:i + 8:2, j:j + 8:2]
                out[:, o] += np.einsum("nchw,c->nhw", patch, w[o, :, i, j])
    if "B" in init:
        out += init["B"][None, :, None, None]
    s = init["gamma"] / np.sqrt(init["var"] + EPS)
    out = (out - init["mean"][None, :, None, None]) * s[None, :, None, None] \
        + init["beta"][None, :, None, None]
    out = np.clip(out, 0, 6) if relu6 else np.maximum(out, 0)
    return out.reshape(x.shape[0], -1) @ init["G"].T + init["GB"]
