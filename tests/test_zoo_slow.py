"""Every full-size zoo model: minigraph's outputs equal TVM's Relax VM on model.vm.so.

Both run the very same scheduled kernels, so outputs must agree to float32 rounding of the
same operations: we require rtol 1e-5 with atol 1e-5 x max|output|.
"""
from __future__ import annotations

import numpy as np
import pytest

from minigraph.runtime.executor import Executor
from minigraph.runtime.params import load_params_file

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("model", ["resnet18", "resnet50", "mobilenet_v2", "bert-block"])
def test_outputs_match_relax_vm(build_dir, model):
    import tvm
    from tvm import relax
    out = build_dir(model)
    ex = Executor.from_files(out / "model.so", out / "graph.json")
    x = np.random.default_rng(3).standard_normal(ex.graph.shapes[0]).astype("float32")
    ex.run(data=x)
    got = ex.get_output(0).numpy()
    vm = relax.VirtualMachine(tvm.runtime.load_module(str(out / "model.vm.so")), tvm.cpu())
    params = load_params_file(out / "model.params")
    names = ex.graph.input_names()
    args = [tvm.runtime.tensor(x)] + [tvm.runtime.tensor(params[n]) for n in names[1:]]
    want = vm["main"](*args).numpy()
    scale = float(np.abs(want).max())
    assert scale > 0
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * scale)
