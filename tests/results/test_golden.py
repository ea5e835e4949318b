"""Every saved format has a committed document (tests/data/golden/, written by tools/golden.py
from real runs), read by the format registry: a writer and its reader cannot drift apart
together, because this file does not move with them."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from minigraph.cli import main
from minigraph.errors import InputError
from minigraph.readers.documents import load_document
from minigraph.results import formats
from minigraph.results.diagnosis import Diagnosis
from minigraph.results.fleet import Fleet
from minigraph.results.profile import Profile

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden"
KIND = {"profile.json": "profile", "profile-relax-vm.json": "profile",
        "profile-subnormal.json": "profile",
        "tvm-report.json": "profile", "diagnosis.json": "diagnosis", "fleet.json": "fleet",
        "comparison.json": "comparison", "kernel-comparison.json": "kernel-comparison",
        "protocols.json": "protocols", "sweep.json": "sweep"}


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


@pytest.mark.parametrize("name", sorted(KIND))
def test_show_renders_every_golden_document(name, capsys):
    assert main(["show", str(GOLDEN / name)]) == 0
    assert capsys.readouterr().out.strip()


def test_a_newer_version_of_a_format_is_named_as_such(tmp_path):
    doc = json.loads((GOLDEN / "profile.json").read_text())
    doc["format"] = "minigraph-profile/2"
    (tmp_path / "p.json").write_text(json.dumps(doc))
    with pytest.raises(Exception, match="minigraph-profile/1"):
        load_document(tmp_path / "p.json")


@pytest.mark.parametrize("name", ["profile.json", "diagnosis.json"])
def test_results_draw_themselves_in_a_notebook_as_the_html_page(name):
    """Jupyter shows ``_repr_html_``: the page ``--html`` writes, in an isolated frame."""
    import html
    import re

    import minigraph.api  # noqa: F401  (the notebook's import: registers the renderers)
    from minigraph.diagnose.attribution import attribution_of
    from minigraph.report.html import diagnose_page, profile_page
    value = load_document(GOLDEN / name).value
    frame = value._repr_html_()
    assert frame.startswith("<iframe") and 'sandbox="allow-scripts"' in frame
    page = html.unescape(re.search(r'srcdoc="([^"]*)"', frame)[1])
    expected = profile_page.render(value) if isinstance(value, Profile) else \
        diagnose_page.render(value, attribution_of(value))
    assert page == expected


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
