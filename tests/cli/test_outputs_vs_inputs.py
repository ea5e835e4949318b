"""No output replaces an input or another output of the same command (issue #24): every output
path is checked against every input and every other output, through symlinks, '..' and hard
links, before anything is measured; a partial result goes beside a complete one; a FIFO nobody
reads or writes is an error, not a hang."""
from __future__ import annotations

import hashlib
import os
import shutil
import signal
import time
from pathlib import Path

import numpy as np
import pytest

from minigraph.cli import main


def _digests(*dirs: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest()
            for d in dirs for p in sorted(d.iterdir()) if p.is_file()}


@pytest.fixture(scope="module")
def _profiled(tiny_cnn: Path, tmp_path_factory) -> Path:
    """tiny-cnn as ``t1`` and its saved profile, made once (a profile takes ~1.5 s)."""
    base = tmp_path_factory.mktemp("profiled")
    shutil.copytree(tiny_cnn, base / "t1")
    assert main(["profile", str(base / "t1"), "--mode", "first-run", "--mode", "e2e",
                 "--quiet", "--json", str(base / "a.json")]) == 0
    return base


@pytest.fixture
def work(_profiled: Path, tmp_path: Path) -> Path:
    """A fresh copy of tiny-cnn as ``t1``, and two saved profiles a.json and good.json beside
    it, for each test to overwrite or refuse to."""
    shutil.copytree(_profiled / "t1", tmp_path / "t1")
    shutil.copy(_profiled / "a.json", tmp_path / "a.json")
    shutil.copy(_profiled / "a.json", tmp_path / "good.json")
    return tmp_path


@pytest.fixture
def no_hang():
    """A check that used to block forever fails the test instead of hanging the suite."""
    def alarm(signum, frame):
        raise AssertionError("blocked: the command waited on a FIFO")
    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


PROFILE = ["profile", "t1", "--mode", "e2e", "--quiet"]


@pytest.mark.parametrize("argv, what", [
    (PROFILE + ["--json", "t1/model.so"], "the model library"),       # the three
    (PROFILE + ["--csv", "t1/graph.json"], "graph.json"),
    (PROFILE + ["--html", "t1/model.params"], "the params file"),
    (PROFILE + ["--trace", "t1/build.json"], "build.json"),
    (PROFILE + ["--raw", "t1/model.vm.so"], "model.vm.so"),
    (PROFILE + ["--json", "t1/../t1/./model.so"], "the model library"),  # through '..'
    (PROFILE + ["--json", "link.so"], "the model library"),              # through a symlink
    (PROFILE + ["--json", "hard.params"], "the params file"),            # a hard link
    (["compare", "a.json", "good.json", "--json", "a.json"], "profile A"),
    (["compare", "a.json", "good.json", "--html", "good.json"], "profile B"),
    (["show", "a.json", "--csv", "a.json"], "the file shown"),
    (["diagnose", "t1", "--quick", "--json", "t1/graph.json"], "graph.json"),
    (["run", "t1", "--input", "data=x.npy", "--out", "."], "--input data"),
])
def test_an_output_on_an_input_is_refused_and_the_input_kept(work, argv, what, capsys,
                                                            monkeypatch):
    monkeypatch.chdir(work)
    (work / "link.so").symlink_to(work / "t1" / "model.so")
    os.link(work / "t1" / "model.params", work / "hard.params")
    np.save(work / "x.npy", np.zeros((1, 32, 32, 3), "float32"))
    if argv[0] == "run":
        os.replace(work / "x.npy", work / "output_0.npy")  # what run --out . would write
        argv = [a.replace("x.npy", "output_0.npy") for a in argv]
    before = _digests(work, work / "t1")
    t0 = time.monotonic()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and what in err, err
    assert "destroy" in err or "would replace" in err, err
    assert time.monotonic() - t0 < 5  # refused before anything was measured
    assert _digests(work, work / "t1") == before


def test_build_and_import_never_write_over_what_they_read(work, monkeypatch, capsys):
    monkeypatch.chdir(work)
    before = _digests(work / "t1")
    assert main(["build", "t1/model.params", "-o", "t1"]) == 2  # a model file named like one
    assert "would write its model.params over the model" in capsys.readouterr().err
    assert main(["import", "t1/model.vm.so", "-o", "t1", "--params", "t1/model.params"]) == 2
    assert "would overwrite the --params file" in capsys.readouterr().err
    assert _digests(work / "t1") == before


@pytest.mark.parametrize("outputs", [
    ["--json", "same.out", "--csv", "same.out"],
    ["--json", "x", "--raw", "./x"],
    ["--csv", "sub/../y.csv", "--trace", "y.csv"],
    ["--json", "-", "--csv", "-"],
])
def test_two_outputs_on_one_path_are_refused(work, outputs, capsys, monkeypatch):
    monkeypatch.chdir(work)
    (work / "sub").mkdir()
    assert main(PROFILE + outputs) == 2
    err = capsys.readouterr().err
    assert "both write to" in err and err.count("\n") == 1, err
    assert not [p for p in work.iterdir() if p.name in ("same.out", "x", "y.csv")]


def test_devices_keep_nothing_so_two_outputs_may_share_one(work, monkeypatch, capsys):
    monkeypatch.chdir(work)
    assert main(PROFILE + ["--json", "/dev/null", "--csv", "/dev/null"]) == 0


def _interrupt_first_run(monkeypatch) -> None:
    """The first-run mode is interrupted (as by Ctrl-C) after it measured nothing."""
    from minigraph.profile import samplers

    def interrupted(run):
        raise KeyboardInterrupt
    monkeypatch.setitem(samplers.SAMPLERS, "in-run", interrupted)


def test_a_partial_profile_goes_beside_a_complete_one(work, monkeypatch, capsys):
    monkeypatch.chdir(work)
    before = _digests(work)
    _interrupt_first_run(monkeypatch)
    argv = ["profile", "t1", "--mode", "first-run", "--mode", "in-run", "--quiet",
            "--json", "a.json", "--csv", "fresh.csv"]
    assert main(argv) == 130
    err = capsys.readouterr().err
    assert _digests(work)[str(work / "a.json")] == before[str(work / "a.json")]  # kept
    partial = (work / "a.partial.json").read_text()
    assert '"partial": true' in partial and "a.partial.json" in err and "a.json" in err
    assert (work / "fresh.csv").exists() and not (work / "fresh.partial.csv").exists()
    assert main(argv + ["--overwrite-partial"]) == 130  # asked for: it replaces the file
    assert '"partial": true' in (work / "a.json").read_text()


def test_a_fifo_nobody_reads_is_an_error_not_a_hang(work, monkeypatch, capsys, no_hang):
    monkeypatch.chdir(work)
    os.mkfifo(work / "out.fifo")
    assert main(PROFILE + ["--json", "out.fifo"]) == 2
    assert "no process reads" in capsys.readouterr().err


def test_a_fifo_nobody_writes_is_an_error_not_a_hang(work, monkeypatch, capsys, no_hang):
    monkeypatch.chdir(work)
    os.mkfifo(work / "in.fifo")
    assert main(["run", "t1", "--input", "data=in.fifo"]) == 2
    assert "no process writes to" in capsys.readouterr().err
    assert main(["show", "in.fifo"]) == 2
    assert "no process writes to" in capsys.readouterr().err


def test_a_fifo_with_a_reader_gets_the_whole_output(work, monkeypatch, no_hang):
    import select
    monkeypatch.chdir(work)
    os.mkfifo(work / "out.fifo")
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the reader: open (without waiting for a writer), say so, then read it all
        fd = os.open(work / "out.fifo", os.O_RDONLY | os.O_NONBLOCK)
        os.write(ready_w, b"r")
        select.select([fd], [], [], 60)  # until the writer's data comes
        os.set_blocking(fd, True)
        data = b"".join(iter(lambda: os.read(fd, 1 << 16), b""))
        os._exit(0 if data.startswith(b"{") and b'"format"' in data else 1)
    assert os.read(ready_r, 1) == b"r"
    assert main(PROFILE + ["--json", "out.fifo"]) == 0
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
