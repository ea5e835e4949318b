"""Every saved format has a committed document (tests/data/golden/, written by tools/golden.py
from real runs), read by the format registry: a writer and its reader cannot drift apart
together, because this file does not move with them."""
from __future__ import annotations

import json
import os
import statistics
from pathlib import Path

import pytest

from minigraph.cli import main
from minigraph.errors import InputError
from minigraph.readers.documents import load_document
from minigraph.report.units import dur
from minigraph.results import formats
from minigraph.results.diagnosis import Diagnosis
from minigraph.results.fleet import Fleet
from minigraph.results.profile import Profile

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden"
KIND = {"profile.json": "profile", "profile-relax-vm.json": "profile",
        "profile-subnormal.json": "profile",
        "tvm-report.json": "profile", "diagnosis.json": "diagnosis", "fleet.json": "fleet",
        "comparison.json": "comparison", "kernel-comparison.json": "kernel-comparison",
        "protocols.json": "protocols", "sweep.json": "sweep",
        "llm-profile.json": "llm-profile", "llm-comparison.json": "llm-comparison",
        "llm-diagnosis.json": "llm-diagnosis"}


def test_every_format_of_the_registry_has_a_golden_document():
    names = {json.loads((GOLDEN / f).read_text())["format"] for f in KIND}
    assert names == {f.name for f in formats.FORMATS}
    assert sorted(p.name for p in GOLDEN.glob("*.json")) == sorted(KIND)


@pytest.mark.parametrize("name", sorted(KIND))
def test_each_golden_document_is_read_as_its_kind(name):
    doc = load_document(GOLDEN / name)
    assert doc.kind == KIND[name]


@pytest.mark.parametrize("name,cls", [("profile.json", Profile),
                                      ("profile-relax-vm.json", Profile),
                                      ("profile-subnormal.json", Profile),
                                      ("tvm-report.json", Profile),
                                      ("fleet.json", Fleet)])
def test_reading_and_writing_again_gives_the_document_back(name, cls):
    """to_dict(from_dict(doc)) gives back every field of doc as it was: a field renamed or
    dropped by either side fails (fields are only added within a version, so a newer writer
    may write more)."""
    doc = json.loads((GOLDEN / name).read_text())
    again = cls.from_dict(doc).to_dict()
    assert {k: again.get(k) for k in doc} == doc


def test_a_diagnosis_round_trips_its_records():
    """The saved diagnosis carries its attribution as written; the records round-trip."""
    doc = json.loads((GOLDEN / "diagnosis.json").read_text())
    again = Diagnosis.from_dict(doc).to_dict()
    assert {k: again.get(k) for k in doc if k != "attribution"} == \
        {k: v for k, v in doc.items() if k != "attribution"}


def test_the_golden_documents_hold_what_their_features_write():
    relax = load_document(GOLDEN / "profile-relax-vm.json").value
    assert [r.key for r in relax.vm_results()] == ["relax_vm_e2e", "relax_vm_instrument"]
    assert load_document(GOLDEN / "tvm-report.json").value.imported
    diag = load_document(GOLDEN / "diagnosis.json").value
    assert diag.protocols and set(diag.runs) == {"a", "b", "f"} and diag.data_report()
    data = load_document(GOLDEN / "profile-subnormal.json").value.data_report()
    assert data.op(0) and data.cost(0) and data.op(0).reads("weight")[0].counts.subnormal


def _op_rows(doc: dict) -> list[tuple[str, ...]]:
    """A profile's rows as `show` must print them: each op's name (without the prefix every
    name shares) and the median of its samples in the document's first mode."""
    names = [op["name"] for op in doc["ops"]]
    shared = os.path.commonprefix(names) if len(names) > 1 else ""
    shared = shared[:shared.rfind("_") + 1] if shared.endswith("_") or "_" in shared else ""
    mode = next(iter(doc["samples_ns"]))
    return [(n[len(shared):] if n.startswith(shared) and n != shared else n,
             dur(statistics.median(doc["samples_ns"][mode][i])))
            for i, n in enumerate(names)]


def _expected(name: str, doc: dict) -> list[tuple[str, ...]]:
    """What `show` must print of each golden document, read from the document itself: per
    line, strings that must stand together on one line of the output."""
    if name == "tvm-report.json":  # one row per TVM table row: its calls summed, counted
        rows: dict[str, list[float]] = {}
        for i, op in enumerate(doc["ops"]):
            rows.setdefault(op["name"], []).append(doc["samples_ns"]["one-pass"][i][0])
        return [(n, dur(sum(v)), f" {len(v)} ") for n, v in rows.items()]
    if doc["format"].startswith("minigraph-profile/"):
        return _op_rows(doc)
    if name == "comparison.json":
        return [(i["name"], dur(i["a"]["median_ns"]), dur(i["b"]["median_ns"]), i["verdict"])
                for i in doc["items"]]
    if name == "kernel-comparison.json":
        return [(p["name_a"], f"{p['ratio']:.2f}x") for p in doc["pairs"]] + \
            [(f"Verdict ({doc['summary']['verdict']})",)]
    if name == "fleet.json":
        return [(d["address"], *(["error"] if d["error"] else ["ok"])) for d in doc["devices"]]
    if name == "protocols.json":
        return [(r["key"], f"{r['total_ns'] / 1e6:.3f}") for r in doc["results"]]
    if name == "sweep.json":
        return [tuple(f"{doc['symbol']}={v}" for v in doc["values"])] + \
            [(g["name"], f"{doc['symbol']}^{g['exponent']:.2f}") for g in doc["growth"]]
    if name == "diagnosis.json":
        return [(f"n={len(rows)}",) for rows in doc["runs"].values()] + \
            [("first-run excess (a - f)",)]
    if name == "llm-profile.json":  # per phase, its 12 slowest ops with their in-run medians
        out = []
        for ph in doc["phases"]:
            ops = sorted(ph["ops"], key=lambda o: -statistics.median(o["inrun_ns"]))[:12]
            out += [(o["name"][:56], dur(statistics.median(o["inrun_ns"]))) for o in ops]
        return out + [(f"{doc['phases'][0]['name']} ({doc['prompt_len']} tokens at depth 0)",)]
    if name == "llm-comparison.json":
        return [(f"verdict: {doc['verdict']}",)] + \
            [(p["name"], f"{p['ratio']:.2f}x") for p in doc["phases"]]
    if name == "llm-diagnosis.json":  # a row per rung with its median time to first token
        return [(r, dur(statistics.median(x["prefill"]["ns"] for x in doc["records"]
                                          if x["rung"] == r))) for r in doc["rungs"]] + \
            [("verdict:",)]
    raise AssertionError(f"no expectation for {name}")


@pytest.mark.parametrize("name", sorted(KIND))
def test_show_prints_what_each_golden_document_holds(name, capsys):
    """`show` prints each document's own contents: every op, kernel, device, protocol or rung
    of the file, with its figures as the file holds them (not merely some output)."""
    doc = json.loads((GOLDEN / name).read_text())
    assert main(["show", str(GOLDEN / name), "--wide"]) == 0
    lines = capsys.readouterr().out.splitlines()
    for want in _expected(name, doc):
        assert any(all(w in line for w in want) for line in lines), \
            f"{name}: no line holds {want}"


def test_a_newer_version_of_a_format_is_named_as_such(tmp_path):
    doc = json.loads((GOLDEN / "profile.json").read_text())
    doc["format"] = "minigraph-profile/2"
    (tmp_path / "p.json").write_text(json.dumps(doc))
    with pytest.raises(Exception, match="minigraph-profile/1"):
        load_document(tmp_path / "p.json")


@pytest.mark.parametrize("name", ["profile.json", "diagnosis.json"])
def test_results_draw_themselves_in_a_notebook_as_the_html_page(name):
    """Jupyter shows ``_repr_html_``: a whole page (the one ``--html`` writes) in an isolated
    frame, holding the document's own ops and, for a diagnosis, its rungs' process counts."""
    import html
    import re

    import minigraph.api  # noqa: F401  (the notebook's import: registers the renderers)
    doc = json.loads((GOLDEN / name).read_text())
    frame = load_document(GOLDEN / name).value._repr_html_()
    assert frame.startswith("<iframe") and 'sandbox="allow-scripts"' in frame
    page = html.unescape(re.search(r'srcdoc="([^"]*)"', frame)[1])
    assert page.lstrip().lower().startswith("<!doctype html>") and page.rstrip().endswith(
        "</html>")
    assert all(html.escape(op["name"]) in page or op["name"] in page for op in doc["ops"])
    if name == "diagnosis.json":
        counts = {len(rows) for rows in doc["runs"].values()}
        assert f"{counts.pop()} fresh processes per rung, rungs {','.join(doc['runs'])}" in page


@pytest.mark.parametrize("bad", [-1.0, 1e300, "12", None, True])
def test_a_diagnosis_whose_steady_passes_are_not_times_is_refused(bad):
    """Every time of a process is divided by the speed its steady passes give: a negative,
    huge or non-numeric one would turn them all into nonsense, so it is refused on reading."""
    doc = json.loads((GOLDEN / "diagnosis.json").read_text())
    doc["steady"] = {r: [[[float(op["ns"])] for op in p] for p in rows]  # a valid one first
                     for r, rows in doc["runs"].items()}
    assert Diagnosis.from_dict(doc).speeds() is not None
    rung = next(iter(doc["steady"]))
    doc["steady"][rung][0][0] = [bad]
    with pytest.raises(InputError, match="steady"):
        Diagnosis.from_dict(doc)
    doc["steady"][rung][0][0] = []  # an op without a pass
    with pytest.raises(InputError, match="at least one pass"):
        Diagnosis.from_dict(doc)


@pytest.mark.parametrize("busy", [None, [1], "busy"])
def test_a_saved_comparison_whose_busy_warnings_are_not_strings_is_refused(tmp_path, busy,
                                                                           capsys):
    """``show`` of a comparison whose ``busy`` is not a list of strings: one error line, not a
    TypeError from the renderer (the fuzzer found ``"busy": null``)."""
    doc = json.loads((GOLDEN / "comparison.json").read_text())
    doc["busy"] = busy
    (tmp_path / "c.json").write_text(json.dumps(doc))
    with pytest.raises(InputError, match="busy"):
        load_document(tmp_path / "c.json")
    assert main(["show", str(tmp_path / "c.json")]) == 2
    assert capsys.readouterr().err.startswith("error: ")
