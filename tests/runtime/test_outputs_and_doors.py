"""Front doors (what the user typed -> files) and outputs (checked before work, never lost)."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from minigraph.errors import InputError, MinigraphError
from minigraph.fileio import check_output, write_output
from minigraph.runtime.doors import door_of, locate


@pytest.mark.parametrize("names", [("model.so", "graph.json", "model.params"),
                                   ("deploy_lib.so", "deploy_graph.json", "deploy_param.params")])
def test_a_build_directory_names_its_files(tmp_path, names):
    """minigraph's names, and the deploy_* names of TVM's tutorials."""
    for name in names:
        (tmp_path / name).write_bytes(b"")
    files = locate(tmp_path)
    assert (files.lib.name, files.graph.name, files.params.name) == names
    assert door_of(files) == "graph"


def test_swapped_arguments_are_named(tmp_path):
    with pytest.raises(InputError, match="look swapped"):
        locate(tmp_path / "graph.json", tmp_path / "model.so")


def test_a_directory_without_a_library_is_an_error(tmp_path):
    with pytest.raises(InputError, match="no model library"):
        locate(tmp_path)


def test_a_lone_library_has_no_graph(tmp_path):
    assert locate(tmp_path / "x.so").graph is None


@pytest.mark.parametrize("bad", ["/nonexistent_dir/x.json", "/proc/self/x.json"])
def test_bad_output_paths_fail_fast(bad):
    t0 = time.monotonic()
    with pytest.raises(InputError):
        check_output(bad, "--json")
    assert time.monotonic() - t0 < 1.0


def test_a_directory_is_not_an_output(tmp_path):
    with pytest.raises(InputError, match="is a directory"):
        check_output(tmp_path, "--json")


def test_device_is_streamed_to_and_a_full_device_is_an_error():
    check_output("/dev/null")
    write_output("/dev/null", "x" * 1000)
    assert Path("/dev/null").is_char_device()  # not replaced by a regular file
    if Path("/dev/full").exists():
        with pytest.raises(MinigraphError, match="No space"):
            write_output("/dev/full", "x" * 100_000)
        assert Path("/dev/full").is_char_device()


def test_symlink_keeps_its_link_and_the_target_gets_the_data(tmp_path):
    target = tmp_path / "real.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    write_output(link, "new")
    assert link.is_symlink() and target.read_text() == "new"


def test_fifo_is_streamed(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    pid = os.fork()
    if pid == 0:  # the reader
        with open(fifo, "rb") as f:
            os._exit(0 if f.read() == b"data" else 1)
    write_output(fifo, "data")
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert fifo.exists() and not fifo.is_file()


def test_stdout_dash(capfdbinary):
    write_output("-", "to stdout")
    assert capfdbinary.readouterr().out == b"to stdout"
