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

import cli_runner
import numpy as np
import pytest
import vm_models

from minigraph.artifacts.model_files import locate
from minigraph.artifacts.params import save_params_file
from minigraph.cli import main
from minigraph.errors import InputError
from minigraph.remote.job import profile_job
from minigraph.remote.spec import JobSpec
from minigraph.threadpool.cpulist import cpu_ids

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
    monkeypatch.setenv("COLUMNS", "200")  # the whole name fits: an 80-column table elides it
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

@pytest.mark.subprocess  # fresh interpreters, their stdout a pipe
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


# -- item 11: settings that cannot be honoured are refused, or said -------------------------

def _code(argv: list[str]) -> int:
    """main(argv)'s exit code, usage errors (argparse exits) included."""
    try:
        return main(argv)
    except SystemExit as done:
        return done.code


def _one_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "internal" not in err, err
    return err


def test_thread_settings_tvm_would_not_honour_are_refused(tiny_cnn, capsys, monkeypatch):
    cpus = cpu_ids()
    for option, says in ((["--pin-main", "-1"], "--pin-main: expected an integer >= 0"),
                         (["--pin-main", str(cpus)], f"--pin-main {cpus}: not a CPU this "
                                                     "machine has"),
                         (["--threads", "1099511627776"], "--threads: expected an integer 1 "
                                                          "to 1024"),
                         (["--cpus", f"0-{cpus + 998}"], f"CPU {cpus + 998} is not one this "
                                                         "machine has")):
        assert _code(["profile", str(tiny_cnn), *FAST, *option]) == 2
        assert says in _one_error(capsys)
    monkeypatch.setenv("TVM_NUM_THREADS", "abc")  # TVM's atoi: one thread, without a word
    assert main(["profile", str(tiny_cnn), *FAST]) == 2
    assert "TVM_NUM_THREADS='abc' is not a number of threads" in _one_error(capsys)


@pytest.mark.subprocess
def test_more_threads_than_cpus_is_said_in_the_default_summary(tiny_cnn):
    threads = len(os.sched_getaffinity(0)) + 1
    done = cli_runner.run(["profile", tiny_cnn, *FAST, "--threads", threads],
                          env={**os.environ, "TVM_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr
    summary = done.stdout[done.stdout.index("Summary:"):]
    assert f"NOT AS ASKED: requested threads={threads}, TVM uses" in summary, done.stdout


def test_fill_with_every_weight_given_is_refused(tiny_cnn, capsys):
    assert main(["run", str(tiny_cnn), "--fill", "zeros"]) == 2
    err = _one_error(capsys)
    assert "--fill zeros: every weight already has a value" in err and "model.params" in err


@pytest.mark.parametrize("option", [["--budget", "nan"], ["--budget", "inf"], ["--rungs", ""]])
def test_diagnose_budget_and_rungs_that_say_nothing_are_refused(tiny_cnn, capsys, option):
    assert _code(["diagnose", str(tiny_cnn), *option]) == 2
    _one_error(capsys)


def test_a_sweep_and_a_shape_of_one_symbol_are_refused(tiny_cnn, capsys):
    assert main(["profile", str(tiny_cnn), "--sweep", "n=4,8", "--shape", "n=5"]) == 2
    assert "--shape n=5 and --sweep n=...: the sweep sets n" in _one_error(capsys)


def test_a_remote_jobs_modes_string_is_refused_not_spelled_out(tiny_cnn):
    spec = JobSpec("profile", "model.so", "graph.json", "model.params",
                   settings={"modes": "warm"})
    with pytest.raises(InputError, match=r"modes must be a list of mode names .* got 'warm'"):
        profile_job(spec, locate(tiny_cnn))  # once: modes w, a, r, m


# -- item 12: saved documents no run could have written ---------------------------------------

@pytest.mark.parametrize("edit, says", [
    (lambda d: d["ops"][0].update(flops=-1e308), "ops[0].flops: must be a count"),
    (lambda d: d["samples_ns"]["warm"].__setitem__(0, []), "samples_ns.warm[0]: is empty")])
def test_a_saved_profile_no_run_could_write_is_refused(tmp_path, capsys, edit, says):
    path = _saved_profile(tmp_path / "a.json", ["op0", "op1"])
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))
    for command in (["show", str(path)], ["compare", str(path), str(path)]):
        assert main(command) == 2
        assert says in _one_error(capsys)


# -- item 13: messages that say what they mean ------------------------------------------------

def test_a_size_just_over_a_bound_is_said_in_bytes(tmp_path, capsys):
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate((64 << 20) + 1)  # sparse: one byte over the 64 MiB a saved document may be
    assert main(["show", str(big)]) == 2
    assert "67,108,865 bytes is more than the 67,108,864 bytes" in _one_error(capsys)


def test_sweep_errors_name_the_sweep(tiny_cnn, capsys):
    assert main(["profile", str(tiny_cnn), "--sweep", "n=4,8", "--mode", "warm"]) == 2
    assert "--sweep gives sizes of a Relax VM function's symbolic dimensions" in \
        _one_error(capsys)


@pytest.fixture(scope="module")
def dynamic_mlp(tmp_path_factory) -> list[str]:
    """A Relax VM executable over [n, 64] (relax.frontend.nn) and its params: model args."""
    out = tmp_path_factory.mktemp("dyn")
    lib, weights = vm_models.dynamic_mlp(out)
    save_params_file(out / "mlp.params", weights)
    return [str(lib), "--params", str(out / "mlp.params")]


def test_sweep_errors_about_a_dynamic_model_name_the_sweep(dynamic_mlp, tmp_path, capsys):
    assert main(["profile", *dynamic_mlp, "--sweep", "m=4,8", *FAST]) == 2
    assert "(--sweep gave m, which it does not name here)" in _one_error(capsys)
    np.save(tmp_path / "x.npy", np.ones((12, 64), np.float32))
    assert main(["profile", *dynamic_mlp, "--sweep", "n=4,8", "--input",
                 f"x={tmp_path / 'x.npy'}", *FAST]) == 2
    assert "n is 12 from param x dim 0's shape, but --sweep gives n=4" in _one_error(capsys)


def test_sizes_that_overflow_int64_are_said_so(dynamic_mlp, capsys):
    for n in ("9223372036854775807", "4611686018427387904"):
        assert main(["run", *dynamic_mlp, "--shape", f"n={n}"]) == 2
        err = _one_error(capsys)
        assert f"the sizes given (--shape n={n}) overflow the int64 arithmetic" in err, err
        assert "-byte storage" not in err
    assert _code(["run", *dynamic_mlp, "--shape", "n=99999999999999999999"]) == 2
    assert "expected NAME=N with N from 1 to 2**63-1" in _one_error(capsys)
