"""Output people can read and trust: units that scale, tables that fit the terminal (and
--wide that shows everything), spreads and sample counts per mode, the e2e row, the CLI's help."""
from __future__ import annotations

import argparse
import json
import os

import cli_runner
import numpy as np
import pytest

from minigraph.analysis.roofline import roofline
from minigraph.cli import main, parser
from minigraph.diagnose.attribution import attribution_of
from minigraph.report.diagnosis import render as render_diagnosis
from minigraph.report.explain import explain
from minigraph.report.table import render, summary, table
from minigraph.report.units import dur, format_table, middle, wrap
from minigraph.results.diagnosis import Diagnosis
from minigraph.results.profile import Profile, Settings
from minigraph.results.rungs import KEYS

LONG = "tvmgen_default_fused_conv2d_add_add_relu_nhwc_with_a_long_tail"


def _widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


def _profile(n_ops: int = 56, **kw) -> Profile:
    """A ResNet-50-sized profile with long names and every mode (synthetic samples)."""
    rng = np.random.default_rng(0)
    ops = [{"index": i, "name": f"{LONG}_{i}", "func_name": f"{LONG}_{i}", "kind": "conv2d",
            "hash": f"{i:016x}", "shapes": [["float32", [1, 56, 56, 64]]] * 4,
            "layouts": {"data_layout": "NHWC"}} for i in range(n_ops)]
    level = rng.uniform(400, 3e6, n_ops)
    samples = {m: [list(x * rng.uniform(0.98, 1.05, n)) for x in level]
               for m, n in (("first-run", 1), ("one-pass", 1), ("warm", 21), ("in-run", 10),
                            ("cold", 5))}
    samples["first-run"][0] = [level[0] * 40]
    return Profile(ops, Settings().to_dict(), samples,
                   counters=[{"minflt": 3, "nvcsw": 0, "threads_created": int(i == 0)}
                             for i in range(n_ops)],
                   e2e_ns=list(rng.uniform(9e7, 1e8, 20)), dispatch_ns=[20_000.0] * 7, **kw)


def test_durations_scale_their_unit():
    assert dur(400) == "400 ns" and dur(0.4) == "0.4 ns" and dur(5_470) == "5.47 us"
    assert dur(27_100) == "27.1 us" and dur(271_400) == "271 us" and dur(2_250_000) == "2.25 ms"
    assert dur(999_600) == "1.00 ms" and dur(-2_770_000) == "-2.77 ms" and dur(None) == "-"
    assert all("0.0 us" not in dur(x) for x in (40, 400, 900))


def test_names_are_cut_in_the_middle():
    cut = middle("tvmgen_default_fused_conv2d1_add1_add2_relu1", 24)
    assert len(cut) == 24 and cut.startswith("tvmgen") and cut.endswith("add2_relu1")
    assert middle("short", 24) == "short"


def test_tables_fit_by_cutting_names_then_dropping_optional_columns():
    head, body = ["Name", "t", "Kind"], [[LONG, "1.00 us", "conv2d"]]
    fitted = format_table(head, body, {1}, width=40, shrink=(0,), min_shrink=20, optional=(2,))
    assert _widest(fitted) <= 40 and "Kind" in fitted
    narrow = format_table(head, body, {1}, width=30, shrink=(0,), min_shrink=20, optional=(2,))
    assert _widest(narrow) <= 30 and "Kind" not in narrow
    assert _widest(wrap("  " + "word " * 60, 50)) <= 50


@pytest.mark.parametrize("width", [120, 100, 80])
def test_profile_report_fits_the_width(width):
    prof = _profile(provenance={"created": "2025-01-31T14:05:09+01:00", "command": [
        "minigraph", "profile", "/a/very/long/path/" * 8], "files": {}})
    text = render(prof, width=width)
    assert _widest(text) <= width
    assert "Argument Shapes" not in text and "0000000000000001" not in text


def test_wide_shows_everything_uncut():
    prof = _profile()
    text = render(prof, width=80, wide=True)
    head = text.splitlines()[1]
    assert {"Argument Shapes", "Hash", "warm n", "warm +-", "cold n", "Count"} <= set(
        h.strip() for h in head.split("  ") if h.strip())
    assert f"{LONG}_55" in text and "0000000000000037" in text


def test_the_table_says_how_sure_it_is():
    prof = _profile()
    text = render(prof, width=120)
    assert "first-run*" in text and "one-pass*" in text  # single samples marked
    assert "one sample per op, no spread" in text
    assert "warm       n=21" in text and "in-run     n=10" in text and "cold       n=5" in text
    assert "Percent: share of the sum of warm medians" in text
    assert "(--order time: by warm median)" in text
    assert "Rows by warm median, largest first" in table(prof, "time", width=120)
    e2e = text[text.index("End to end"):].splitlines()[1]
    assert e2e.split() == ["n", "median", "mean", "p90", "std", "min", "max"]


def test_e2e_only_profile_prints_the_e2e_row():
    prof = Profile([], {"modes": ["e2e"]}, {}, e2e_ns=[1e6 + i * 1e3 for i in range(20)],
                   dispatch_ns=[1_000.0])
    text = render(prof, width=120)
    assert "End to end" in text and "p90" in text and "1.01 ms" in text


def test_summary_never_flags_a_first_run_faster_than_warm():
    ops = [{"index": i, "name": f"op{i}", "func_name": f"f{i}", "kind": "conv2d", "hash": "",
            "shapes": [], "layouts": {}} for i in range(3)]
    prof = Profile(ops, {"modes": []}, {"first-run": [[800.0], [5_000.0], [1_500.0]],
                                        "warm": [[1_000.0], [40.0], [400.0]]},
                   counters=[{"threads_created": 1}, {}, {}])
    text = summary(prof)
    # created the pool but read faster than warm: named as the creator, not as inflated
    assert "op 0 op0: first run 800 ns was not above its warm time 1.00 us" in text
    assert "op 1 op1: first run 5.00 us is 125.0x its warm time 40 ns" in text
    assert "op 2" not in text  # 3.75x, but 1.1 us: below what a Python call costs
    assert "0.0 us" not in text


def _diagnosis() -> Diagnosis:
    rng = np.random.default_rng(1)
    ops = [{"index": i, "name": f"{LONG}_{i}", "func_name": "k", "kind": "conv2d"}
           for i in range(12)]
    runs = {}
    for depth, rung in enumerate(KEYS):
        runs[rung] = [[{"ns": float(1e5 * (len(KEYS) - depth) + rng.normal(0, 1e3)),
                        "minflt": 10, "majflt": 0, "nvcsw": 1, "nivcsw": 0, "migrations": 0,
                        "threads_created": 0, "asleep_before": 0, "cpu": c % 64}
                       for _ in ops] for c in range(5)]
    return Diagnosis(ops, {"processes": 5, "rungs": list(KEYS), "threads": 2}, runs)


def test_diagnosis_tables_fit_the_width():
    diag = _diagnosis()
    att = attribution_of(diag)
    assert _widest(render_diagnosis(diag, att, width=120)) <= 120
    full = render_diagnosis(diag, att)
    assert _widest(full) > 120 and f"{LONG}_0" in full


def test_explain_wraps_long_lines(tmp_path):
    """An op with 300 inputs: its node line and the arg-nodes list are wrapped / shortened
    to the width; without a width everything stays on its line."""
    from minigraph.artifacts.graph_json import load_graph
    n = 300
    nodes = [{"op": "null", "name": f"weight_of_a_rather_long_layer_name_{i}", "inputs": []}
             for i in range(n)]
    nodes.append({"op": "tvm_op", "name": "concat", "inputs": [[i, 0, 0] for i in range(n)],
                  "attrs": {"func_name": "concat", "num_inputs": str(n), "num_outputs": "1",
                            "flatten_data": "0"}})
    doc = {"nodes": nodes, "arg_nodes": list(range(n)), "heads": [[n, 0, 0]],
           "node_row_ptr": list(range(n + 2)),
           "attrs": {"shape": ["list_shape", [[1, 4]] * n + [[1, 4 * n]]],
                     "storage_id": ["list_int", list(range(n + 1))],
                     "dltype": ["list_str", ["float32"] * (n + 1)]}}
    path = tmp_path / "graph.json"
    path.write_text(json.dumps(doc))
    graph = load_graph(path)
    assert _widest(explain(graph, 120)) <= 120 and "more (--wide lists all)" in explain(graph, 120)
    assert _widest(explain(graph)) > 2000


def test_every_option_has_help():
    missing = []
    for action in parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                missing += [f"{name} {a.dest}" for a in sub._actions
                            if not a.help or a.help == argparse.SUPPRESS]
        elif not action.help:
            missing.append(action.dest)
    assert not missing, missing


@pytest.mark.subprocess
def test_cli_profile_fits_120_columns_and_records_provenance(tiny_cnn, tmp_path):
    """`COLUMNS=120 minigraph profile DIR`: no line over 120; the JSON carries provenance."""
    import hashlib
    out = tmp_path / "p.json"
    proc = cli_runner.run(["profile", tiny_cnn, "--repeat", "3", "--budget-ms", "20",
                           "--inrun-passes", "3", "--flush", "tvm", "--quiet", "--json", out],
                          timeout=300, env=dict(os.environ, COLUMNS="120"))
    assert proc.returncode == 0, proc.stderr
    assert _widest(proc.stdout) <= 120, proc.stdout
    prov = json.loads(out.read_text())["provenance"]
    assert prov["command"][:3] == ["minigraph", "profile", str(tiny_cnn)]
    from datetime import datetime
    assert datetime.fromisoformat(prov["created"]).tzinfo is not None
    for role, name in (("lib", "model.so"), ("graph", "graph.json"), ("params", "model.params")):
        data = (tiny_cnn / name).read_bytes()
        assert prov["files"][role]["sha256"] == hashlib.sha256(data).hexdigest()
        assert prov["files"][role]["nbytes"] == len(data)
    import minigraph
    assert prov["minigraph_version"] == minigraph.__version__
    wide = cli_runner.run(["show", out, "--wide"], timeout=120,
                          env=dict(os.environ, COLUMNS="80"))
    assert "Argument Shapes" in wide.stdout and "tvmgen_default_fused_conv2d_add_relu" in \
        wide.stdout and _widest(wide.stdout) > 120
    assert "sha256" in wide.stdout and "measured:" in wide.stdout


def test_show_fits_the_terminal(tmp_path, capsys, monkeypatch):
    from minigraph.results.files import to_json
    path = tmp_path / "p.json"
    path.write_text(to_json(_profile()))
    monkeypatch.setenv("COLUMNS", "90")
    assert main(["show", str(path)]) == 0
    assert _widest(capsys.readouterr().out) <= 90


def test_saved_formats_are_documented():
    """Every field the writers emit appears in docs/ (a new field needs its line there)."""
    from pathlib import Path

    from minigraph.diagnose.spec import DiagnoseSettings
    from minigraph.measure.provenance import capture
    docs = Path(__file__).resolve().parents[2] / "docs"
    prof_doc, diag_doc = ((docs / n).read_text() for n in ("profile-schema.md",
                                                            "diagnosis-schema.md"))
    prof = _profile(4, provenance=capture({"lib": __file__}, ["minigraph"]))
    d = prof.to_dict()
    fields = list(d) + list(d["settings"]) + list(d["ops"][0]) + list(d["provenance"]) + \
        list(d["provenance"]["files"]["lib"]) + ["wall_s", "others_cpus", "steal_cpus"]
    assert not [f for f in fields if f"`{f}`" not in prof_doc and f"`files.<role>.{f}`"
                not in prof_doc]
    diag = _diagnosis().to_dict()
    record = diag["runs"]["a"][0][0]
    fields = list(diag) + ["attribution"] + list(DiagnoseSettings().to_dict()) + list(record)
    missing = [f for f in fields if f"`{f}`" not in diag_doc and f"`{f}`," not in diag_doc]
    assert not missing, missing


def test_files_saved_before_provenance_still_load_and_render():
    from minigraph.results.profile import Profile as P
    doc = _profile(3).to_dict()
    del doc["provenance"]
    again = P.from_dict(json.loads(json.dumps(doc)))
    assert again.provenance == {} and "  measured: " not in render(again, width=120)
    doc = json.loads(json.dumps(doc))
    doc["provenance"] = {"command": "not a list"}
    from minigraph.errors import InputError
    with pytest.raises(InputError, match="provenance.command"):
        P.from_dict(doc)


def test_the_brief_report_fits_one_screen_with_everything_standing_out():
    """56 ops, every one's first run inflated, a busy machine: one 50 x 120 screen; the
    largest first runs named, the rest grouped; the full report keeps every op."""
    prof = _profile(contention={"wall_s": 5.0, "others_cpus": 0.9, "steal_cpus": 0.0,
                                "cpus": 2.0})
    for i, row in enumerate(prof.samples["first-run"]):
        row[0] = prof.median("warm", i) * 10 + 1e4
    text = render(prof, width=120, brief=True)
    lines = text.splitlines()
    assert len(lines) <= 50 and _widest(text) <= 120, text
    assert "(44 more ops: --wide)" in text
    assert "53 more ops' first runs were >= 3x their warm time" in text
    assert "op 0 " in text  # the first op is always a row, whatever its weight
    full = render(prof, wide=True, brief=True)  # --wide: the full report, uncut
    assert all(f"{LONG}_{i} " in full for i in range(56)) and "Configuration:" in full


def test_a_busy_machines_brief_report_keeps_its_screen_the_table_gives_rows():
    """Everything a busy ResNet-50 run has to say at once (the busy warning, several inflated
    first runs, many ops far below their neighbours' rate) on a narrow terminal: still one
    50-line screen; the slow ops' "cannot tell the cause" said once, and the table gives up
    its lightest rows (never op 0) for the summary."""
    prof = _profile(contention={"wall_s": 10.0, "others_cpus": 0.9, "steal_cpus": 0.0,
                                "cpus": 2.0},
                    env={"peak": {"gflops": 1000.0, "gflops_per_thread": 500.0, "threads": 2}})
    for i, op in enumerate(prof.ops):
        # every fifth op does its arithmetic at a tenth of its neighbours' rate
        op["flops"] = prof.median("in-run", i) * (50.0 if i % 5 == 3 else 500.0)
    for i in (2, 9, 30):
        prof.samples["first-run"][i] = [prof.median("warm", i) * 5]
    slow = [r.index for r in roofline(prof).ops if r.flagged]
    assert len(slow) > 3
    wide = render(prof, width=120, brief=True)
    assert "(44 more ops: --wide)" in wide  # room for the whole table at 120 columns
    text = render(prof, width=80, brief=True)
    assert len(text.splitlines()) <= 50 and _widest(text) <= 80, text
    assert "WARNING: busy machine" in text and "\n0 " in text and "op 9 " in text
    assert text.count("cannot tell the cause") == 1
    assert f"ops {', '.join(map(str, slow))}:" in " ".join(text.split())
    assert "(44 more ops: --wide)" not in text  # the table shrank for the rest
    full = render(prof, width=120)
    assert all(f"  op {i} " in full for i in slow)  # --wide and the full report: one line each


def test_the_pools_creator_is_named_when_its_first_run_read_below_its_warm_time():
    """On a busy machine the warm median can sit above the one first-run sample; which op
    created the pool is a count, so it is still said (diagnose says the same op)."""
    prof = _profile(8)
    prof.samples["first-run"][0] = [prof.median("warm", 0) * 0.8]
    text = summary(prof)
    assert "op 0 " in text and "was not above its warm time" in text
    assert "thread-pool creation falls in it" in text
