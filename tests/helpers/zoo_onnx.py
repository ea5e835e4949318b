"""A zoo model written as the ONNX file a PyTorch export would give: NCHW, Conv without bias
followed by BatchNormalization, Relu, MaxPool, Add, GlobalAveragePool + Flatten, Gemm (transB=1).

The ONNX network computes the same function as the zoo model (whose batch norm is already folded
into conv weight + bias): each zoo conv ``W, b`` becomes ``Conv(W / s)`` + ``BatchNormalization
(gamma, beta, mean, var)`` with random statistics and ``s = gamma / sqrt(var + eps)``,
``beta = b + mean * s``. So ONNX Runtime on the file, minigraph on the file and minigraph on the
zoo model must agree (to float32 rounding). Used by benchmarks/vs_onnxruntime.py and the tests.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

EPS = 1e-5


class _Writer:
    def __init__(self, params: dict[str, np.ndarray], seed: int) -> None:
        self.params, self.rng = params, np.random.default_rng(seed)
        self.nodes: list = []
        self.inits: list = []
        self.names: dict[object, str] = {}  # relax Var -> ONNX value name
        self.count = 0

    def fresh(self, stem: str) -> str:
        self.count += 1
        return f"{stem}_{self.count}"

    def init(self, name: str, value: np.ndarray) -> str:
        from onnx import numpy_helper
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def node(self, op: str, inputs: list[str], stem: str, **attrs) -> str:
        from onnx import helper
        out = self.fresh(stem)
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def conv_bn(self, x: str, weight: str, bias: str, attrs) -> str:
        """Conv(W/s) + BatchNormalization == the zoo's conv(W) + b."""
        w_hwio, b = self.params[weight], self.params[bias]
        cout = w_hwio.shape[3]
        gamma = self.rng.uniform(0.5, 1.5, cout).astype(np.float32)
        var = self.rng.uniform(0.5, 2.0, cout).astype(np.float32)
        mean = self.rng.uniform(-0.1, 0.1, cout).astype(np.float32)
        scale = gamma / np.sqrt(var + EPS)
        w = (w_hwio.transpose(3, 2, 0, 1) / scale[:, None, None, None]).astype(np.float32)
        beta = (b + mean * scale).astype(np.float32)
        stem = weight.removesuffix("_weight")
        pad = [int(p) for p in attrs.padding]
        y = self.node("Conv", [x, self.init(f"{stem}.weight", w)], stem,
                      kernel_shape=list(w.shape[2:]), strides=[int(s) for s in attrs.strides],
                      pads=[pad[0], pad[1], pad[2], pad[3]], group=int(attrs.groups))
        bn = [self.init(f"{stem}.bn.{k}", v) for k, v in
              (("weight", gamma), ("bias", beta), ("running_mean", mean), ("running_var", var))]
        return self.node("BatchNormalization", [y, *bn], f"{stem}_bn", epsilon=EPS)


def _emit(w: _Writer, call, args: list, param_names: set[str]) -> str:
    """One zoo binding -> ONNX node(s); returns the output name."""
    op = call.op.name
    if op == "relax.nn.conv2d":
        return ("conv", call)  # fused with the bias add that always follows
    if op == "relax.add":
        if isinstance(args[0], tuple) and args[0][0] == "conv":  # conv + bias
            conv = args[0][1]
            return w.conv_bn(w.names[conv.args[0]], conv.args[1].name,
                             call.args[1].name, conv.attrs)
        if call.args[1].name in param_names:  # dense bias: handled by the Gemm
            return ("bias", args[0], call.args[1].name)
        return w.node("Add", args, "add")
    if op == "relax.nn.relu":
        return w.node("Relu", [_value(w, args[0])], "relu")
    if op == "relax.nn.max_pool2d":
        a = call.attrs
        return w.node("MaxPool", args, "maxpool", kernel_shape=[int(k) for k in a.pool_size],
                      strides=[int(s) for s in a.strides], pads=[int(p) for p in a.padding])
    if op == "relax.mean":
        return w.node("Flatten", [w.node("GlobalAveragePool", args, "gap")], "flatten")
    if op == "relax.matmul":
        return ("matmul", args[0], call.args[1].name)
    raise ValueError(f"zoo_onnx: no ONNX form for {op}")


def _value(w: _Writer, v) -> str:
    """A pending (tuple) value becomes real nodes when something else consumes it."""
    if isinstance(v, str):
        return v
    if v[0] == "bias" and isinstance(v[1], tuple) and v[1][0] == "matmul":
        _, x, weight = v[1]
        wt = w.init(f"{weight}", w.params[weight].T.copy())
        b = w.init(f"{v[2]}", w.params[v[2]])
        return w.node("Gemm", [x, wt, b], "gemm", transB=1)
    raise ValueError(f"zoo_onnx: unsupported pattern {v[0]}")


def zoo_to_onnx(zm, path: Path, seed: int = 1, opset: int = 17) -> Path:
    """Writes ``zm`` (a minigraph.compiler.zoo.ZooModel in NHWC) as an NCHW ONNX file."""
    import onnx
    from onnx import TensorProto, helper
    main = zm.mod["main"]
    w = _Writer(zm.params, seed)
    data = main.params[0]
    n, h, wd, c = (int(d) for d in data.ty.shape)
    w.names[data] = data.name
    param_names = {p.name for p in main.params[1:]}
    for block in main.body.blocks:
        for b in block.bindings:
            value = b.value
            if not hasattr(value, "op"):  # an alias (the output var)
                w.names[b.var] = w.names[value]
                continue
            args = [w.names.get(a, a) for a in value.args if a not in
                    {p for p in main.params[1:]}]
            w.names[b.var] = _emit(w, value, args, param_names)
    out = _value(w, w.names[main.body.body])
    classes = int(main.ret_ty.shape[-1])
    graph = helper.make_graph(
        w.nodes, zm.name, [helper.make_tensor_value_info(data.name, TensorProto.FLOAT,
                                                         [n, c, h, wd])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, [n, classes])], w.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="minigraph-zoo-onnx")
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path
