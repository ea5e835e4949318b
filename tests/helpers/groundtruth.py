"""ONNX models whose first-run causes are known by construction (the ground-truth tests)."""
from __future__ import annotations

from pathlib import Path


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
