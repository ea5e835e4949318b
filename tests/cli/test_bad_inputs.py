"""Broken inputs, broken the way users break them, through the real CLI: every one must end in
one ``error: ...`` line naming what and where, exit code 2 (bad input) or 1 (failure while
running), and never a traceback or a signal. The valid base is the session's tiny-cnn build."""
from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import cli_runner
import numpy as np
import pytest

from minigraph.artifacts.params import load_params, save_params
from minigraph.cli import main

LIBM = Path("/lib/x86_64-linux-gnu/libm.so.6")
RUN = ["run", "{d}/model.so", "{d}/graph.json"]


@dataclass(frozen=True)
class Case:
    name: str
    breaks: Callable[[Path], None]   # edits the copied model directory
    argv: list[str]
    code: int
    where: tuple[str, ...]           # substrings the message must contain
    extra: dict = field(default_factory=dict)


def _graph(d: Path) -> dict:
    return json.loads((d / "graph.json").read_text())


def _edit_graph(fn: Callable[[dict], None]) -> Callable[[Path], None]:
    def edit(d: Path) -> None:
        doc = _graph(d)
        fn(doc)
        (d / "graph.json").write_text(json.dumps(doc))
    return edit


def _edit_params(fn: Callable[[dict], dict]) -> Callable[[Path], None]:
    def edit(d: Path) -> None:
        (d / "model.params").write_bytes(save_params(fn(load_params(
            (d / "model.params").read_bytes()))))
    return edit


def _write(name: str, data: bytes | str) -> Callable[[Path], None]:
    def edit(d: Path) -> None:
        p = d / name
        if p.is_dir():
            shutil.rmtree(p)
        else:
            p.unlink(missing_ok=True)
        p.write_bytes(data if isinstance(data, bytes) else data.encode())
    return edit


def _truncate(name: str, keep: float) -> Callable[[Path], None]:
    def edit(d: Path) -> None:
        data = (d / name).read_bytes()
        (d / name).write_bytes(data[:int(len(data) * keep)])
    return edit


def _make_dir(name: str) -> Callable[[Path], None]:
    def edit(d: Path) -> None:
        (d / name).unlink(missing_ok=True)
        (d / name).mkdir()
    return edit


def _copy(src: str, dst: str) -> Callable[[Path], None]:
    return lambda d: shutil.copy(d / src if not src.startswith("/") else src, d / dst)


def _set(path: tuple, value) -> Callable[[dict], None]:
    def fn(doc: dict) -> None:
        cur = doc
        for key in path[:-1]:
            cur = cur[key]
        cur[path[-1]] = value
    return fn


def _huge_unused_input(doc: dict) -> None:
    """An extra input no kernel reads, 64 TiB big: only the memory check can stop it."""
    doc["nodes"].append({"op": "null", "name": "unused", "inputs": []})
    doc["arg_nodes"].append(len(doc["nodes"]) - 1)
    doc["node_row_ptr"].append(doc["node_row_ptr"][-1] + 1)
    doc["attrs"]["shape"][1].append([1 << 20, 1 << 20, 16])
    doc["attrs"]["dltype"][1].append("float32")
    doc["attrs"]["storage_id"][1].append(max(doc["attrs"]["storage_id"][1]) + 1)


def _foreign_cpu(d: Path) -> None:
    """build.json says model.so targets a CPU with x86 extensions this machine lacks."""
    from minigraph.artifacts.buildinfo import check_cpu, read_build
    from minigraph.errors import InputError
    doc = json.loads((d / "build.json").read_text())
    for mcpu in ("sapphirerapids", "graniterapids", "znver4", "skylake-avx512", "haswell"):
        doc["target"] = json.dumps({"kind": "llvm", "mcpu": mcpu})
        (d / "build.json").write_text(json.dumps(doc))
        try:
            check_cpu(d / S, read_build(d / S))
        except InputError:
            return
    pytest.skip("this CPU implements every candidate target's extensions")


def _profile_doc() -> dict:
    return {"format": "minigraph-profile/1", "settings": {}, "samples_ns": {"warm": [[1.0]]},
            "ops": [{"index": 0, "name": "a", "func_name": "f", "kind": "k", "hash": "",
                     "shapes": [["float32", [1]]], "layouts": {}}]}


def _other_params(p: dict) -> dict:
    return {"fc1.weight": np.zeros((4, 4), "float32"), "fc1.bias": np.zeros(4, "float32")}


G, P, S = "graph.json", "model.params", "model.so"
CASES = [
    Case("truncated graph.json", _truncate(G, 0.5), RUN, 2, (G, "not valid JSON")),
    Case("empty graph.json", _write(G, ""), RUN, 2, (G, "not valid JSON")),
    Case("binary graph.json", _write(G, bytes(range(256)) * 4), RUN, 2, (G, "not valid JSON")),
    Case("graph.json is a directory", _make_dir(G), RUN, 2, (G,)),
    Case("graph.json missing", lambda d: (d / G).unlink(), RUN, 2, (G,)),
    Case("hand-edited input shape", _edit_graph(_set(("attrs", "shape", 1, 0), [1, 32, 32, 4])),
         RUN, 2, (G, "attrs.shape[0]", "expects argument #0 'data'")),
    Case("hand-edited activation dtype", _edit_graph(_set(("attrs", "dltype", 1, 7), "int32")),
         RUN, 2, (G, "node 7", "attrs.dltype[7]")),
    Case("negative shape", _edit_graph(_set(("attrs", "shape", 1, 7), [1, -16, 16, 16])),
         RUN, 2, (G, "attrs.shape[7]", "non-negative")),
    Case("absurd shape", _edit_graph(_set(("attrs", "shape", 1, 7), [2**40] * 4)),
         ["explain", "{d}/graph.json"], 2, (G, "attrs.shape[7]", "2**62")),
    Case("plan larger than memory", _edit_graph(_huge_unused_input), RUN, 2,
         ("storage plan needs", "--force")),
    Case("unknown dtype", _edit_graph(_set(("attrs", "dltype", 1, 7), "float8")), RUN, 2,
         (G, "attrs.dltype[7]", "float8")),
    Case("forward reference", _edit_graph(_set(("nodes", 8, "inputs"), [[9, 0, 0]])), RUN, 2,
         (G, "node 8", "inputs[0]", "earlier nodes")),
    Case("cycle", _edit_graph(_set(("nodes", 8, "inputs"), [[8, 0, 0]])),
         ["explain", "{d}/graph.json"], 2, (G, "node 8", "inputs[0]")),
    Case("head out of range", _edit_graph(_set(("heads",), [[99, 0, 0]])), RUN, 2,
         (G, "heads[0]", "99")),
    Case("storage id out of range", _edit_graph(_set(("attrs", "storage_id", 1, 7), 2**31 - 1)),
         RUN, 2, (G, "attrs.storage_id[7]")),
    # storage plans that alias (issue 49 item 6): each ran with exit 0 and a wrong sum
    Case("output over a weight", _edit_graph(_set(("attrs", "storage_id", 1, 7), 1)), RUN, 2,
         (G, "attrs.storage_id[7]", "entry 1", "'conv0_weight'", "its own input")),
    Case("output over its own input", _edit_graph(_set(("attrs", "storage_id", 1, 8), 7)), RUN,
         2, (G, "attrs.storage_id[8]", "entry 7", "its own input")),
    Case("output over the model input", _edit_graph(_set(("attrs", "storage_id", 1, 9), 0)),
         RUN, 2, (G, "attrs.storage_id[9]", "'data'", "an input or param")),
    Case("explain of an aliasing plan", _edit_graph(_set(("attrs", "storage_id", 1, 7), 1)),
         ["explain", "{d}/graph.json"], 2, (G, "attrs.storage_id[7]", "storage_id 1")),
    Case("renamed func_name", _edit_graph(_set(("nodes", 8, "attrs", "func_name"),
                                               "tvmgen_default_fused_max_pool3d")),
         RUN, 2, ("tvmgen_default_fused_max_pool3d", "closest: tvmgen_default_fused_max_pool2d")),
    Case("kernels swapped", _edit_graph(_set(("nodes", 8, "attrs", "func_name"),
                                             "tvmgen_default_fused_mean")),
         RUN, 2, (G, "node 8", "kernel 'tvmgen_default_fused_mean' expects")),
    Case("params from another model", _edit_params(_other_params), RUN, 2,
         (P, "fc1.weight", "not in graph.json")),
    Case("params truncated", _truncate(P, 0.6), RUN, 2, (P, "truncated")),
    Case("params missing one", _edit_params(lambda p: {k: v for k, v in p.items()
                                                       if k != "conv0_bias"}),
         RUN, 2, (P, "conv0_bias")),
    Case("params file absent", lambda d: (d / P).unlink(), RUN, 2, ("no params file",)),
    Case("params extra", _edit_params(lambda p: {**p, "extra": np.zeros(3, "float32")}),
         RUN, 2, (P, "extra not in graph.json")),
    Case("params wrong shape", _edit_params(lambda p: {**p, "fc_bias": np.zeros(11, "float32")}),
         RUN, 2, (P, "fc_bias", "float32[10]")),
    Case("params wrong dtype", _edit_params(lambda p: {**p, "fc_bias": np.zeros(10, "float64")}),
         RUN, 2, (P, "fc_bias", "float64")),
    Case("params is a text file", _write(P, "weights go here\n"), RUN, 2, (P, "bad magic")),
    Case("params is a directory", _make_dir(P), RUN, 2, (P,)),
    Case("text file named model.so", _write(S, "#!/bin/sh\necho hi\n"), RUN, 2,
         (S, "no ELF header")),
    Case("empty model.so", _write(S, b""), RUN, 2, (S, "no ELF header")),
    Case("libm as model.so", _copy(str(LIBM), S), RUN, 2, (S, "__tvm_ffi_")),
    Case("truncated model.so", _truncate(S, 0.5), RUN, 2, (S, "truncated")),
    Case("model.vm.so as model.so", _copy("model.vm.so", S), RUN, 2, (S, "Relax VM")),
    Case("model.so built for another CPU", _foreign_cpu, RUN, 2, (S, "SIGILL", "build.json")),
    Case("model.so is a directory", _make_dir(S), RUN, 2, (S, "directory")),
    Case("profile from another tool", _write("p.json", json.dumps({"traceEvents": []})),
         ["show", "{d}/p.json"], 2, ("p.json", "not a minigraph profile")),
    Case("empty profile", _write("p.json", ""), ["show", "{d}/p.json"], 2, ("p.json", "not JSON")),
    Case("binary file as profile", _write("p.json", bytes(range(256))), ["show", "{d}/p.json"],
         2, ("p.json",)),
    Case("profile is a directory", _make_dir("p.json"), ["compare", "{d}/p.json", "{d}/p.json"],
         2, ("p.json", "directory")),
    Case("corrupt profile field", _write("p.json", json.dumps(
        {**_profile_doc(), "samples_ns": {"warm": [["fast"]]}})), ["show", "{d}/p.json"], 2,
        ("p.json", "samples_ns.warm[0]")),
    Case("corrupt msgpack", _write("p.msgpack", b"\x85\xa6format\xc1" + bytes(50)),
         ["show", "{d}/p.msgpack"], 2, ("p.msgpack", "msgpack")),
    Case("msgpack with a huge array", _write("p.msgpack", b"\x81\xa3ops\xdd\xff\xff\xff\xff"),
         ["show", "{d}/p.msgpack"], 2, ("p.msgpack", "max_array_len")),
    Case("profile missing", lambda d: None, ["compare", "{d}/a.json", "{d}/b.json"], 2,
         ("a.json",)),
    Case("--input not a .npy", _write("x.npy", "1,2,3"), RUN + ["--input", "data={d}/x.npy"],
         2, ("x.npy", "not a .npy")),
    Case("--input truncated .npy", lambda d: (np.save(d / "x.npy", np.zeros((1, 32, 32, 3), "f4")),
                                              _truncate("x.npy", 0.5)(d)),
         RUN + ["--input", "data={d}/x.npy"], 2, ("x.npy", "truncated")),
    Case("--input holds objects", lambda d: np.save(d / "x.npy", np.array([{}]), allow_pickle=True),
         RUN + ["--input", "data={d}/x.npy"], 2, ("x.npy", "never unpickles")),
    Case("--input wrong shape", lambda d: np.save(d / "x.npy", np.zeros(3, "float32")),
         RUN + ["--input", "data={d}/x.npy"], 2, ("'data'", "float32[1, 32, 32, 3]")),
    Case("--out is a file", lambda d: None, RUN + ["--out", "{d}/graph.json"], 2,
         ("--out", "not a directory")),
    Case("--seed negative", lambda d: None, RUN + ["--seed", "-1"], 2, ("--seed",)),
]


@pytest.fixture
def model_dir(tiny_cnn: Path, tmp_path: Path) -> Path:
    for name in (S, G, P, "build.json", "model.vm.so"):
        shutil.copy(tiny_cnn / name, tmp_path / name)
    return tmp_path


def _argv(case: Case, d: Path) -> list[str]:
    return [a.replace("{d}", str(d)) for a in case.argv]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_in_process(case: Case, model_dir: Path, capsys) -> None:
    case.breaks(model_dir)
    try:
        code = main(_argv(case, model_dir))
    except SystemExit as exit_:  # argparse usage errors
        code = exit_.code
    err = capsys.readouterr().err
    assert code == case.code, err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and "internal error" not in err, err
    for where in case.where:
        assert where in err, err


SUBPROCESS = ["libm as model.so", "truncated model.so", "truncated graph.json",
              "plan larger than memory", "corrupt msgpack", "text file named model.so"]


@pytest.mark.subprocess
@pytest.mark.parametrize("name", SUBPROCESS)
def test_bad_input_in_a_fresh_process_is_no_signal(name: str, model_dir: Path) -> None:
    case = next(c for c in CASES if c.name == name)
    case.breaks(model_dir)
    proc = cli_runner.run(_argv(case, model_dir), timeout=120)
    assert proc.returncode == case.code, proc.stderr  # > 0: an exit, not a signal (< 0)
    assert proc.stderr.startswith("error: ") and "Traceback" not in proc.stderr, proc.stderr


@pytest.mark.subprocess
@pytest.mark.parametrize("mcpu, names", [
    ("diamondrapids", ("amx-fp16", "amx-tile")),   # AMX: the old check named these ones only
    ("tigerlake", ("avx512vp2intersect", "movdiri")),  # the old check saw nothing missing here
])
def test_a_build_for_a_cpu_with_features_this_one_lacks_is_refused_before_loading(
        mcpu: str, names: tuple[str, ...], tmp_path: Path, capsys) -> None:
    """Issue 49 item 5: every LLVM target feature the build enabled is recorded in build.json
    and compared with this CPU's before dlopen; `run` refuses by name, and nothing crashes."""
    from tvm.target import Target

    from minigraph.artifacts.cpu_features import missing_features, target_features
    if not set(names) <= set(missing_features(target_features(Target({"kind": "llvm",
                                                                      "mcpu": mcpu})))):
        pytest.skip(f"this CPU has {', '.join(names)}")
    out = tmp_path / mcpu
    assert main(["build", "tiny-cnn", "-o", str(out), "--target", mcpu, "--no-vm"]) == 0
    capsys.readouterr()
    assert set(names) <= set(json.loads((out / "build.json").read_text())["cpu_features"])
    proc = cli_runner.run(["run", out], timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"error: {out / S} was built for CPU '{mcpu}' (build.json)")
    assert all(n in proc.stderr for n in names) and "SIGILL" in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1 and "killed by signal" not in proc.stderr


def test_explain_says_the_storage_plan_was_checked(model_dir: Path, capsys) -> None:
    assert main(["explain", str(model_dir / G)]) == 0
    assert "storage plan checked: 9 storage ids (2 reused, 0 __nop views); no entries live " \
        "at the same time share one" in capsys.readouterr().out.replace("\n      ", " ")


def test_debug_shows_the_traceback(model_dir: Path) -> None:
    _truncate(G, 0.5)(model_dir)
    from minigraph.errors import GraphError
    with pytest.raises(GraphError):
        main(["--debug", "explain", str(model_dir / G)])


def _loaded(d: Path, edit: Callable[[dict], None] | None = None):
    from minigraph.artifacts.graph_json import parse_graph
    from minigraph.runtime.bind import kernel_names
    from minigraph.runtime.kernels import load_library, resolve
    doc = _graph(d)
    if edit is not None:
        edit(doc)
    graph = parse_graph(json.dumps(doc))
    module = load_library(d / S)
    return graph, resolve(module, kernel_names(graph), d / S), module


def test_plan_checked_before_allocating_unless_forced(model_dir: Path, monkeypatch) -> None:
    from minigraph.errors import InputError
    from minigraph.runtime import executor
    from minigraph.runtime.debug import DebugExecutor
    graph, kernels, module = _loaded(model_dir)
    monkeypatch.setattr(executor, "available_nbytes", lambda: 1024)  # a machine with 1 KiB
    with pytest.raises(InputError, match="needs 0.0 MiB but only 0.0 MiB.*--force"):
        executor.Executor(graph, kernels, module=module)
    with pytest.raises(InputError, match="--force"):
        DebugExecutor.from_files(model_dir / S, model_dir / G)
    ex = DebugExecutor.from_files(model_dir / S, model_dir / G, force=True)
    ex.run_checked()


def test_kernel_failure_is_attributed_to_its_op(model_dir: Path) -> None:
    """Past the signature pre-check (a direct DebugExecutor), TVM's own argument check still
    fires and run_checked names the op, node and kernel."""
    from minigraph.errors import KernelError
    from minigraph.runtime.debug import DebugExecutor
    graph, kernels, module = _loaded(model_dir, _set(("attrs", "shape", 1, 0), [1, 32, 32, 4]))
    ex = DebugExecutor(graph, kernels, module=module)
    with pytest.raises(KernelError, match=r"op 0 \(node 7 .*Mismatched .* expected"):
        ex.run_checked()
