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
    one whose weights do not (sizes in float32 elements, [K, N] each).

    The weights go to an external-data file beside the model, written straight from numpy:
    serialising hundreds of MiB into the protobuf took longer than the test's measurement."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper
    rng = np.random.default_rng(0)
    inputs = [helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, [1, k])
              for i, (k, _) in enumerate((small, big))]
    outputs = [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [1, n])
               for i, (_, n) in enumerate((small, big))]
    data = path.with_suffix(".data")
    weights, offset = [], 0
    with open(data, "wb") as f:
        for i, kn in enumerate((small, big)):
            rng.standard_normal(kn, dtype=np.float32).tofile(f)
            nbytes = 4 * kn[0] * kn[1]
            w = TensorProto(name=f"w{i}", data_type=TensorProto.FLOAT, dims=kn)
            for key, value in (("location", data.name), ("offset", offset), ("length", nbytes)):
                w.external_data.add(key=key, value=str(value))
            w.data_location = TensorProto.EXTERNAL
            weights.append(w)
            offset += nbytes
    nodes = [helper.make_node("MatMul", [f"x{i}", f"w{i}"], [f"y{i}"]) for i in range(2)]
    graph = helper.make_graph(nodes, "weights", inputs, outputs, weights)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path
