"""The executor on hand-written graphs with small kernels compiled in the test."""
from __future__ import annotations

import json

import numpy as np
import pytest

from minigraph.errors import InputError, KernelError
from minigraph.runtime.executor import Executor
from minigraph.runtime.graph_json import parse_graph

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
    ex = Executor.from_files(tiny_cnn / "model.so", tiny_cnn / "graph.json")
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
    path = pathlib.Path(__file__).parent / "data" / "relay_era_graph.json"
    assert main(["explain", str(path)]) == 0
    out = capsys.readouterr().out
    assert "planned activation memory" in out and "fused_nn_conv2d" in out
