"""Messages that point the right way, printed safely (issue #24): control characters read from
files are escaped, a system limit is named as such, a non-ASCII path under the C locale loads,
and ``explain DIR`` takes a build directory like every other command."""
from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tvm_printer import Dur, as_json, as_table, profiled_run

from minigraph.cli import main
from minigraph.cli.terminal import escape
from minigraph.errors import KernelError

ROOT = Path(__file__).resolve().parents[2]
EVIL = "evil\x1b[2J\x1b]8;;http://x\x07\x00\r\x9bname"


def _saved_profile(path: Path, names: list[str]) -> None:
    ops = [{"index": i, "name": n, "func_name": f"k{i}", "kind": "conv2d", "hash": f"{i:04x}",
            "shapes": [["float32", [1, 4]]], "layouts": {}} for i, n in enumerate(names)]
    path.write_text(json.dumps({"format": "minigraph-profile/1", "ops": ops,
                                "settings": {"modes": ["warm"]},
                                "samples_ns": {"warm": [[1000.0, 1010.0]] * len(names)}}))


def _no_raw_controls(text: str) -> None:
    raw = [c for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) < 0xA0]
    assert not raw, raw


def test_escape_keeps_text_and_shows_every_control_character():
    assert escape("a\tb\nc ü ±") == "a\tb\nc ü ±"
    assert escape(EVIL) == "evil\\x1b[2J\\x1b]8;;http://x\\x07\\x00\\x0d\\x9bname"


def test_show_and_compare_escape_names_from_a_saved_profile(tmp_path, capsys):
    _saved_profile(tmp_path / "a.json", [EVIL, "plain"])
    _saved_profile(tmp_path / "b.json", [EVIL, "plain"])
    assert main(["show", str(tmp_path / "a.json"), "--wide"]) == 0
    out = capsys.readouterr().out
    assert "evil\\x1b[2J" in out and "\\x00" in out
    _no_raw_controls(out)
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--wide"]) == 0
    out = capsys.readouterr().out
    assert "evil\\x1b[2J" in out
    _no_raw_controls(out)


@pytest.mark.parametrize("form", ["table", "json"])
def test_a_tvm_report_with_control_characters_is_shown_escaped(tmp_path, capsys, form):
    calls, devices = profiled_run([{"Name": EVIL, "Duration (us)": Dur(10.0)},
                                   {"Name": "fused_add", "Duration (us)": Dur(5.0)}], 20.0)
    data = as_table(calls, devices) if form == "table" else \
        as_json(calls, devices).replace("\x00", "\\u0000").replace("\x1b", "\\u001b") \
        .replace("\x07", "\\u0007").replace("\r", "\\r").encode()
    (tmp_path / "r.txt").write_bytes(data)
    assert main(["show", str(tmp_path / "r.txt")]) == 0
    out = capsys.readouterr().out
    assert "\\x1b[2J" in out
    _no_raw_controls(out)


def test_an_error_quoting_a_name_from_a_file_is_escaped(tmp_path, capsys):
    (tmp_path / "g.json").write_text(json.dumps({
        "nodes": [{"op": "bogus", "name": EVIL, "inputs": []}], "arg_nodes": [0],
        "heads": [[0, 0, 0]], "attrs": {}}))
    assert main(["explain", str(tmp_path / "g.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "\\x1b[2J" in err
    _no_raw_controls(err)


def test_explain_takes_a_build_directory(tiny_cnn, capsys):
    assert main(["explain", str(tiny_cnn)]) == 0
    out = capsys.readouterr().out
    assert "storage" in out and "Is a directory" not in out


def _limited(monkeypatch, address_space: int) -> None:
    real = resource.getrlimit

    def getrlimit(which: int):
        return (address_space, address_space) if which == resource.RLIMIT_AS else real(which)
    monkeypatch.setattr(resource, "getrlimit", getrlimit)


def _failing_run(monkeypatch, err: BaseException) -> None:
    from minigraph.cli import run as cli_run

    def fails(*args, **kwargs):
        raise err
    monkeypatch.setattr(cli_run, "run_once", fails)


def test_bad_alloc_under_an_address_space_limit_names_the_limit(tiny_cnn, monkeypatch, capsys):
    _limited(monkeypatch, 500 << 20)
    _failing_run(monkeypatch, MemoryError("std::bad_alloc"))
    assert main(["run", str(tiny_cnn)]) == 1
    err = capsys.readouterr().err
    assert "500 MiB of address space" in err and "ulimit -v" in err
    assert "check the shapes" not in err


def test_bad_alloc_without_a_limit_still_points_at_the_shapes(tiny_cnn, monkeypatch, capsys):
    _limited(monkeypatch, resource.RLIM_INFINITY)
    _failing_run(monkeypatch, MemoryError("std::bad_alloc"))
    assert main(["run", str(tiny_cnn)]) == 1
    assert "check the shapes in graph.json" in capsys.readouterr().err


@pytest.mark.parametrize("err", [RuntimeError("Resource temporarily unavailable"),
                                 KernelError("op 0 (node 7 'x', kernel 'y') failed: Resource "
                                             "temporarily unavailable")])
def test_threads_the_system_refused_are_not_an_internal_error(tiny_cnn, monkeypatch, capsys,
                                                              err):
    _limited(monkeypatch, 500 << 20)
    _failing_run(monkeypatch, err)
    assert main(["run", str(tiny_cnn)]) == 1
    text = capsys.readouterr().err
    assert "internal error" not in text and "InternalError" not in text
    assert "500 MiB of address space" in text and "--threads 1" in text, text


@pytest.mark.subprocess
def test_a_real_thread_limit_is_named(tiny_cnn):
    """Stacks so large that TVM's second worker cannot be mapped: pthread_create's EAGAIN."""
    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2_000_000 << 10, resource.RLIM_INFINITY))
        resource.setrlimit(resource.RLIMIT_STACK, (1_500_000 << 10, resource.RLIM_INFINITY))
    proc = subprocess.run([sys.executable, "-m", "minigraph", "profile", str(tiny_cnn),
                           "--mode", "e2e", "--quiet", "--threads", "2"], capture_output=True,
                          text=True, timeout=300, preexec_fn=limits,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    if proc.returncode == 0:
        pytest.skip("this machine created the threads even so: nothing to name")
    assert "internal error" not in proc.stderr and "ulimit" in proc.stderr, proc.stderr


@pytest.mark.subprocess
def test_a_non_ascii_path_loads_under_the_c_locale(tiny_cnn, tmp_path):
    d = tmp_path / "modèle ü"
    shutil.copytree(tiny_cnn, d)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LC_ALL": "C", "PYTHONUTF8": "0"}
    proc = subprocess.run([sys.executable, "-m", "minigraph", "run", str(d)],
                          capture_output=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    assert b"output 0" in proc.stdout and b"another TVM version" not in proc.stderr
