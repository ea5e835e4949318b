"""The relax-vm door: Relax VM executables made as TVM's tutorials make them, derived into a
graph from their bytecode, cross-checked against a traced VM run, run, profiled, explained
and imported; what is not static is refused with the instruction named."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest
import vm_models

from minigraph.artifacts.library import classify
from minigraph.artifacts.params import save_params_file
from minigraph.cli import main
from minigraph.errors import InputError
from minigraph.runtime.doors import door_of, locate, open_executor
from minigraph.runtime.relax_vm.bytecode import read_executable
from minigraph.runtime.relax_vm.door import derive_file, open_vm
from minigraph.runtime.relax_vm.trace import check_trace, main_args, max_rel_diff, trace_vm
from minigraph.values.inputs import random_inputs


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("vm")
    nn_lib, weights = vm_models.nn_executable(out)
    libs = {"onnx": vm_models.onnx_executable(out), "nn": nn_lib}
    libs["onnx_args"], onnx_weights = vm_models.onnx_detached_executable(out)
    save_params_file(out / "onnx_args.params", onnx_weights)
    for kind in ("dynamic", "view", "memview"):
        libs[kind] = vm_models.export(vm_models.static_module(kind), out / f"{kind}.so")
    for kind in ("if", "nested"):
        libs[kind] = vm_models.export(vm_models.tvmscript_module(kind), out / f"{kind}.so")
    rng = np.random.default_rng(3)
    shapes = {"fc1.weight": (32, 16), "fc1.bias": (32,), "fc2.weight": (8, 64),
              "fc2.bias": (8,)}
    nn_params = {n: rng.standard_normal(shapes[n]).astype(np.float32) for n in weights}
    save_params_file(out / "nn.params", nn_params)
    return {"dir": out, "libs": libs, "nn_params": nn_params, "onnx_weights": onnx_weights}


def _outputs(ex) -> list[np.ndarray]:
    return [ex.get_output(i).numpy() for i in range(ex.get_num_outputs())]


def test_the_door_is_read_from_the_library(built, tiny_cnn):
    assert door_of(locate(built["libs"]["onnx"])) == "relax-vm"
    renamed = built["dir"] / "model.so"  # the name says nothing: the contents decide
    renamed.write_bytes(built["libs"]["nn"].read_bytes())
    assert door_of(locate(renamed)) == "relax-vm"
    with pytest.raises(InputError, match="holds no Relax VM executable"):
        door_of(locate(tiny_cnn / "model.so"))
    assert door_of(locate(tiny_cnn / "model.so", tiny_cnn / "graph.json")) == "graph"


def test_bytecode_decodes_as_tvm_prints_it(built):
    """The instruction records read from the file print exactly as the VM's own as_text()."""
    import tvm
    for key in ("onnx", "nested"):
        exe = read_executable(built["libs"][key])
        text = tvm.runtime.load_module(str(built["libs"][key]))["as_text"]()
        theirs = [" ".join(line.split()) for line in text.splitlines()
                  if line.startswith("  ")]
        ours = [" ".join(exe.text(ins).split()) for f in exe.vm_functions()
                for ins in exe.instrs[f.start:f.end]]
        assert sorted(ours) == sorted(theirs) and len(ours) > 10


def test_tutorial_onnx_executable_runs_like_the_vm(built):
    """Weights embedded as constants (params c[k]), a tuple of two outputs, reshape views."""
    lib = built["libs"]["onnx"]
    vm = open_vm(locate(lib))
    ex, d = vm.executor, vm.derivation
    assert d.function == "main" and len(d.constants) == 4
    assert "__nop" in [n.func_name for n in d.graph.op_nodes()]
    assert d.graph.storage_ids[d.graph.entry_id(d.graph.heads[1])] in \
        {s.sid for s in d.storages if s.kind == "alloc_storage"}
    x = np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype(np.float32)
    ex.run(x=x)
    ours, theirs = _outputs(ex), vm_models.vm_outputs(lib, "main", [x])
    assert [a.shape for a in ours] == [(1, 10), (1, 8, 4, 4)]
    assert max_rel_diff(ours, theirs) <= 1e-5


@pytest.mark.parametrize("fmt", ["blob", "npz"])
def test_weights_as_arguments_come_from_params(built, fmt):
    """relax.frontend.nn: weights are arguments of forward; --params binds them by name, from
    a TVM blob or from ``np.savez`` of the module's named parameters (docs/relax-vm.md)."""
    lib, params = built["libs"]["nn"], built["dir"] / "nn.params"
    if fmt == "npz":
        params = built["dir"] / "nn.npz"
        np.savez(params, **built["nn_params"])
    ex = open_executor(locate(lib, None, params))
    assert ex.bound_params == frozenset(built["nn_params"])
    x = np.random.default_rng(1).standard_normal((4, 16)).astype(np.float32)
    ex.run(x=x)
    theirs = vm_models.vm_outputs(lib, "forward", [x, *built["nn_params"].values()])
    assert max_rel_diff(_outputs(ex), theirs) <= 1e-5


def test_detached_weights_unchecked_by_the_bytecode(built):
    """Weights detached into main's arguments: without --params the ones first used through
    a view are bound flat (their size is known, their shape is not) and said so; with the
    tutorial's own params the outputs are the VM's."""
    lib, params = built["libs"]["onnx_args"], built["dir"] / "onnx_args.params"
    d, _ = derive_file(lib)
    assert any("bound flat" in n for n in d.notes)
    ex = open_executor(locate(lib, None, params))
    x = np.random.default_rng(4).standard_normal((1, 3, 8, 8)).astype(np.float32)
    ex.run(x=x)
    theirs = vm_models.vm_outputs(lib, "main", [x, *built["onnx_weights"].values()])
    assert max_rel_diff(_outputs(ex), theirs) <= 1e-5
    ours = open_executor(locate(built["libs"]["onnx"]))
    ours.run(x=x)
    assert max_rel_diff(_outputs(ours), theirs) <= 1e-5  # embedded or detached: one model


@pytest.mark.parametrize("key", ["onnx", "onnx_args", "nn", "view", "memview", "nested"])
def test_derivation_agrees_with_a_traced_run(built, key):
    """Two methods, one graph: the bytecode derivation and the instrument callback's trace
    see the same kernels, shapes, dataflow (addresses) and storage identity."""
    vm = open_vm(locate(built["libs"][key]))
    ex, d = vm.executor, vm.derivation
    ex.set_input(**random_inputs(ex, {}, 0))
    calls, _ = trace_vm(built["libs"][key], d.function, main_args(ex, d))
    assert check_trace(d, calls) == []
    # the cross-check can fail: two entries of different storages forced into one storage id
    g = d.graph
    kernel_out = [g.eid(n.index) for n in g.op_nodes() if not n.func_name.startswith("__")]
    if len(kernel_out) >= 2 and g.storage_ids[kernel_out[0]] != g.storage_ids[kernel_out[1]]:
        sids = list(g.storage_ids)
        sids[kernel_out[1]] = sids[kernel_out[0]]
        broken = type(d)(d.function, type(g)(**{**g.__dict__, "storage_ids": tuple(sids)}),
                         d.constants, d.storages, d.builtins, d.op_pcs)
        assert any("storage id" in p for p in check_trace(broken, calls))


def test_nested_function_calls_are_inlined_with_their_own_storage(built):
    d, _ = derive_file(built["libs"]["nested"])
    adds = d.graph.op_nodes()
    assert [n.func_name for n in adds] == ["add", "add"]
    assert len({d.graph.storage_ids[d.graph.eid(n.index)] for n in adds}) == 2
    assert [b.name for b in d.builtins if b.role == "inline"] == ["inner", "inner"]


@pytest.mark.parametrize("key,pattern", [
    ("dynamic", r"main instruction \d+ `call vm\.builtin\.match_shape .*needs a value for "
                r"symbol 'n' \(param x dim 0\): give --shape n=N"),
    ("if", r"main instruction 3 `call vm\.builtin\.read_if_cond .*control flow")])
def test_what_is_not_static_is_refused_naming_the_instruction(built, key, pattern, capsys):
    assert main(["run", str(built["libs"][key])]) == 2
    err = capsys.readouterr().err
    assert re.search(pattern, err) and len(err.strip().splitlines()) == 1


@pytest.mark.subprocess
def test_relay_era_and_corrupt_files_are_one_line_errors(built, tmp_path, capsys):
    lib = built["libs"]["onnx"]
    blob = lib.read_bytes()
    (tmp_path / "cut.so").write_bytes(blob[:len(blob) // 2])
    pos = blob.index(b"relax.VMExecutable") + len(b"relax.VMExecutable") + 8
    (tmp_path / "bad.so").write_bytes(blob[:pos] + b"\xff" * 8 + blob[pos + 8:])
    (tmp_path / "text.so").write_text("not a library\n")
    src = tmp_path / "relay.c"  # what a Relay-era library exported instead of TVM-FFI symbols
    src.write_text("const char __tvm_dev_mblob[16] = {1};\nvoid *__tvm_module_ctx = 0;\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(tmp_path / "relay.so"), str(src)],
                   check=True)
    expected = {"cut.so": "truncated", "bad.so": "corrupt Relax VM executable",
                "text.so": "not a shared library",
                # the legacy door recognises it (and says why it cannot run this one)
                "relay.so": r"before 0.21 .*Relay era|TVM <= 0.20 \(old packed C ABI\)"}
    for name, pattern in expected.items():
        command = "profile" if name == "relay.so" else "run"
        assert main([command, str(tmp_path / name)]) == 2
        err = capsys.readouterr().err
        assert re.search(pattern, err), err
        assert len(err.strip().splitlines()) == 1


def test_cli_run_profile_explain_import(built, tmp_path, capsys):
    lib, x = built["libs"]["onnx"], tmp_path / "x.npy"
    np.save(x, np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype(np.float32))
    assert main(["run", str(lib), "--input", f"x={x}", "--out", str(tmp_path / "out")]) == 0
    want = vm_models.vm_outputs(lib, "main", [np.load(x)])
    got = [np.load(tmp_path / "out" / f"output_{i}.npy") for i in range(2)]
    assert max_rel_diff(got, want) <= 1e-5
    capsys.readouterr()
    saved = tmp_path / "p.json"
    assert main(["profile", str(lib), "--quiet", "--mode", "one-pass", "--mode", "e2e",
                 "--json", str(saved)]) == 0
    brief = capsys.readouterr().out
    assert "minigraph run() median" in brief and "VM time_evaluator median" in brief
    # a plain tvm.compile: unscheduled kernels, none parallel, and the summary says so when
    # the pool had threads to spare (in-process, the pool an earlier test made is reused)
    assert classify(lib).parallel is False
    threads = json.loads(saved.read_text())["threads"]["tvm_num_threads"]
    assert ("no kernel is parallel" in brief) == (threads >= 2)
    assert main(["profile", str(lib), "--quiet", "--mode", "one-pass", "--mode", "e2e",
                 "--wide"]) == 0
    text = capsys.readouterr().out
    for name in ("conv2d", "max_pool2d", "softmax", "reshape_view", "VM time_evaluator",
                 "VM set_instrument", "VM instrument (us)"):
        assert name in text
    assert main(["explain", str(lib)]) == 0
    text = capsys.readouterr().out
    assert "alloc_storage at instruction" in text and "minigraph's planner" in text
    assert main(["import", str(lib), "-o", str(tmp_path / "imp")]) == 0
    assert "kernel calls agree with a traced VM run" in capsys.readouterr().out
    assert main(["run", str(tmp_path / "imp"), "--input", f"x={x}",
                 "--out", str(tmp_path / "out2")]) == 0
    again = [np.load(tmp_path / "out2" / f"output_{i}.npy") for i in range(2)]
    assert all(np.array_equal(a, b) for a, b in zip(got, again))
    assert main(["explain", str(tmp_path / "imp" / "graph.json")]) == 0  # graph.json still


def test_the_planner_can_run_a_derived_graph(built):
    """minigraph's planner on the derived graph (views share storage) gives the same outputs
    as the VM's own plan: explain's comparison is between two valid plans."""
    from minigraph.compiler.planner import plan_memory
    from minigraph.runtime.executor import Executor
    vm = open_vm(locate(built["libs"]["onnx"]))
    ex, d = vm.executor, vm.derivation
    g = d.graph
    plan = plan_memory(g)
    g2 = type(g)(**{**g.__dict__, "storage_ids": plan.storage_ids})
    ex2 = Executor(g2, {op.func_name: op.fn for op in ex.ops}, module=ex.module)
    ex2.load_params(d.constants)
    x = np.random.default_rng(2).standard_normal((1, 3, 8, 8)).astype(np.float32)
    ex.run(x=x)
    ex2.run(x=x)
    assert all(np.array_equal(a, b) for a, b in zip(_outputs(ex), _outputs(ex2)))
    assert plan.activation_nbytes <= sum(s.vm_nbytes for s in d.storages if s.vm_nbytes)


@pytest.mark.subprocess
def test_diagnose_worker_takes_the_vm_door(built):
    """diagnose's fresh processes open the executable through the same door."""
    from minigraph.diagnose.spec import WorkerSpec
    spec = WorkerSpec(str(built["libs"]["onnx"]), None, None, "a", None, 0, 1, 0.0, 1, 0.0,
                      0, False)
    proc = subprocess.run([sys.executable, "-m", "minigraph.diagnose.worker", spec.to_json()],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ops = json.loads(proc.stdout)["ops"]
    assert len(ops) == len(open_vm(locate(built["libs"]["onnx"])).executor.ops) == 10


def test_minigraph_model_vm_so_profiles_op_for_op_like_graph_json(tiny_cnn):
    """minigraph's own model.vm.so + model.params through the relax-vm door: the same kernels
    (build.json maps the VM's names to graph.json's) and shapes, op for op, as model.so +
    graph.json, and the same outputs."""
    from minigraph.profile.profiler import measure
    from minigraph.protocols.relax_vm import graph_symbol, load_vm_names
    from minigraph.results.profile import Settings
    doors = (locate(tiny_cnn / "model.so", tiny_cnn / "graph.json"),
             locate(tiny_cnn / "model.vm.so", None, tiny_cnn / "model.params"))
    profiles, outputs = [], []
    for files in doors:
        ex = open_executor(files)
        ex.set_input(**random_inputs(ex, {}, 0))
        profiles.append(measure(ex, Settings(modes=("one-pass",), warmups=1)))
        ex.run()
        outputs.append(_outputs(ex))
    g, v = profiles
    names = load_vm_names(tiny_cnn / "model.vm.so")
    assert [o["func_name"] for o in g.ops] == [graph_symbol(o["func_name"], names)
                                               for o in v.ops]
    assert [o["shapes"] for o in g.ops] == [o["shapes"] for o in v.ops]
    assert all(len(s) == 1 for s in v.samples["one-pass"]) and len(v.ops) == 5
    assert max_rel_diff(outputs[1], outputs[0]) <= 1e-5


def test_corrupt_bytecode_is_only_ever_an_input_error(built):
    """Every truncation and 400 random byte mutations of a real executable's bytes: the
    reader and the derivation either succeed or raise InputError, nothing else."""
    from minigraph.artifacts.library import classify
    from minigraph.artifacts.library_bin import VM_KIND
    from minigraph.runtime.relax_vm.bytecode import parse_executable
    from minigraph.runtime.relax_vm.derive import derive
    blob = classify(built["libs"]["nested"]).library_bin.find(VM_KIND)
    rng = np.random.default_rng(7)
    cases = [blob[:n] for n in range(0, len(blob), 7)]
    for _ in range(400):
        b = bytearray(blob)
        for pos in rng.integers(0, len(b), rng.integers(1, 4)):
            b[pos] = int(rng.integers(0, 256))
        cases.append(bytes(b))
    for case in cases:
        try:
            derive(parse_executable(case), {})
        except InputError:
            pass
