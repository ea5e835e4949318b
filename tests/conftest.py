"""Shared fixtures: zoo models are built once per session into a temp dir."""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def unless_busy(contention: dict, during: str):
    """Ground truth on real hardware holds on a machine we have to ourselves. If one fails
    while other processes (or the hypervisor) measurably took CPU time from us, the test is
    skipped with the figures; on a quiet machine a failure stays a failure."""
    try:
        yield
    except AssertionError:
        from minigraph.measure.contention import warning
        busy = warning(contention, during)
        if busy:
            pytest.skip(f"ground truth not checkable: {busy}")
        raise


@pytest.fixture(scope="session")
def build_dir(tmp_path_factory):
    """build_dir(name) -> Path of that zoo model's artifacts, built at most once per session."""
    from minigraph.compiler.compiler import build
    cache: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in cache:
            out = tmp_path_factory.mktemp(name.replace("-", "_"))
            build(name, out)
            cache[name] = out
        return cache[name]

    return get


@pytest.fixture(scope="session")
def tiny_cnn(build_dir) -> Path:
    return build_dir("tiny-cnn")


def write_groundtruth_onnx(path: Path, n: int = 4096) -> Path:
    """A 3-op model whose first-run causes are known by construction: op 0 (add, parallel) is
    the first kernel to use TVM's thread pool; op 1 (matmul [n,1]x[1,n]) writes a fresh n*n
    float32 activation (64 MiB for n=4096); op 2 reduces it."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    nodes = [helper.make_node("Add", ["data", "bias"], ["h"]),
             helper.make_node("MatMul", ["h", "row"], ["big"]),
             helper.make_node("ReduceMean", ["big"], ["out"], axes=[0], keepdims=0)]
    graph = helper.make_graph(
        nodes, "groundtruth", [helper.make_tensor_value_info("data", TensorProto.FLOAT, [n, 1])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [n])],
        [numpy_helper.from_array(np.ones((n, 1), np.float32), "bias"),
         numpy_helper.from_array(np.ones((1, n), np.float32), "row")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, str(path))
    return path


@pytest.fixture(scope="session")
def groundtruth_model(tmp_path_factory) -> Path:
    from minigraph.compiler.compiler import build
    out = tmp_path_factory.mktemp("groundtruth")
    build(str(write_groundtruth_onnx(out / "groundtruth.onnx")), out / "build")
    return out / "build"


def write_weights_onnx(path: Path, small: tuple[int, int], big: tuple[int, int]) -> Path:
    """Two independent matrix-vector products: one whose weights fit in the last-level cache,
    one whose weights do not (sizes in float32 elements, [K, N] each)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    inputs = [helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, [1, k])
              for i, (k, _) in enumerate((small, big))]
    outputs = [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [1, n])
               for i, (_, n) in enumerate((small, big))]
    weights = [numpy_helper.from_array(rng.standard_normal(kn).astype(np.float32), f"w{i}")
               for i, kn in enumerate((small, big))]
    nodes = [helper.make_node("MatMul", [f"x{i}", f"w{i}"], [f"y{i}"]) for i in range(2)]
    graph = helper.make_graph(nodes, "weights", inputs, outputs, weights)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


@pytest.fixture(scope="session")
def legacy_model(tmp_path_factory):
    """legacy_model(variant) -> a directory with deploy_lib.so (old packed C ABI, compiled here
    by the system C compiler), deploy_graph.json and deploy_param.params; built once per variant:
    "A" (weak context pointers), "B" (system-lib, lazy binding), "B-now" (full RELRO, BIND_NOW),
    "B-noplt" (GOT calls, BIND_NOW)."""
    import legacy_abi_fixtures as fx
    if fx.compiler() is None:
        pytest.skip("no C compiler to build legacy-ABI fixture libraries")
    flags = {"A": ("A", ()), "B": ("B", ()), "B-now": ("B", ("-Wl,-z,now", "-Wl,-z,relro")),
             "B-noplt": ("B", ("-fno-plt", "-Wl,-z,now"))}
    cache: dict[str, Path] = {}

    def get(variant: str) -> Path:
        if variant not in cache:
            kind, extra = flags[variant]
            cache[variant] = fx.write_model(tmp_path_factory.mktemp(f"legacy_{variant}"), kind,
                                            extra)
        return cache[variant]

    return get
