"""The executor on hand-written graphs with small kernels compiled in the test."""
from __future__ import annotations

import json

import numpy as np
import pytest

from minigraph.artifacts.graph_json import parse_graph
from minigraph.errors import InputError, KernelError
from minigraph.runtime.debug import DebugExecutor
from minigraph.runtime.executor import Executor

N = 8


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    """add(a, b) -> c; split(a) -> (a + 1, a * 2); flat_neg(x[N*2]) -> y[N*2]; a library."""
    import tvm
    from tvm import te
    a, b = te.placeholder((N,), name="a"), te.placeholder((N,), name="b")
    add = te.compute((N,), lambda i: a[i] + b[i], name="c")
    inc = te.compute((N,), lambda i: a[i] + 1.0, name="inc")
    dbl = te.compute((N,), lambda i: a[i] * 2.0, name="dbl")
    x = te.placeholder((2 * N,), name="x")
    neg = te.compute((2 * N,), lambda i: -x[i], name="neg")
    funcs = {"k_add": te.create_prim_func([a, b, add]),
             "k_split": te.create_prim_func([a, inc, dbl]),
             "k_flat_neg": te.create_prim_func([x, neg])}
    mod = tvm.IRModule({k: f.with_attr("global_symbol", k) for k, f in funcs.items()})
    path = tmp_path_factory.mktemp("kern") / "k.so"
    tvm.compile(mod, target=tvm.target.Target({"kind": "llvm"})).export_library(str(path))
    from minigraph.runtime.kernels import load_library, resolve
    lib = load_library(path)
    return resolve(lib, funcs, path)


from graphdoc import graph_json, null, op


def test_shared_storage_multi_output_nop_and_heads(kernels):
    # x, y inputs; s = split(x) -> (x+1, 2x); z = add(s.0, s.1); n = __nop(z); w = add(z, y)
    nodes = [null("x"), null("y"), op("split", "k_split", [[0, 0, 0]], 2),
             op("add1", "k_add", [[2, 0, 0], [2, 1, 0]]), op("nop", "__nop", [[3, 0, 0]]),
             op("add2", "k_add", [[4, 0, 0], [1, 0, 0]])]
    # nodes: x0 y1 split2 add1=3 nop4 add2=5
    shapes = [[N]] * 7
    # entries: x0 y1 s.0=2 s.1=3 z=4 n=5 w=6; z reuses nothing live; w reuses s.0's storage
    g = parse_graph(graph_json(nodes, [[4, 0, 0], [2, 1, 0], [5, 0, 0]], shapes,
                               [0, 1, 2, 3, 4, 4, 2], row_ptr=[0, 1, 2, 4, 5, 6, 7]))
    ex = Executor(g, kernels)
    x, y = np.arange(N, dtype="float32"), np.full(N, 10, "float32")
    ex.run(x=x, y=y)
    assert ex.get_num_outputs() == 3
    np.testing.assert_array_equal(ex.get_output(0).numpy(), 3 * x + 1)
    np.testing.assert_array_equal(ex.get_output(1).numpy(), 2 * x)
    np.testing.assert_array_equal(ex.get_output(2).numpy(), 3 * x + 11)
    assert len(ex.pools) == 5  # storage ids 0..4, shared as graph.json says


def test_flatten_data_and_copy(kernels):
    nodes = [null("x"), op("neg", "k_flat_neg", [[0, 0]], flatten="1"),
             op("cp", "__copy", [[1, 0]])]
    g = parse_graph(graph_json(nodes, [[2, 0]], [[2, N]] * 3, [0, 1, 2]))
    ex = Executor(g, kernels)
    x = np.arange(2 * N, dtype="float32").reshape(2, N)
    ex.run(x=x)
    np.testing.assert_array_equal(ex.get_output(0).numpy(), -x)
    assert ex.ops[0].args[0].shape == (2 * N,)  # the kernel saw 1-D views


def test_relay_era_format_runs(kernels):
    """`attr` instead of `attrs`, 2-int entries, no node_row_ptr, metadata, device_index."""
    nodes = [null("a"), null("b"), op("add", "k_add", [[0, 0], [1, 0]])]
    nodes[2]["attr"] = nodes[2].pop("attrs")
    doc = json.loads(graph_json(nodes, [[2, 0]], [[N]] * 3, [0, 1, 2]))
    doc["attrs"]["device_index"] = ["list_int", [1, 1, 1]]
    doc["metadata"] = {"signature": "legacy"}
    ex = Executor(parse_graph(json.dumps(doc)), kernels)
    ex.set_input("a", np.ones(N, "float32"))
    ex.set_input(b=np.ones(N, "float32"))
    ex.run()
    np.testing.assert_array_equal(ex.get_output(0).numpy(), np.full(N, 2, "float32"))
    np.testing.assert_array_equal(ex.get_input("a").numpy(), np.ones(N, "float32"))


def test_errors_name_what_is_wrong(kernels):
    nodes = [null("a"), null("b"), op("add", "k_add", [[0, 0], [1, 0]])]
    g = parse_graph(graph_json(nodes, [[2, 0]], [[N]] * 3, [0, 1, 2]))
    ex = Executor(g, kernels)
    with pytest.raises(InputError, match="expected float32\\[8\\]"):
        ex.set_input("a", np.ones(3, "float32"))
    with pytest.raises(InputError, match="no input named 'zz'"):
        ex.set_input("zz", np.ones(N, "float32"))
    with pytest.raises(InputError, match="out of range"):
        ex.get_output(5)
    with pytest.raises(KeyError):
        Executor(parse_graph(graph_json([null("a"), op("q", "k_missing", [[0, 0]])],
                                        [[1, 0]], [[N]] * 2, [0, 1])), kernels)


def test_only_the_debug_executor_writes_its_op_table(kernels, monkeypatch):
    """The plain executor records nothing for a crash report; the debug executor writes its
    op table when made (measure/inflight.py), as a parent reads it after a crash."""
    from minigraph.runtime import debug
    written = []
    monkeypatch.setattr(debug.FLIGHT, "ops", lambda describe: written.append(describe()))
    nodes = [null("a"), null("b"), op("add", "k_add", [[0, 0], [1, 0]])]
    g = parse_graph(graph_json(nodes, [[2, 0]], [[N]] * 3, [0, 1, 2]))
    Executor(g, kernels)
    assert written == [] and not hasattr(Executor, "run_op")
    DebugExecutor(g, kernels)
    assert written == [["op 0 (node 2 'add', kernel 'k_add')"]]


def test_missing_kernel_lists_closest(tiny_cnn):
    from minigraph.runtime.kernels import load_library, resolve
    lib = load_library(tiny_cnn / "model.so")
    with pytest.raises(KernelError, match="closest: tvmgen_default_fused_mean"):
        resolve(lib, ["tvmgen_default_fused_meen"], tiny_cnn / "model.so")


def test_not_a_library(tmp_path):
    from minigraph.runtime.kernels import load_library
    bad = tmp_path / "model.so"
    bad.write_text("not elf")
    with pytest.raises(InputError, match="not a shared library"):
        load_library(bad)


def test_benchmark_and_params_round_trip(tiny_cnn):
    ex = DebugExecutor.from_files(tiny_cnn / "model.so", tiny_cnn / "graph.json")
    ex.set_input("data", np.ones(ex.graph.shapes[0], "float32"))
    ex.run()
    first = ex.get_output(0).numpy().copy()
    ex.load_params((tiny_cnn / "model.params").read_bytes())  # bytes work as well as paths
    ex.run()
    np.testing.assert_array_equal(ex.get_output(0).numpy(), first)
    res = ex.benchmark(number=2, repeat=3)
    assert len(res) == 3 and all(r > 0 for r in res)


def test_run_cli_prints_outputs_and_saves(tiny_cnn, tmp_path):
    from minigraph.cli import main
    np.save(tmp_path / "x.npy", np.zeros((1, 32, 32, 3), "float32"))
    rc = main(["run", str(tiny_cnn / "model.so"), str(tiny_cnn / "graph.json"),
               "--input", f"data={tmp_path / 'x.npy'}", "--out", str(tmp_path / "o")])
    assert rc == 0
    assert np.load(tmp_path / "o" / "output_0.npy").shape == (1, 10)


def test_explain_on_relay_era_graph(capsys):
    import pathlib

    from minigraph.cli import main
    path = pathlib.Path(__file__).parents[1] / "data" / "relay_era_graph.json"
    assert main(["explain", str(path)]) == 0
    out = capsys.readouterr().out
    assert "planned activation memory" in out and "fused_nn_conv2d" in out


# -- GraphModule parity: benchmark, get_num_inputs ------------------------------------------
TVM_BENCHMARK = [("device", None), ("func_name", "run"), ("repeat", 5), ("number", 5),
                 ("min_repeat_ms", None), ("limit_zero_time_iterations", 100),
                 ("end_to_end", False), ("cooldown_interval_ms", 0), ("repeats_to_cooldown", 1)]


def test_benchmark_has_graph_module_signature_and_returns_tvm_result(tiny_cnn):
    import inspect

    import tvm
    from tvm.runtime.module import BenchmarkResult
    params = list(inspect.signature(DebugExecutor.benchmark).parameters.values())[1:]
    got = [(p.name, p.default) for p in params if p.kind is not p.VAR_KEYWORD]
    # TVM's device is positional without a default; minigraph's defaults to its own CPU
    assert [n for n, _ in got] == [n for n, _ in TVM_BENCHMARK]
    assert got[1:] == TVM_BENCHMARK[1:] and params[-1].kind is params[-1].VAR_KEYWORD
    ex = DebugExecutor.from_files(tiny_cnn / "model.so", tiny_cnn / "graph.json")
    res = ex.benchmark(tvm.cpu(), number=10, repeat=3)
    assert isinstance(res, BenchmarkResult) and len(res.results) == 3
    assert res.min <= res.median <= res.max and res.mean > 0 and res.std >= 0
    assert "Execution time summary" in str(res)
    assert len(ex.benchmark(tvm.cpu(0), "run", 2, 1)) == 2  # positional, as TVM's
    with pytest.raises(InputError, match="CPU"):
        ex.benchmark(tvm.cuda(0))
    with pytest.raises(InputError, match="func_name"):
        ex.benchmark(tvm.cpu(), func_name="get_output")


def test_benchmark_end_to_end_copies_inputs_in_and_kwargs_set_inputs(tiny_cnn):
    import tvm
    ex = DebugExecutor.from_files(tiny_cnn / "model.so", tiny_cnn / "graph.json")
    x = np.full(ex.graph.shapes[0], 0.5, "float32")
    ex.benchmark(tvm.cpu(), repeat=1, number=1, end_to_end=True, data=x)
    np.testing.assert_array_equal(ex.get_input("data").numpy(), x)
    ex.benchmark(tvm.cpu(), repeat=1, number=1, data=x * 2)  # set once, as GraphModule
    np.testing.assert_array_equal(ex.get_input("data").numpy(), x * 2)
    with pytest.raises(InputError, match="no input named"):
        ex.benchmark(tvm.cpu(), end_to_end=True, nope=x)


def test_time_evaluator_loop_grows_number_keeps_it_and_stops_on_zero_times():
    from minigraph.measure.clock import time_repeats
    calls, sleeps = [0], []

    def step() -> None:
        calls[0] += 1
    clock = lambda: calls[0] * 1000  # noqa: E731 - 1 us per call of step
    # 1 call reads 1 us < 10 us: number -> max(10 / 0.001 ... + 1, 1.618) = 11, kept for repeat 2
    out = time_repeats(step, 1, 2, 0.01, clock)
    assert out == [1e-6, 1e-6] and calls[0] == 1 + 11 + 11
    stuck = time_repeats(lambda: None, 1, 2, 1, lambda: 0, limit_zero_time_iterations=3)
    assert stuck == [0.0, 0.0]  # a 0 ns clock gives up after 3 tries per repeat, not never
    time_repeats(step, 1, 4, 0, clock, cooldown_interval_ms=5, repeats_to_cooldown=2,
                 sleep=sleeps.append)
    assert sleeps == [0.005, 0.005]  # after repeats 0 and 2, as WrapTimeEvaluator


def test_input_queries_match_graph_module(tiny_cnn):
    ex = DebugExecutor.from_files(tiny_cnn / "model.so", tiny_cnn / "graph.json")
    assert ex.get_num_inputs() == len(ex.graph.arg_nodes) > 1  # params included, as TVM
    assert ex.get_input_index("data") == 0 and ex.get_input_index("nope") == -1
    assert ex.get_input_name(0) == "data"
    shapes, dtypes = ex.get_input_info()
    assert shapes["data"] == ex.graph.shapes[0] and dtypes["data"] == "float32"


def test_python_profile_api_returns_a_profile(tiny_cnn):
    from minigraph.api import Executor as ApiExecutor, render
    ex = ApiExecutor.from_files(tiny_cnn / "model.so", tiny_cnn / "graph.json")
    prof = ex.profile(modes=("one-pass", "e2e"), warmups=1, e2e_repeat=3)
    assert set(prof.samples) == {"one-pass"} and len(prof.e2e_ns) == 3
    assert prof.env and prof.threads["tvm_num_threads"] >= 1
    assert "one-pass" in render(prof)
    with pytest.raises(InputError, match="unknown setting 'warm_up'.*mode 'fast'"):
        ex.profile(modes=("fast",), warm_up=3)


def test_the_api_opens_every_door_as_its_own_executor(tiny_cnn):
    """``minigraph.api.open_executor`` gives the class with ``profile``, whatever the door."""
    from minigraph.api import Executor as ApiExecutor, locate, open_executor
    ex = open_executor(locate(tiny_cnn))
    assert type(ex) is ApiExecutor and ex.get_num_outputs() == 1
    assert ex.profile(modes=("one-pass",), warmups=0).ops[0]["index"] == 0
