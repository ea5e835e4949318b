"""Hostile inputs and surroundings (issue #49, items 7-13): a closed or full stdout, a document
on stdout beside the report, names that hold newlines or terminal escapes, settings that cannot
be honoured, saved documents no run could have written. Each is refused in one ``error:`` line
naming what is wrong, or honoured; never a traceback, an "internal error" or a silent change."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from minigraph.cli import main

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
