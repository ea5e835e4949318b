"""Relax VM executables made the way TVM's own tutorials make them (no minigraph involved):
an ONNX model through ``relax.frontend.onnx`` (weights embedded as constants), a
``relax.frontend.nn`` module (weights passed as arguments), and small IRModules for the cases
a static graph must refuse. Each builder compiles with ``tvm.compile`` and exports a library."""
from __future__ import annotations

from pathlib import Path

import numpy as np

TARGET = "llvm"


def onnx_model(path: Path) -> Path:
    """conv -> relu -> maxpool -> flatten -> gemm -> softmax, two outputs (a tuple), weights
    as initializers; saved as an .onnx file."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(1)
    inits = {"W": rng.standard_normal((8, 3, 3, 3)), "B": rng.standard_normal(8),
             "W2": rng.standard_normal((10, 128)), "B2": rng.standard_normal(10)}
    nodes = [helper.make_node("Conv", ["x", "W", "B"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "W2", "B2"], ["y"], transB=1),
             helper.make_node("Softmax", ["y"], ["z"])]
    graph = helper.make_graph(
        nodes, "tutorial", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 10]),
         helper.make_tensor_value_info("p", TensorProto.FLOAT, [1, 8, 4, 4])],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, path)
    return path


def _export(mod, path: Path) -> Path:
    import tvm
    tvm.compile(mod, target=TARGET).export_library(str(path))
    return path


def onnx_executable(out: Path) -> Path:
    """The ONNX tutorial: from_onnx (initializers become embedded constants), tvm.compile."""
    import onnx
    from tvm.relax.frontend.onnx import from_onnx
    mod = from_onnx(onnx.load(onnx_model(out / "tutorial.onnx")), keep_params_in_input=False)
    return _export(mod, out / "onnx_vm.so")


def onnx_detached_executable(out: Path) -> tuple[Path, dict[str, np.ndarray]]:
    """The same model with weights as arguments of main (keep_params_in_input and
    relax.frontend.detach_params, as the end-to-end tutorials do); returns the weights."""
    import onnx
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx
    mod = from_onnx(onnx.load(out / "tutorial.onnx"), keep_params_in_input=True)
    mod, params = relax.frontend.detach_params(mod)
    names = [p.name for p in mod["main"].params[1:]]
    weights = {n: v.numpy() for n, v in zip(names, params["main"])}
    return _export(mod, out / "onnx_args_vm.so"), weights


def nn_executable(out: Path) -> tuple[Path, list[str]]:
    """The relax.frontend.nn tutorial: export_tvm, weights as arguments of ``forward``; a
    reshape in the middle. Returns the library and the weight names in argument order."""
    from tvm.relax.frontend import nn

    class MLP(nn.Module):
        def __init__(self) -> None:
            self.fc1 = nn.Linear(16, 32)
            self.fc2 = nn.Linear(64, 8)

        def forward(self, x):
            h = nn.relu(self.fc1(x))
            return self.fc2(h.reshape(2, 64))

    mod, spec = MLP().export_tvm({"forward": {"x": nn.spec.Tensor((4, 16), "float32")}})
    return _export(mod, out / "nn_vm.so"), [name for name, _ in spec]


def static_module(kind: str):
    """Small IRModules: 'dynamic' (a symbolic batch), 'view' (a reshape the VM does as a
    view), 'memview' (R.memory.view)."""
    from tvm import relax, tirx
    bb = relax.BlockBuilder()
    dim = tirx.Var("n", "int64") if kind == "dynamic" else 4
    x = relax.Var("x", relax.TensorType([dim, 4], "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.add(x, x))
            if kind == "view":
                y = bb.emit(relax.op.multiply(relax.op.reshape(y, [2, 8]), relax.const(2.0)))
            if kind == "memview":  # R.memory.view: runtime.TVMTensorCreateView in the VM
                v = bb.emit(relax.op.memory.view(y, relax.ShapeExpr([16])))
                y = bb.emit(relax.op.multiply(v, v))
            out = bb.emit_output(y)
        bb.emit_func_output(out)
    return bb.get()


def tvmscript_module(kind: str):
    """'if' (R.If), 'nested' (main calls a Relax function twice, returns a tuple)."""
    from tvm.script import ir as I, relax as R  # noqa: E741

    if kind == "if":
        @I.ir_module
        class WithIf:
            @R.function
            def main(c: R.Tensor((), "bool"), x: R.Tensor((4,), "float32")
                     ) -> R.Tensor((4,), "float32"):
                if c:
                    y = R.add(x, x)
                else:
                    y = R.multiply(x, x)
                return y
        return WithIf

    @I.ir_module
    class Nested:
        @R.function(private=True)
        def inner(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            y = R.add(x, x)
            return y

        @R.function
        def main(x: R.Tensor((4,), "float32")
                 ) -> R.Tuple(R.Tensor((4,), "float32"), R.Tensor((4,), "float32")):
            cls = Nested
            a = cls.inner(x)
            b = cls.inner(a)
            return (a, b)
    return Nested


def export(mod, path: Path) -> Path:
    return _export(mod, path)


def vm_outputs(lib: Path, function: str, args: list[np.ndarray]) -> list[np.ndarray]:
    """What relax.VirtualMachine returns for these arguments, flattened to arrays."""
    import tvm
    from tvm import relax
    vm = relax.VirtualMachine(tvm.runtime.load_module(str(lib)), tvm.cpu())
    out = vm[function](*[tvm.runtime.tensor(a) for a in args])

    def flat(v):
        return [v.numpy()] if isinstance(v, tvm.runtime.Tensor) else [x for i in v
                                                                     for x in flat(i)]
    return flat(out)


def _nn_dynamic(model, width: int, out: Path, fused: bool) -> tuple[Path, dict[str, np.ndarray]]:
    """``model`` exported the standard way with a symbolic first dimension ``n``, weights as
    arguments of ``forward``; returns the library and seeded weights by parameter name."""
    import tvm
    from tvm import relax
    from tvm.relax.frontend import nn
    mod, spec = model.export_tvm({"forward": {"x": nn.spec.Tensor(["n", width], "float32")}})
    target = tvm.target.Target({"kind": "llvm"})
    kw = {"relax_pipeline": relax.backend.cpu_generic.get_default_pipeline(target)} if fused \
        else {}
    tvm.compile(mod, target=target, **kw).export_library(str(out))
    rng = np.random.default_rng(5)
    weights = {name: (rng.standard_normal([int(d) for d in p.shape]) * 0.05).astype(p.dtype)
               for name, p in spec}
    return out, weights


def dynamic_mlp(out: Path, fused: bool = True) -> tuple[Path, dict[str, np.ndarray]]:
    """A two-layer MLP over [n, 64], relu between."""
    from tvm.relax.frontend import nn

    class MLP(nn.Module):
        def __init__(self) -> None:
            self.fc1 = nn.Linear(64, 256)
            self.fc2 = nn.Linear(256, 64)

        def forward(self, x):
            return self.fc2(nn.relu(self.fc1(x)))
    return _nn_dynamic(MLP(), 64, out / f"mlp_dyn{'_fused' * fused}.so", fused)


def transformer_block(out: Path, fused: bool = True, d: int = 64
                      ) -> tuple[Path, dict[str, np.ndarray]]:
    """A pre-norm transformer encoder block over [n, d]: LayerNorm, q/k/v projections,
    softmax attention over the n x n scores, output projection, residual, LayerNorm, GELU MLP,
    residual."""
    from tvm.relax.frontend import nn

    class Block(nn.Module):
        def __init__(self) -> None:
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
            self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            h = self.ln1(x)
            scores = nn.op.matmul(self.q(h), nn.op.permute_dims(self.k(h))) * (d ** -0.5)
            x = x + self.o(nn.op.matmul(nn.op.softmax(scores, axis=-1), self.v(h)))
            return x + self.fc2(nn.op.gelu(self.fc1(self.ln2(x))))
    return _nn_dynamic(Block(), d, out / f"block_dyn{'_fused' * fused}.so", fused)
