"""No command writes over a build it reads, or over files it did not make, unasked (issue #49,
items 3 and 13): ``import out/model.vm.so -o out`` once replaced the build's real weights with
a 32-byte blob (exit 0), importing into another model's build did the same, ``run --out``
replaced the user's output_0.npy silently, and ``build -o`` listed the user's own files among
what it wrote. Each refusal is one line naming the file and the fix (--force, another -o)."""
from __future__ import annotations

import hashlib
import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from minigraph.cli import main


def _digests(d: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(d.iterdir()) if p.is_file()}


def _staging_left(root: Path) -> list[Path]:
    return list(root.rglob(".minigraph-staging-*"))


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    return err


@pytest.fixture
def work(tiny_cnn: Path, tmp_path: Path, monkeypatch) -> Path:
    """Two builds of tiny-cnn: ``t1`` (whose model.vm.so is imported) and ``t2`` (another
    model's build, as far as an import of t1's executable is concerned)."""
    shutil.copytree(tiny_cnn, tmp_path / "t1")
    shutil.copytree(tiny_cnn, tmp_path / "t2")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("force", [[], ["--force"]])
def test_import_into_the_executables_own_build_is_refused_and_keeps_it(work, force, capsys):
    before = _digests(work / "t1")
    t0 = time.monotonic()
    assert main(["import", "t1/model.vm.so", "-o", "t1", *force]) == 2
    err = _one_line_error(capsys)
    assert "model.params" in err and "name another -o directory" in err, err
    assert time.monotonic() - t0 < 5  # refused before anything was derived
    assert _digests(work / "t1") == before  # the real weights, graph.json, model.so intact
    assert not _staging_left(work)
    assert main(["run", "t1"]) == 0  # and the build still runs


def test_import_into_another_models_build_is_refused_without_force(work, capsys):
    before = _digests(work / "t2")
    assert main(["import", "t1/model.vm.so", "-o", "t2", "--no-verify"]) == 2
    err = _one_line_error(capsys)
    for name in ("graph.json", "model.params", "model.so", "build.json", "--force"):
        assert name in err, err
    assert _digests(work / "t2") == before


def test_import_with_force_replaces_another_build_and_runs(work, capsys):
    before = _digests(work / "t1")
    assert main(["run", "t1", "--out", "o1"]) == 0
    assert main(["import", "t1/model.vm.so", "--params", "t1/model.params", "-o", "t2",
                 "--force"]) == 0
    out = capsys.readouterr().out
    assert "note: --force: replaced" in out and "build.json" in out, out
    # the replaced build's build.json and model.vm.so went with it: they described its model
    assert sorted(p.name for p in (work / "t2").iterdir()) == \
        ["graph.json", "import.json", "model.params", "model.so"]
    assert _digests(work / "t1") == before and not _staging_left(work)
    assert main(["run", "t2", "--out", "o2"]) == 0
    np.testing.assert_allclose(np.load(work / "o2" / "output_0.npy"),
                               np.load(work / "o1" / "output_0.npy"), rtol=1e-4, atol=1e-5)


def test_an_import_replaces_its_own_earlier_files_but_not_edited_ones(work, capsys):
    argv = ["import", "t1/model.vm.so", "-o", "imp/new", "--no-verify"]
    assert main(argv) == 0  # into a directory that does not exist yet
    assert "files" in json.loads((work / "imp/new/import.json").read_text())
    assert main(argv) == 0  # again: its own files, replaced without --force
    assert not _staging_left(work)
    edited = work / "imp/new/model.params"
    edited.write_bytes(edited.read_bytes() + b"\0")  # the user's now
    kept = _digests(work / "imp/new")
    capsys.readouterr()
    assert main(argv) == 2
    err = _one_line_error(capsys)
    assert "model.params" in err and "--force" in err and "graph.json" not in err, err
    assert _digests(work / "imp/new") == kept


def test_run_out_keeps_an_existing_output_unless_forced(work, capsys):
    (work / "o").mkdir()
    mine = np.full(3, 7.0)
    np.save(work / "o" / "output_0.npy", mine)
    assert main(["run", "t1", "--out", "o"]) == 2
    err = _one_line_error(capsys)
    assert "output_0.npy" in err and "--force" in err, err
    assert np.array_equal(np.load(work / "o" / "output_0.npy"), mine)
    assert main(["run", "t1", "--out", "o", "--force"]) == 0
    assert np.load(work / "o" / "output_0.npy").shape != mine.shape


def test_build_lists_only_the_files_it_wrote(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert main(["build", "tiny-cnn", "-o", str(out), "--no-vm"]) == 0
    wrote = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("wrote ")]
    assert wrote == [f"wrote build.json, graph.json, model.params, model.so to {out}"], wrote
    assert (out / "notes.txt").read_text() == "mine"
