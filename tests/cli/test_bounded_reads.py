"""Unbounded reads, through the real CLI (issue 49): endless devices, FIFOs that never stop,
CPU ranges of ten billion ids, an .npz that inflates to 8 GiB, a graph.json of gigabytes.
Each must end at once in one ``error: ...`` line (exit 2) naming the file and the bound.

Every command runs in a process of its own whose address space is capped (RLIMIT_AS, 4 GiB):
a regression is then an "out of memory" exit that fails the test, never a machine taken down
by the OOM killer. The cap is set in the command's process (forked from the CLI zygote,
tests/helpers/cli_runner.py) before the command starts.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import bombs
import cli_runner
import pytest

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 4 << 30  # bytes of address space: TVM and a tiny model need ~1.5 GiB
SECONDS = 60     # a refusal takes a second or two; a read of gigabytes would take far longer

pytestmark = pytest.mark.subprocess


def run_capped(*argv: object) -> subprocess.CompletedProcess:
    """``python -m minigraph *argv`` under the address-space cap; its stderr checked to be
    one ``error:`` line and no memory error, its exit code 2 (bad input)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TVM_NUM_THREADS": "1"}
    start = time.monotonic()
    proc = cli_runner.run(argv, env=env, cwd=ROOT, timeout=SECONDS, address_space=LIMIT)
    err = proc.stderr
    assert "out of memory" not in err and "MemoryError" not in err, err
    assert proc.returncode == 2, (proc.returncode, err)
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    assert time.monotonic() - start < SECONDS / 2, err
    return proc


@pytest.fixture
def model(tiny_cnn: Path, tmp_path: Path) -> Path:
    d = tmp_path / "model"
    d.mkdir()
    for name in ("model.so", "graph.json", "model.params", "build.json", "model.vm.so"):
        shutil.copy(tiny_cnn / name, d / name)
    return d


def test_input_from_dev_zero(model: Path) -> None:
    err = run_capped("run", model, "--input", "data=/dev/zero").stderr
    assert "/dev/zero" in err and "not a .npy file" in err


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_params_from_an_endless_device(model: Path, device: str) -> None:
    err = run_capped("run", model, "--params", device).stderr
    assert device in err and "not a TVM param blob" in err


def test_cpus_range_of_ten_billion(model: Path) -> None:
    err = run_capped("profile", model, "--cpus", "0-10000000000", "--mode", "e2e").stderr
    assert "0-10000000000" in err and "CPU 10000000000 is not one this machine has" in err


def test_cpus_id_of_five_thousand_digits(model: Path) -> None:
    err = run_capped("profile", model, "--cpus", "9" * 5000, "--mode", "e2e").stderr
    assert "is not one this machine has" in err and len(err) < 300


def test_npz_member_inflating_to_8_gib_vm_door(model: Path, tmp_path: Path) -> None:
    """A real bomb (8 MB, inflates to 8 GiB): the VM door has no graph before its params, so
    the bound is the unsized cap (a quarter of the 4 GiB), checked against the member's
    declared size before inflating."""
    bomb = bombs.npz_bomb(tmp_path / "w.npz", 8 << 30)
    assert bomb.stat().st_size < 16 << 20
    err = run_capped("run", model / "model.vm.so", "--params", bomb).stderr
    assert "w.npz" in err and "'w.npy' declares 8 GiB" in err and "before inflating" in err


def test_npz_bomb_file_over_the_graphs_params(model: Path, tmp_path: Path) -> None:
    err = run_capped("run", model, "--params", bombs.npz_bomb(tmp_path / "w.npz", 8 << 30)).stderr
    assert "params file" in err and "w.npz" in err and "arg nodes hold" in err
    assert "refused before reading it" in err


def test_small_npz_declaring_64_gib(model: Path, tmp_path: Path) -> None:
    npz = bombs.npz_declaring(tmp_path / "w.npz", 64 << 30)
    assert npz.stat().st_size < 4096
    err = run_capped("run", model, "--params", npz).stderr
    assert "'w.npy' declares 64 GiB" in err and "largest of the model's" in err


def test_graph_json_of_gigabytes(model: Path) -> None:
    graph = model / "graph.json"
    with open(graph, "r+b") as f:
        f.truncate(3 << 30)  # sparse: no disk, no memory; 3 GiB to any reader
    err = run_capped("run", model).stderr
    assert str(graph) in err and "3 GiB is more than the 64 MiB a graph.json may be" in err


def test_input_from_a_fifo_that_never_ends(model: Path, tmp_path: Path) -> None:
    """A valid header for the model's input, then zeros without end: read one byte past
    the 12 KiB of data graph.json says it has, not further."""
    with bombs.fifo_stream(tmp_path / "x.npy", bombs.npy_header((1, 32, 32, 3))) as fifo:
        err = run_capped("run", model, "--input", f"data={fifo}").stderr
    assert "x.npy" in err and "more than 12288 bytes follow" in err


def test_input_header_from_a_fifo_declaring_32_gib(model: Path, tmp_path: Path) -> None:
    with bombs.fifo_stream(tmp_path / "x.npy", bombs.npy_header((1 << 33,))) as fifo:
        err = run_capped("run", model, "--input", f"data={fifo}").stderr
    assert "declares float32[8589934592] (32 GiB of data)" in err
    assert "12 KiB input 'data' (float32[1, 32, 32, 3])" in err


def test_params_from_a_fifo_that_never_ends(model: Path, tmp_path: Path) -> None:
    head = bombs.params_blob_head(["conv0_weight"])
    with bombs.fifo_stream(tmp_path / "w.params", head) as fifo:
        err = run_capped("run", model, "--params", fifo).stderr
    assert "w.params" in err and "FIFO (named pipe) that gives more than the" in err
    assert "arg nodes hold" in err


@pytest.mark.parametrize("argv,says", [
    (["run", "{fifo}"], "not a regular file (a FIFO or device)"),
    (["run", "{fifo}", "{model}/graph.json"], "a FIFO (named pipe), not a regular file"),
    (["run", "{model}/model.so", "{fifo}"], "no process writes to"),
    (["explain", "{fifo}"], "no process writes to"),
    (["env", "{fifo}"], "a FIFO (named pipe), not a regular file"),
    (["compare", "{fifo}", "{fifo}"], "no process writes to"),
], ids=["library", "library-with-graph", "graph", "explain", "env", "compare"])
def test_a_fifo_nobody_writes_is_refused_not_waited_on(model: Path, tmp_path: Path,
                                                       argv: list[str], says: str) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    err = run_capped(*(a.format(fifo=fifo, model=model) for a in argv)).stderr
    assert str(fifo) in err and says in err
