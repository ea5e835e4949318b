"""Relax VM executables with symbolic shapes, as relax.frontend.nn exports them: derived for the
sizes given (--shape, or an input's shape), equal to relax.VirtualMachine at several sizes,
profiled, swept; what cannot be made static is still refused naming its instruction."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest
import vm_models

from minigraph.artifacts.model_files import locate
from minigraph.artifacts.params import save_params_file
from minigraph.cli import main
from minigraph.errors import InputError
from minigraph.profile.session import profile_files
from minigraph.readers.documents import load_document
from minigraph.results.profile import Settings
from minigraph.runtime.doors import open_model
from minigraph.threadpool.config import ThreadRequest


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    out = tmp_path_factory.mktemp("dyn")
    built = {}
    for key, maker, fused in (("mlp", vm_models.dynamic_mlp, False),
                              ("mlp_fused", vm_models.dynamic_mlp, True),
                              ("block", vm_models.transformer_block, True)):
        lib, weights = maker(out, fused=fused)
        params = lib.with_suffix(".params")
        save_params_file(params, weights)
        built[key] = (lib, params, weights)
    return built


def _ours(lib, params, x, **kw) -> np.ndarray:
    model = open_model(locate(lib, None, params), **kw)
    model.executor.set_input(x=x)
    model.executor.run_checked()
    return model.executor.get_output(0).numpy()


@pytest.mark.parametrize("key", ["mlp", "mlp_fused", "block"])
def test_outputs_equal_the_vms_at_several_sizes(models, key):
    lib, params, weights = models[key]
    width = next(iter(weights.values())).shape[-1] if key != "block" else 64
    for n in (5, 32, 77):
        x = np.random.default_rng(n).standard_normal((n, 64)).astype(np.float32)
        ref = vm_models.vm_outputs(lib, "forward", [x, *weights.values()])[0]
        by_shape = _ours(lib, params, x, symbols={"n": n})
        by_input = _ours(lib, params, x, inputs={"x": x})
        for got in (by_shape, by_input):
            assert got.shape == (n, 64) and width
            assert np.max(np.abs(got - ref)) <= 1e-5 * np.max(np.abs(ref))


def test_the_derivation_says_its_sizes_and_runs_the_librarys_shape_function(models):
    lib, params, _ = models["block"]
    model = open_model(locate(lib, None, params), symbols={"n": 48})
    d = model.derivation
    assert d.sizes == {"n": 48}
    assert any(b.name.startswith("shape_func") and b.role == "shape" for b in d.builtins)
    g = model.executor.graph
    assert (48, 48) in {g.shapes[e] for e in range(g.num_entries)}  # the n x n scores


def test_unbound_unknown_and_conflicting_sizes_are_one_line_errors(models, tmp_path, capsys):
    lib, params, _ = models["mlp_fused"]
    assert main(["run", str(lib), "--params", str(params)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and re.search(r"forward instruction \d+ `call vm\.builtin\.match_"
                                         r"shape .*symbol 'n' \(param x dim 0\)", err)
    assert main(["run", str(lib), "--params", str(params), "--shape", "m=4"]) == 2
    assert "--shape gave m, which it does not name here" in capsys.readouterr().err
    np.save(tmp_path / "x.npy", np.ones((12, 64), np.float32))
    assert main(["run", str(lib), "--params", str(params), "--input", f"x={tmp_path / 'x.npy'}",
                 "--shape", "n=4"]) == 2
    assert "n is 12 from param x dim 0's shape, but --shape gives n=4" in \
        capsys.readouterr().err
    with pytest.raises(InputError, match=r"no symbolic dimension named n \(its shapes are static"):
        open_model(locate(vm_models.onnx_executable(tmp_path)), symbols={"n": 3})


def test_cli_run_explain_and_import_take_the_sizes(models, tmp_path, capsys):
    lib, params, _ = models["mlp_fused"]
    assert main(["run", str(lib), "--params", str(params), "--shape", "n=9"]) == 0
    assert "float32[9, 64]" in capsys.readouterr().out
    assert main(["explain", str(lib), "--params", str(params), "--shape", "n=9"]) == 0
    assert capsys.readouterr().out
    out = tmp_path / "imported"
    assert main(["import", str(lib), "--params", str(params), "--shape", "n=9", "-o",
                 str(out)]) == 0  # checked against a traced VM run at n=9
    text = capsys.readouterr().out
    assert "at n=9" in text and "cross-check: " in text and "skipped" not in text
    assert json.loads((out / "import.json").read_text())["sizes"] == {"n": 9}


@pytest.mark.timing
def test_a_profile_at_two_sizes_lists_every_kernel_and_matmuls_grow(models):
    lib, params, _ = models["mlp_fused"]
    settings = Settings(modes=("warm",), warm_budget_ms=40, flush_nbytes=1 << 20)
    small, _, _ = profile_files(locate(lib, None, params), settings, ThreadRequest(threads=1),
                                symbols={"n": 4})
    large, model, _ = profile_files(locate(lib, None, params), settings,
                                    ThreadRequest(threads=1), symbols={"n": 512})
    kernels = {op.func_name for op in model.executor.ops}
    assert {op["func_name"] for op in large.ops} == kernels == {o["func_name"] for o in small.ops}
    assert small.settings["sizes"] == {"n": 4} and large.settings["sizes"] == {"n": 512}
    for i, op in enumerate(large.ops):
        if "matmul" in op["func_name"]:  # 128x the rows: far beyond any machine's noise
            assert large.median("warm", i) > 4 * small.median("warm", i), op["name"]


@pytest.mark.timing
def test_sweep_prints_the_growth_and_saves_and_draws_it(models, tmp_path, capsys):
    lib, params, _ = models["block"]
    out, page = tmp_path / "sweep.json", tmp_path / "sweep.html"
    assert main(["profile", str(lib), "--params", str(params), "--sweep", "n=16,64,256",
                 "--mode", "warm", "--budget-ms", "20", "--quiet", "--json", str(out),
                 "--html", str(page)]) == 0
    text = capsys.readouterr().out
    assert "n=16" in text and "n=256" in text and "fastest growing:" in text
    sweep = load_document(out).value
    assert sweep.symbol == "n" and [p.settings["sizes"]["n"] for p in sweep.profiles] == \
        [16, 64, 256]
    grow = {g.name: g.exponent for g in sweep.growth}
    scores = [v for k, v in grow.items() if k.startswith(("fused_matmul1", "matmul2"))]
    projections = [v for k, v in grow.items() if k.startswith("fused_matmul_add")]
    assert min(scores) > max(projections)  # attention's n x n outgrows the n x d projections
    html = page.read_text()
    assert html.count('class="series"') == min(8, len(sweep.growth)) and "http" not in \
        html.split("</title>")[1]
    assert main(["show", str(out)]) == 0 and "growth" in capsys.readouterr().out


def test_a_global_packed_function_doing_work_is_a_timed_op(tmp_path):
    """R.call_dps_packed of a function TVM registers: an op named after it, run from the
    registry as the VM does, not a refusal."""
    import tvm
    import tvm_ffi
    from tvm import relax

    @tvm_ffi.register_global_func("minigraph.test.double", override=True)
    def double(x, out):
        out.copyfrom(tvm.runtime.tensor(x.numpy() * 2))

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType([4], "float32"))
    with bb.function("main", [x]):
        y = bb.emit(relax.call_dps_packed("minigraph.test.double", [x],
                                          relax.TensorType([4], "float32")))
        bb.emit_func_output(bb.emit(relax.op.add(y, y)))
    lib = vm_models.export(bb.get(), tmp_path / "packed.so")
    model = open_model(locate(lib))
    assert "minigraph.test.double" in [op.func_name for op in model.executor.ops]
    assert any("global function 'minigraph.test.double'" in n for n in model.derivation.notes)
    model.executor.set_input(x=np.arange(4, dtype=np.float32))
    model.executor.run_checked()
    assert model.executor.get_output(0).numpy().tolist() == [0.0, 4.0, 8.0, 12.0]
