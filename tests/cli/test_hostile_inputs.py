"""Hostile inputs and surroundings (issue #49, items 7-13): a closed or full stdout, a document
on stdout beside the report, names that hold newlines or terminal escapes, settings that cannot
be honoured, saved documents no run could have written. Each is refused in one ``error:`` line
naming what is wrong, or honoured; never a traceback, an "internal error" or a silent change."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from minigraph.cli import main

ROOT = Path(__file__).resolve().parents[2]
FAST = ["--mode", "warm", "--repeat", "1", "--budget-ms", "1", "--quiet"]  # profile in ~1 s

FORGED = "evil\nSummary: FORGED all is fine\nVerdict: FORGED"


def _saved_profile(path: Path, names: list[str], slow_first: float = 1.0) -> Path:
    """A saved profile of ``names`` (warm samples, op i taking i+1 us; op 0 ``slow_first``
    times that)."""
    ops = [{"index": i, "name": n, "func_name": f"k{i}", "kind": "conv2d", "hash": f"{i:04x}",
            "shapes": [["float32", [1, 4]]], "layouts": {}} for i, n in enumerate(names)]
    samples = [[1000.0 * (i + 1) * (slow_first if i == 0 else 1.0) * (1 + 0.01 * k)
                for k in range(9)] for i in range(len(names))]
    path.write_text(json.dumps({"format": "minigraph-profile/1", "ops": ops,
                                "settings": {"modes": ["warm"]},
                                "samples_ns": {"warm": samples}}))
    return path


def _forged_lines(text: str) -> list[str]:
    return [line for line in text.splitlines()
            if line.lstrip().startswith(("Summary: FORGED", "Verdict: FORGED"))]


# -- item 10: a name is one line; the HTML holds no control bytes ----------------------------

@pytest.mark.parametrize("command", [["show", "a.json"], ["show", "a.json", "--wide"],
                                     ["compare", "a.json", "b.json"],
                                     ["compare", "a.json", "b.json", "--wide"]])
def test_a_newline_in_a_saved_op_name_forges_no_line(tmp_path, monkeypatch, capsys, command):
    names = [FORGED] + [f"op{i}" for i in range(1, 8)]
    _saved_profile(tmp_path / "a.json", names)
    _saved_profile(tmp_path / "b.json", names, slow_first=3.0)  # the verdict names op 0
    monkeypatch.chdir(tmp_path)
    assert main(command) == 0
    out = capsys.readouterr().out
    assert not _forged_lines(out), out
    assert "evil\\x0aSummary: FORGED" in out  # shown, as the other controls are


@pytest.mark.parametrize("command", [["show", "a.json", "--html", "page.html"],
                                     ["compare", "a.json", "b.json", "--html", "page.html"]])
def test_html_pages_copy_no_control_bytes_from_names(tmp_path, monkeypatch, capsys, command):
    evil = "evil\x1b[2J\x07bell\x9b"
    _saved_profile(tmp_path / "a.json", [evil, "plain"])
    _saved_profile(tmp_path / "b.json", [evil, "plain"])
    monkeypatch.chdir(tmp_path)
    assert main(command) == 0
    page = (tmp_path / "page.html").read_text()
    assert not {"\x1b", "\x07", "\x9b"} & set(page)
    assert "evil\\x1b[2J\\x07bell" in page
    capsys.readouterr()


def _minigraph(*argv: object, stdout=subprocess.PIPE, close_stdout: bool = False,
               cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """``python -m minigraph *argv`` as a shell would start it (stdout closed: ``>&-``)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TVM_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "minigraph", *map(str, argv)], env=env,
                          cwd=cwd, stdout=stdout, stderr=subprocess.PIPE, text=True,
                          timeout=300, check=False, stdin=subprocess.DEVNULL,
                          preexec_fn=(lambda: os.close(1)) if close_stdout else None)


# -- item 7: a closed stdout ----------------------------------------------------------------

@pytest.mark.subprocess
@pytest.mark.parametrize("command", [["run", "{m}"], ["profile", "{m}", *FAST, "--json",
                                                      "{t}/p.json", "--csv", "{t}/p.csv"],
                                     ["build", "tiny-cnn", "-o", "{t}/built"]])
def test_a_closed_stdout_discards_the_report_and_writes_the_files(tiny_cnn, tmp_path, command):
    argv = [a.format(m=tiny_cnn, t=tmp_path) for a in command]
    done = _minigraph(*argv, stdout=None, close_stdout=True)
    assert done.returncode == 0 and done.stderr == "", done.stderr  # once: a traceback
    if command[0] == "profile":
        assert json.loads((tmp_path / "p.json").read_text())["format"] == "minigraph-profile/1"
        assert (tmp_path / "p.csv").read_text().startswith("index,")
    if command[0] == "build":
        assert (tmp_path / "built" / "model.so").is_file()


# -- item 8: a full disk under stdout --------------------------------------------------------

@pytest.mark.parametrize("command", [["explain", "{m}"], ["show", "{t}/a.json"]])
def test_stdout_on_a_full_disk_is_one_error_line(tiny_cnn, tmp_path, monkeypatch, capsys,
                                                 command):
    _saved_profile(tmp_path / "a.json", ["op0", "op1"])
    with open("/dev/full", "w") as full:
        monkeypatch.setattr(sys, "stdout", full)
        code = main([a.format(m=tiny_cnn, t=tmp_path) for a in command])
    assert code == 1
    assert capsys.readouterr().err == "error: cannot write to stdout: No space left on " \
                                      "device\n"


# -- item 9: a document on stdout, the report on stderr --------------------------------------

@pytest.mark.parametrize("json_out", ["-", "/dev/stdout"])
def test_compare_json_on_stdout_is_the_document_alone(tmp_path, json_out):
    a = _saved_profile(tmp_path / "a.json", [f"op{i}" for i in range(4)])
    b = _saved_profile(tmp_path / "b.json", [f"op{i}" for i in range(4)], slow_first=2.0)
    for extra in ([], ["--by-kernel"]):
        done = _minigraph("compare", a, b, "--json", json_out, *extra)  # stdout: a pipe
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["format"].startswith("minigraph-")  # nothing after it
        assert "Verdict:" in done.stderr


def test_show_json_on_stdout_is_the_document_alone(tmp_path, capsys):
    a = _saved_profile(tmp_path / "a.json", ["op0", "op1"])
    assert main(["show", str(a), "--json", "-"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["format"] == "minigraph-profile/1" and "Per-op medians" in err


@pytest.mark.subprocess
@pytest.mark.parametrize("json_out", ["-", "/dev/stdout"])
def test_profile_json_on_stdout_into_a_pipe(tiny_cnn, json_out):
    done = _minigraph("profile", tiny_cnn, *FAST, "--json", json_out)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["format"] == "minigraph-profile/1"
    assert "Per-op medians" in done.stderr and "error" not in done.stderr
