"""Built-in model zoo: Relax IRModules with weights as function parameters.

The counterpart of the old ``tvm.relay.testing`` workloads (resnet, mobilenet, mlp). Weights are
random with a fixed seed (He-scaled so activations stay bounded through deep networks) and
nothing is downloaded. Layout is NHWC activations with HWIO conv weights: the layout in which a
simple vectorise-over-output-channels CPU schedule is fast. Batch norm is folded into the conv
bias, as TVM's inference pipeline (FoldScaleAxis / DecomposeOpsForInference) would do.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from tvm import relax

from ..errors import InputError
from .zoo_bert import bert_block_body


@dataclass(frozen=True)
class ZooModel:
    """A model ready for the compiler: ``mod["main"]`` takes inputs first, then weights."""

    name: str
    mod: object  # tvm.IRModule (kept untyped so importing the zoo does not import tvm)
    params: dict[str, np.ndarray]
    inputs: dict[str, tuple[tuple[int, ...], str]]


class _Net:
    """A thin BlockBuilder wrapper that creates weight Vars and their random values together."""

    def __init__(self, dtype: str, seed: int) -> None:
        self.relax = relax
        self.dtype = dtype
        self.rng = np.random.default_rng(seed)
        self.bb = relax.BlockBuilder()
        self.params: dict[str, np.ndarray] = {}
        self.param_vars: list = []

    def weight(self, name: str, shape: tuple[int, ...], fan_in: int | None = None) -> object:
        if fan_in is None:  # a bias: small values so every op's output is non-trivial
            value = self.rng.uniform(-0.1, 0.1, size=shape)
        else:
            value = self.rng.normal(0.0, np.sqrt(2.0 / fan_in), size=shape)
        var = self.relax.Var(name, self.relax.TensorType(shape, self.dtype))
        self.params[name] = value.astype(self.dtype)
        self.param_vars.append(var)
        return var

    def emit(self, expr: object) -> object:
        return self.bb.emit(expr)

    def conv(self, x, name: str, cin: int, cout: int, k: int, stride: int = 1,
             relu: bool = True, groups: int = 1):
        """conv2d (NHWC, HWIO) + bias (+ relu): one fused kernel after FuseOps."""
        R = self.relax.op
        w = self.weight(f"{name}_weight", (k, k, cin // groups, cout), fan_in=k * k * cin // groups)
        b = self.weight(f"{name}_bias", (cout,))
        y = self.emit(R.nn.conv2d(x, w, strides=stride, padding=k // 2, groups=groups,
                                  data_layout="NHWC", kernel_layout="HWIO"))
        y = self.emit(R.add(y, b))
        return self.emit(R.nn.relu(y)) if relu else y

    def dense(self, x, name: str, cin: int, cout: int, relu: bool = False):
        R = self.relax.op
        w = self.weight(f"{name}_weight", (cin, cout), fan_in=cin)
        b = self.weight(f"{name}_bias", (cout,))
        y = self.emit(R.add(self.emit(R.matmul(x, w)), b))
        return self.emit(R.nn.relu(y)) if relu else y

    def finish(self, name: str, inputs: list, body: Callable) -> ZooModel:
        """Builds ``main(inputs..., weights...)``; ``body`` is called inside the dataflow block."""
        bb = self.bb
        with bb.function("main"):
            with bb.dataflow():
                out = bb.emit_output(body(*inputs))
            bb.emit_func_output(out, params=list(inputs) + self.param_vars)
        shapes = {v.name: (tuple(int(d) for d in v.ty.shape), self.dtype)
                  for v in inputs}
        return ZooModel(name, bb.get(), self.params, shapes)

    def input(self, name: str, shape: tuple[int, ...]):
        return self.relax.Var(name, self.relax.TensorType(shape, self.dtype))


def _resnet_stem(net: _Net, x):
    R = net.relax.op
    y = net.conv(x, "conv0", 3, 64, 7, stride=2)
    return net.emit(R.nn.max_pool2d(y, pool_size=3, strides=2, padding=1, layout="NHWC"))


def _basic_block(net: _Net, x, name: str, cin: int, cout: int, stride: int):
    R = net.relax.op
    y = net.conv(x, f"{name}_conv1", cin, cout, 3, stride)
    y = net.conv(y, f"{name}_conv2", cout, cout, 3, relu=False)
    sc = x if stride == 1 and cin == cout else net.conv(x, f"{name}_down", cin, cout, 1, stride,
                                                        relu=False)
    return net.emit(R.nn.relu(net.emit(R.add(y, sc))))


def _bottleneck(net: _Net, x, name: str, cin: int, width: int, stride: int):
    """ResNet v1.5 bottleneck: the stride sits on the 3x3 conv, not the first 1x1."""
    R = net.relax.op
    cout = width * 4
    y = net.conv(x, f"{name}_conv1", cin, width, 1)
    y = net.conv(y, f"{name}_conv2", width, width, 3, stride)
    y = net.conv(y, f"{name}_conv3", width, cout, 1, relu=False)
    sc = x if stride == 1 and cin == cout else net.conv(x, f"{name}_down", cin, cout, 1, stride,
                                                        relu=False)
    return net.emit(R.nn.relu(net.emit(R.add(y, sc))))


def _resnet(depth: int, batch: int, dtype: str, seed: int) -> ZooModel:
    bottleneck = depth >= 50
    stages = {18: (2, 2, 2, 2), 34: (3, 4, 6, 3), 50: (3, 4, 6, 3)}[depth]
    net = _Net(dtype, seed)
    data = net.input("data", (batch, 224, 224, 3))

    def body(x):
        R = net.relax.op
        y, cin = _resnet_stem(net, x), 64
        for s, blocks in enumerate(stages):
            width = 64 * 2 ** s
            for i in range(blocks):
                stride = 2 if i == 0 and s > 0 else 1
                name = f"layer{s + 1}_{i}"
                if bottleneck:
                    y, cin = _bottleneck(net, y, name, cin, width, stride), width * 4
                else:
                    y, cin = _basic_block(net, y, name, cin, width, stride), width
        y = net.emit(R.mean(y, axis=[1, 2]))  # global average pool -> [N, C]
        return net.dense(y, "fc", cin, 1000)

    return net.finish(f"resnet{depth}", [data], body)


def _mobilenet_v2(batch: int, dtype: str, seed: int) -> ZooModel:
    net = _Net(dtype, seed)
    data = net.input("data", (batch, 224, 224, 3))
    # (expansion t, channels c, repeats n, stride s), as in the MobileNetV2 paper's table 2
    config = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
              (6, 160, 3, 2), (6, 320, 1, 1)]

    def body(x):
        R = net.relax.op
        y, cin = net.conv(x, "conv0", 3, 32, 3, stride=2), 32
        for b, (t, c, n, s) in enumerate(config):
            for i in range(n):
                name, hidden = f"block{b}_{i}", cin * t
                h = net.conv(y, f"{name}_expand", cin, hidden, 1) if t != 1 else y
                h = net.conv(h, f"{name}_dw", hidden, hidden, 3, s if i == 0 else 1, groups=hidden)
                h = net.conv(h, f"{name}_project", hidden, c, 1, relu=False)
                y = net.emit(R.add(h, y)) if (i > 0 and cin == c) else h
                cin = c
        y = net.conv(y, "conv_last", cin, 1280, 1)
        y = net.emit(R.mean(y, axis=[1, 2]))
        return net.dense(y, "fc", 1280, 1000)

    return net.finish("mobilenet_v2", [data], body)


def _mlp(batch: int, dtype: str, seed: int) -> ZooModel:
    net = _Net(dtype, seed)
    data = net.input("data", (batch, 784))

    def body(x):
        y = net.dense(x, "fc1", 784, 512, relu=True)
        y = net.dense(y, "fc2", 512, 256, relu=True)
        return net.dense(y, "fc3", 256, 10)

    return net.finish("mlp", [data], body)


def _tiny_cnn(batch: int, dtype: str, seed: int) -> ZooModel:
    """A few-millisecond CNN for unit tests: conv, pool, residual add, mean, dense."""
    net = _Net(dtype, seed)
    data = net.input("data", (batch, 32, 32, 3))

    def body(x):
        R = net.relax.op
        y = net.conv(x, "conv0", 3, 16, 3, stride=2)
        y = net.emit(R.nn.max_pool2d(y, pool_size=2, strides=2, layout="NHWC"))
        z = net.conv(y, "conv1", 16, 16, 3, relu=False)
        y = net.emit(R.nn.relu(net.emit(R.add(y, z))))
        y = net.emit(R.mean(y, axis=[1, 2]))
        return net.dense(y, "fc", 16, 10)

    return net.finish("tiny-cnn", [data], body)


def _bert_block(batch: int, dtype: str, seed: int, seq: int = 128, hidden: int = 768,
                heads: int = 12) -> ZooModel:
    net = _Net(dtype, seed)
    data = net.input("data", (batch, seq, hidden))
    return net.finish("bert-block", [data],
                      lambda x: bert_block_body(net, x, batch, seq, hidden, heads))


ZOO: dict[str, Callable[[int, str, int], ZooModel]] = {
    "resnet18": lambda b, d, s: _resnet(18, b, d, s),
    "resnet50": lambda b, d, s: _resnet(50, b, d, s),
    "mobilenet_v2": _mobilenet_v2,
    "mlp": _mlp,
    "bert-block": _bert_block,
    "tiny-cnn": _tiny_cnn,
}


def load_zoo_model(name: str, batch: int = 1, dtype: str = "float32", seed: int = 0) -> ZooModel:
    """Returns the named zoo model; BuildError listing the known names otherwise."""
    if name not in ZOO:
        raise InputError(f"unknown model '{name}': expected an .onnx file or one of "
                         f"{', '.join(sorted(ZOO))}")
    return ZOO[name](batch, dtype, seed)
