"""The data the kernels compute on: every arg node says where its value came from, weights
nobody gave are refused (or filled, and said so), subnormal/NaN/Inf values are counted per
tensor and named per op, and what reading subnormals costs is measured on flushed copies."""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
import tvm_printer
from tvm_fixtures import reports

from minigraph.analysis.comparison import Comparison
from minigraph.artifacts.model_files import locate
from minigraph.artifacts.params import load_params_file, save_params_file
from minigraph.cli import main
from minigraph.profile.session import profile_files
from minigraph.readers.documents import parse_profile
from minigraph.report.compare import data_explanations
from minigraph.report.data import data_section, headline
from minigraph.results.data import DataReport, OpValues
from minigraph.results.profile import Profile, Settings
from minigraph.runtime.doors import open_model
from minigraph.threadpool.config import ThreadRequest
from minigraph.values.check import check_values, count_values
from minigraph.values.cost import flushed, measure_costs
from minigraph.values.policy import MissingValuesError, prepare_values

FAST = Settings(modes=("e2e",), e2e_repeat=3, flush_nbytes=1 << 20)
SUBNORMAL = np.float32(1e-40)


def _copy(src: Path, dst: Path, params: bool = True, build_json: bool = True) -> Path:
    dst.mkdir()
    for name in ("model.so", "graph.json") + ("model.params",) * params + \
            ("build.json",) * build_json:
        shutil.copy(src / name, dst / name)
    return dst


def _with_params(d: Path, **changes) -> Path:
    p = load_params_file(d / "model.params")
    for name, value in changes.items():
        p[name] = np.broadcast_to(np.asarray(value, p[name].dtype), p[name].shape).copy()
    save_params_file(d / "model.params", p)
    return d


def test_count_values_counts_exactly():
    x = np.array([0, -0.0, 1e-40, -1e-39, 1.0, np.nan, np.inf, -np.inf, 1.2e-38], np.float32)
    c = count_values(x)
    assert (c.n, c.subnormal, c.nan, c.inf, c.zero) == (9, 2, 1, 2, 2)
    assert count_values(np.array([1e-310, 0, 1], np.float64)).subnormal == 1
    assert count_values(np.array([6e-8, 1], np.float16)).subnormal == 1  # float16 tiny: 6.1e-5
    assert count_values(np.arange(5, dtype=np.int32)).to_dict() == \
        {"n": 5, "subnormal": 0, "nan": 0, "inf": 0, "zero": 1}


def test_flushing_copies_and_leaves_the_original_alone():
    x = np.array([1e-40, 2.0, -1e-39, 0.0], np.float32)
    before = x.tobytes()
    y = flushed(x)
    assert y.tolist() == [0.0, 2.0, 0.0, 0.0] and x.tobytes() == before


def test_unset_weights_are_refused_with_one_line_naming_them(tiny_cnn, tmp_path, capsys):
    bare = _copy(tiny_cnn, tmp_path / "bare", params=False, build_json=False)
    assert main(["profile", str(bare), "--mode", "e2e"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "6 of 7 arg nodes have no value" in err
    assert "conv0_weight" in err and "--params" in err and "--fill" in err
    assert main(["run", str(bare)]) == 2 and "have no value" in capsys.readouterr().err
    assert main(["diagnose", str(bare), "--quick"]) == 2  # before any worker starts
    assert "have no value" in capsys.readouterr().err
    with_build = _copy(tiny_cnn, tmp_path / "build_json_only", params=False)
    model = open_model(locate(with_build), complete=False)
    with pytest.raises(MissingValuesError, match="no params file was given"):
        prepare_values(model)


def test_fill_is_done_and_recorded_in_the_json(tiny_cnn, tmp_path):
    bare = _copy(tiny_cnn, tmp_path / "bare", params=False, build_json=False)
    out = tmp_path / "p.json"
    assert main(["profile", str(bare), "--mode", "e2e", "--fill", "zeros", "--quiet",
                 "--json", str(out)]) == 0
    data = json.loads(out.read_text())["data"]
    assert data["fill"] == "zeros"
    kinds = {n: s["kind"] for n, s in data["sources"].items()}
    assert kinds.pop("data") == "generated" and set(kinds.values()) == {"filled"}
    assert data["values"]["conv0_weight"]["zero"] == data["values"]["conv0_weight"]["n"]


def test_every_arg_node_knows_where_its_value_came_from(tiny_cnn):
    model = open_model(locate(tiny_cnn))
    assert {s.kind for s in model.executor.sources.values()} == {"params", "unset"}
    inputs = prepare_values(model, {}, None, seed=3)
    assert inputs == {"data"}
    assert model.executor.sources["data"].detail == "standard normal, seed 3"
    assert model.executor.sources["conv0_weight"].detail == str(tiny_cnn / "model.params")


@pytest.fixture(scope="module")
def subnormal_model(tiny_cnn, tmp_path_factory) -> Path:
    """tiny-cnn whose first conv has subnormal weights and no bias: its outputs are
    subnormal too (products of subnormals and normal inputs), read by the next op."""
    d = _copy(tiny_cnn, tmp_path_factory.mktemp("sub") / "m")
    return _with_params(d, conv0_weight=SUBNORMAL, conv0_bias=0.0)


def test_subnormal_weights_are_flagged_and_their_cost_measured(subnormal_model):
    prof, model, failure = profile_files(locate(subnormal_model), FAST,
                                         ThreadRequest(threads=1))
    assert failure is None
    report = prof.data_report()
    op0 = report.op(0)
    weight = next(a for a in op0.reads("weight") if a.name == "conv0_weight")
    assert weight.counts.subnormal == weight.counts.n  # 100% of its weights
    cost = report.cost(0)
    assert cost is not None and len(cost.given_ns) == len(cost.flushed_ns) >= 7
    assert cost.ratio_lo <= cost.ratio <= cost.ratio_hi
    # the op reading op 0's subnormal activations is named as such, with its producer
    reader = report.op(1)
    assert any(a.role == "activation" and a.producer == 0 and a.counts.subnormal
               for a in reader.reads())
    # ops that read no subnormal values are not blamed
    blamed = {o.index for o in report.ops if any(a.counts.subnormal for a in o.reads())}
    assert blamed <= {0, 1, 2} and 4 not in blamed
    text = data_section(report)
    assert "op 0 tvmgen_default_fused_conv2d_add_relu" in text and "subnormal" in text
    assert "produced by op 0" in text
    # show of the saved file says the same
    again = parse_profile(json.dumps(prof.to_dict()).encode(), "saved")
    assert data_section(again.data_report()) == text and headline(again.data_report())


def test_measuring_the_cost_never_changes_the_executors_buffers(subnormal_model):
    model = open_model(locate(subnormal_model))
    inputs = prepare_values(model)
    ex = model.executor
    before = {n: ex.get_input(n).numpy().tobytes() for n in ex.input_names()}
    report, captured = check_values(ex, inputs, run=True)
    outputs = [ex.views[e].numpy().tobytes() for op in ex.ops for e in op.output_eids]
    measure_costs(ex, report, captured, time.perf_counter_ns)
    assert {n: ex.get_input(n).numpy().tobytes() for n in ex.input_names()} == before
    assert [ex.views[e].numpy().tobytes() for op in ex.ops for e in op.output_eids] == outputs
    assert captured[0][1].tobytes() == before["conv0_weight"]


def test_nan_and_inf_are_counted_and_named(tiny_cnn, tmp_path):
    d = _with_params(_copy(tiny_cnn, tmp_path / "nan"), fc_bias=np.nan)
    model = open_model(locate(d))
    report, _ = check_values(model.executor, prepare_values(model), run=True)
    assert report.values["fc_bias"].nan == report.values["fc_bias"].n
    last = report.op(len(model.executor.ops) - 1)
    assert any(a.role == "output" and a.counts.nan for a in last.args)
    assert "NaN" in data_section(report)


def _profile_with(ops: list[dict], warm: list[list[float]], data: dict | None) -> Profile:
    return Profile(ops=ops, settings={"modes": ["warm"]}, samples={"warm": warm},
                   data=data or {})


def test_compare_names_the_data_first_when_one_side_read_subnormals():
    ops = [{"index": i, "name": f"op{i}", "func_name": f"f{i}", "kind": "conv2d",
            "hash": f"h{i}", "shapes": [], "layouts": {}} for i in range(6)]
    rng = np.random.default_rng(0)
    a = [list(1e4 * (1 + i) * np.exp(rng.normal(0, 0.01, 15))) for i in range(6)]
    b = [list(np.array(row) * (60 if i == 0 else 1)) for i, row in enumerate(a)]
    arg = {"position": 1, "eid": 1, "name": "w0", "role": "weight", "producer": None,
           "n": 100, "subnormal": 100, "nan": 0, "inf": 0, "zero": 0}
    data = DataReport({}, {}, (OpValues(0, "op0", ()),)).to_dict()
    data["ops"][0]["args"] = [arg]
    pa, pb = _profile_with(ops, a, None), _profile_with(ops, b, data)
    lines = data_explanations(Comparison(pa, pb))
    assert lines and lines[0].startswith("the data: op0") and "in B it read subnormal" in lines[0]


def test_tvm_reports_with_a_hash_are_labelled_by_their_kernel_names():
    def table(prefix: str) -> bytes:
        calls = [{"Name": f"{prefix}fused_nn_conv2d_{i}", "Duration (us)": tvm_printer.Dur(10.0),
                  "Hash": f"{i:016x}", "Argument Shapes": "float32[1, 3]"} for i in range(3)]
        return tvm_printer.as_table(*tvm_printer.profiled_run(calls, 40.0))
    key = lambda prefix: parse_profile(table(prefix), "t").source["protocol"]["key"]  # noqa
    assert key("") == "vm_profiler"                # Relay VM profiler, TVM 0.8: no prefix
    assert key("vm_mod_") == "vm_profiler"         # Relay VM, TVM 0.9+
    assert key("tvmgen_default_") == "debug_executor.profile"
    assert key("mine_") == "unknown"               # the evidence does not decide


def test_a_few_kernels_tens_of_times_slower_lists_the_data_among_the_explanations():
    vm, debug = reports({1: 70.0, 5: 40.0, 4: 18.0})
    kc = Comparison(parse_profile(vm, "vm.txt"), parse_profile(debug, "debug.txt"),
                    paths=("vm.txt", "debug.txt")).kernels
    assert kc.verdict.kind == "concentrated" and "different data" in kc.verdict.text
