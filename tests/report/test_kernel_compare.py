"""compare by kernel identity: two TVM reports of one ResNet-50-shaped model (the Relay VM
profiler's and the debug executor's, printed by tests/helpers/tvm_printer.py from TVM's rules) with a
planted disagreement; the verdicts; the fallbacks when there is no common hash."""
from __future__ import annotations

import json
import random

import pytest
from tvm_fixtures import kernels, reports
from tvm_printer import benchmark_repr

from minigraph.analysis.comparison import Comparison
from minigraph.cli import main
from minigraph.readers.documents import parse_profile
from minigraph.report.kernel_report import render, to_dict
from minigraph.results.profile import Profile

SLOW = {5: 18.0, 8: 40.0, 12: 70.0}


def _pair(slow: dict[int, float], **kw) -> tuple[Profile, Profile]:
    vm, ge = reports(slow, **kw)
    return parse_profile(vm, "vm.txt"), parse_profile(ge, "debug.txt")


def test_a_few_kernels_carry_the_gap_matched_by_hash_across_renumbered_names():
    a, b = _pair(SLOW)
    cmp = Comparison(a, b, paths=("vm.txt", "debug.txt"))
    c = cmp.kernels
    m = c.matching
    ks = kernels()
    assert m.level == "hash+shapes"
    assert len(m.pairs) == len(ks) and not m.only_b
    assert {k.names[0] for k in m.only_a} == {"VM::AllocStorage", "VM::AllocTensor"}
    # both builds number their fused functions; in this pair the orders differ, so names that
    # exist in both denote other kernels: every such name is found
    assert len(m.same_name_other_kernel) >= 8
    assert all(ka.hash != kb.hash for _, ka, kb in m.same_name_other_kernel)
    assert {p.a.hash for p in c.top} == {ks[i]["hash"] for i in SLOW}
    assert sorted(round(p.ratio) for p in c.top) == [18, 40, 70]
    assert c.verdict.kind == "concentrated"
    assert "3 kernels are 18-70x slower in B" in c.verdict.text
    text = render(cmp)
    assert "Matched by Hash + Argument Shapes" in text and "names denote a different kernel" in text
    assert "executor instructions only in A" in text and "Sum vs Total" in text
    assert "can and cannot tell" in text and "nm -S" in text and "minigraph diagnose" in text
    assert "Kernel calls: A 53, B 53: the same number" in text


@pytest.mark.parametrize("slow, kind, phrase", [
    ({}, "agree", "A and B agree"),
    ({i: 2.0 for i in range(len(kernels()))}, "uniform", "uniformly 2.00x slower"),
    ({i: random.Random(i).uniform(0.4, 3.0) for i in range(len(kernels()))}, "spread",
     "spread over many kernels"),
    ({i: 80.0 if i == 5 else 2.0 for i in range(len(kernels()))}, "uniform",
     "not a few kernels; on top of that, 1 kernel 80x slower in B"),
])
def test_verdicts(slow, kind, phrase):
    c = Comparison(*_pair(slow)).kernels
    assert c.verdict.kind == kind and phrase in c.verdict.text, c.verdict.text


def _without(profile: Profile, field: str) -> Profile:
    ops = [dict(op, **{field: "" if field == "hash" else []}) for op in profile.ops]
    return Profile(ops, profile.settings, profile.samples, source=profile.source)


def test_without_hashes_it_matches_by_name_and_shapes_and_says_so():
    a, b = _pair(SLOW)
    cmp = Comparison(_without(a, "hash"), _without(b, "hash"))
    assert cmp.kernels.matching.level == "name+shapes"
    assert "no Hash on either side" in cmp.kernels.matching.why
    assert "matched by name" in render(cmp)
    c = Comparison(_without(_without(a, "hash"), "shapes"), _without(b, "hash")).kernels
    assert c.matching.level == "name"


def test_reports_whose_hashes_differ_fall_back_to_name_stems_and_shapes():
    """Builds that hashed differently (another TVM, other passes): the renumbered names still
    match once the module prefix and the build's _N numbering are set aside."""
    a, b = _pair(SLOW)
    rehashed = Profile([dict(op, hash=op["hash"][::-1]) for op in b.ops], b.settings,
                       b.samples, source=b.source)
    c = Comparison(a, rehashed).kernels
    assert c.matching.level == "name+shapes" and "hashed differently" in c.matching.why
    assert len(c.matching.pairs) == len(kernels())
    assert sorted(round(p.ratio) for p in c.top) == [18, 40, 70]


def test_a_tvm_report_against_a_minigraph_profile_does_not_match_unlike_hashes():
    a, b = _pair({})
    mine = Profile([dict(op, hash=f"{i:016x}") for i, op in enumerate(b.ops)],
                   {"modes": ["warm"]}, {"warm": [[s[0] * 3, s[0] * 3] for s in
                                                  b.samples["one-pass"]]})
    c = Comparison(b, mine, mode="warm").kernels
    assert c.matching.level == "name+shapes" and "different hashes" in c.matching.why
    assert c.a.mode == "one-pass" and c.b.mode == "warm"
    assert c.verdict.kind == "uniform" and "3.00x slower" in c.verdict.text


def test_cli_compare_json_holds_every_pair_and_the_summary(tmp_path, capsys):
    vm, ge = reports(SLOW)
    (tmp_path / "vm.txt").write_bytes(b"log line before the table\n" + vm)
    (tmp_path / "debug.txt").write_bytes(ge)
    out = tmp_path / "cmp.json"
    assert main(["compare", str(tmp_path / "vm.txt"), str(tmp_path / "debug.txt"),
                 "--json", str(out)]) == 0
    assert "Verdict: most kernels agree within 10%" in capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert doc["format"] == "minigraph-kernel-compare/1" and doc["matched_by"] == "hash+shapes"
    assert len(doc["pairs"]) == len(kernels())
    pair = max(doc["pairs"], key=lambda p: p["ratio"])
    assert set(pair) >= {"hash", "shapes", "name_a", "name_b", "a_us", "b_us", "ratio",
                         "matched_by"}
    assert pair["ratio"] == pytest.approx(70.0, rel=0.01)
    assert pair["b_us"] == pytest.approx(pair["a_us"] * 70, rel=0.01)
    assert doc["summary"]["verdict"] == "concentrated" and len(doc["summary"]["top"]) == 3
    assert doc["same_name_different_kernel"]


def test_cli_compare_json_path_is_checked_first_and_a_benchmark_compares_totals(tmp_path, capsys):
    vm, ge = reports({})
    (tmp_path / "debug.txt").write_bytes(ge)
    (tmp_path / "bench.txt").write_text(benchmark_repr([0.004, 0.0041, 0.0042]))
    assert main(["compare", str(tmp_path / "debug.txt"), str(tmp_path / "bench.txt"),
                 "--json", str(tmp_path / "no" / "x.json")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["compare", str(tmp_path / "debug.txt"), str(tmp_path / "bench.txt")]) == 0
    assert "only whole-run times compare" in capsys.readouterr().out


def test_two_minigraph_profiles_keep_the_significance_table_unless_asked(tmp_path, capsys):
    a, b = _pair({})
    same = a.to_dict()  # the same build measured again: names match, the noise test applies
    same["samples_ns"] = {m: [[x * 1.01 for x in row] for row in rows]
                          for m, rows in same["samples_ns"].items()}
    for name, doc in (("a.json", a.to_dict()), ("again.json", same), ("b.json", b.to_dict())):
        doc.pop("source")
        (tmp_path / name).write_text(json.dumps(doc))
    args = ["compare", str(tmp_path / "a.json"), str(tmp_path / "again.json"), "--mode",
            "one-pass"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "Kernel comparison" not in out and " ops differ" in out
    assert main(args + ["--by-kernel"]) == 0
    assert "Kernel comparison" in capsys.readouterr().out
    assert to_dict(Comparison(a, b))["matched_by"] == "hash+shapes"
    # another build of the same model numbers its fused functions differently: names do not
    # match, kernels do, so compare says so and matches them by identity instead of failing
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--mode",
                 "one-pass"]) == 0
    out = capsys.readouterr().out
    assert "op names differ between A and B" in out and "Kernel comparison" in out


def test_a_tvm_table_against_a_real_minigraph_profile_of_the_same_model(tiny_cnn, tmp_path,
                                                                        capsys):
    """A real profile of tiny-cnn against a debug-executor table of the same graph (printed by
    TVM's rules from the graph's kernels, one of them 30x slower): TVM's hash and minigraph's
    are different hashes, so the kernels are matched by name and shapes, and the slow one is
    named."""
    from tvm_printer import Cnt, Dur, as_table, profiled_run

    from minigraph.analysis.matching import shapes_text
    from minigraph.profile.profiler import measure
    from minigraph.results.files import to_json
    from minigraph.results.profile import Settings
    from minigraph.runtime.debug import DebugExecutor
    ex = DebugExecutor.from_files(tiny_cnn / "model.so", tiny_cnn / "graph.json")
    prof = measure(ex, Settings(modes=("one-pass", "warm"), warm_repeat=3, warm_budget_ms=20))
    (tmp_path / "mine.json").write_text(to_json(prof))
    slow = prof.ops[0]
    calls = [{"Name": op["func_name"], "Hash": f"{i:016x}", "Argument Shapes": shapes_text(op),
              "Duration (us)": Dur(prof.median("warm", op["index"]) / 1e3 *
                                   (30.0 if op is slow else 1.0))}
             for i, op in enumerate(prof.ops)]
    total = sum(c["Duration (us)"].us for c in calls) * 1.02
    (tmp_path / "debug.txt").write_bytes(as_table(*profiled_run(calls, total), {
        "Number of threads": Cnt(1), "Executor": "Graph"}))
    assert main(["compare", str(tmp_path / "debug.txt"), str(tmp_path / "mine.json"),
                 "--json", str(tmp_path / "c.json")]) == 0
    out = capsys.readouterr().out
    assert "different hashes, so they cannot match" in out
    doc = json.loads((tmp_path / "c.json").read_text())
    assert len(doc["pairs"]) == len(prof.ops) and doc["matched_by"] == "name+shapes"
    assert doc["a"]["mode"] == "one-pass" and doc["b"]["mode"] == "warm"
    top = doc["summary"]["top"][0]
    assert top["name_b"] == slow["func_name"] and top["ratio"] == pytest.approx(1 / 30, rel=0.05)
    assert f"Kernel calls: A {len(prof.ops)}, B {len(prof.ops)}: the same number" in out


def test_a_tvm_report_against_a_profile_names_the_protocol_as_the_cause():
    """The issue's "five candidates" case: B uniformly 3x. The documents say that A is a
    TVM report (the debug executor's one-pass protocol) and B minigraph's warm samples."""
    a, b = _pair({})
    mine = Profile([dict(op, hash=f"{i:016x}") for i, op in enumerate(b.ops)],
                   {"modes": ["warm"]}, {"warm": [[s[0] * 3, s[0] * 3] for s in
                                                  b.samples["one-pass"]]})
    cmp = Comparison(b, mine, mode="warm")
    found = cmp.kernels.findings
    assert found[0].cls == "protocol", found
    assert "TVM report: " in found[0].evidence and "minigraph warm (B)" in found[0].evidence
    assert "Cause: protocol" in render(cmp)
    doc = to_dict(cmp)
    assert doc["cause"] == "protocol" and doc["findings"][0]["confirm"]


def test_the_same_protocol_and_settings_leave_the_machine_or_kernels():
    """Two reports of one protocol differing in three kernels only: no made difference; the
    cause is "a few kernels"."""
    _, ge = reports({})
    _, ge2 = reports(SLOW)  # the debug executor's table, three kernels slowed
    a, b = parse_profile(ge, "a.txt"), parse_profile(ge2, "b.txt")
    found = Comparison(a, b).kernels.findings
    assert found[0].cls == "a few kernels", found
    assert "3 of" in found[0].evidence
