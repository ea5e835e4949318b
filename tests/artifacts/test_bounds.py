"""Bounded reads (issue 49), in process: fileio's one bounded reader, .npz members checked by
their declared sizes before inflating, params files within what the graph holds, CPU lists
within the machine. Every source here is finite and small (at most 256 MiB even if a bound
were ignored): the endless ones (/dev/zero, FIFOs without end, 8 GiB bombs) are in
tests/cli/test_bounded_reads.py, under an address-space cap."""
from __future__ import annotations

import os
from pathlib import Path

import bombs
import numpy as np
import pytest

from minigraph.artifacts.bounds import ParamsBound, params_bound
from minigraph.artifacts.graph_json import parse_graph
from minigraph.artifacts.params import load_params_file, save_params
from minigraph.errors import InputError, ParamsError
from minigraph.fileio import memory_cap, read_bounded, read_file, regular_size, size_text
from minigraph.threadpool.cpulist import cpu_ids, parse_cpu_list


@pytest.mark.parametrize("n,text", [(0, "0 bytes"), (1023, "1023 bytes"), (1024, "1 KiB"),
                                    (1536, "1.5 KiB"), (12 << 10, "12 KiB"),
                                    (2 << 20, "2 MiB"), (3 << 30, "3 GiB")])
def test_size_text(n: int, text: str) -> None:
    assert size_text(n) == text


def test_a_regular_file_over_its_bound_is_refused_unread(tmp_path: Path, monkeypatch) -> None:
    p = tmp_path / "big.bin"
    p.write_bytes(bytes(3 << 20))
    monkeypatch.setattr("minigraph.fileio.bounded.os.read", lambda *a: pytest.fail("read"))
    with pytest.raises(InputError) as err:
        read_bounded(p, 1 << 20, "params file", "the model's 7 arg nodes hold")
    assert str(err.value) == (f"params file '{p}': 3 MiB is more than the 1 MiB the model's "
                              "7 arg nodes hold; refused before reading it")


def test_a_file_at_its_bound_is_read(tmp_path: Path) -> None:
    p = tmp_path / "x.bin"
    p.write_bytes(b"x" * 4096)
    assert read_bounded(p, 4096, "x") == b"x" * 4096
    assert read_file(p, "x") == b"x" * 4096  # no limit given: the memory cap
    assert 0 < memory_cap() <= 16 << 30


def test_a_stream_is_read_no_further_than_its_bound(tmp_path: Path) -> None:
    with bombs.fifo_stream(tmp_path / "pipe", b"", 8 << 20) as fifo, \
            pytest.raises(InputError, match=r"pipe': a FIFO \(named pipe\) that gives more "
                                            r"than the 64 KiB such a file may be"):
        read_bounded(fifo, 64 << 10, "input")


def test_a_fifo_nobody_writes_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="no process writes to"):
        read_bounded(fifo, 1 << 20, "input")
    with pytest.raises(InputError, match=r"a FIFO \(named pipe\), not a regular file"):
        regular_size(fifo, 1 << 20, "library")


def test_regular_size_of_a_library(tmp_path: Path) -> None:
    p = tmp_path / "model.so"
    p.write_bytes(bytes(5000))
    assert regular_size(p, 5000, "library") == 5000
    with pytest.raises(InputError, match="4.9 KiB is more than the 4 KiB a model library"):
        regular_size(p, 4096, "library", "a model library may be")
    with pytest.raises(InputError, match="a character device, not a regular file"):
        regular_size("/dev/zero", 4096, "library")


# ---------------------------------------------------------------- params files and .npz

GRAPH = {"nodes": [{"op": "null", "name": "w", "inputs": []},
                   {"op": "null", "name": "b", "inputs": []}],
         "arg_nodes": [0, 1], "heads": [[0, 0, 0]], "node_row_ptr": [0, 1, 2],
         "attrs": {"dltype": ["list_str", ["float32", "int8"]],
                   "shape": ["list_shape", [[64, 16], [16]]],
                   "storage_id": ["list_int", [0, 1]]}}


def test_params_bound_is_what_the_graph_holds() -> None:
    import json
    bound = params_bound(parse_graph(json.dumps(GRAPH)))
    assert (bound.array, bound.data) == (4096, 4096 + 16)
    assert 4112 < bound.file < 4112 + 3 * (4 << 10) + (64 << 10)
    assert bound.reason == "the model's 2 arg nodes hold"


def _bound(array: int, data: int, file: int = 1 << 20) -> ParamsBound:
    return ParamsBound(array, data, file, "the model's 2 arg nodes hold",
                       "the largest of the model's 2 arg nodes holds")


def test_a_params_file_over_its_bound_is_refused_unread(tmp_path: Path) -> None:
    p = tmp_path / "model.params"
    p.write_bytes(save_params({"w": np.zeros((1024, 1024), "float32")}))  # 4 MiB
    with pytest.raises(InputError, match=r"params file .*model.params': 4 MiB is more than "
                                         r"the 1 MiB the model's 2 arg nodes hold"):
        load_params_file(p, bound=_bound(1 << 20, 1 << 20))


def test_a_params_stream_is_checked_at_its_magic_then_bounded(tmp_path: Path) -> None:
    with bombs.fifo_stream(tmp_path / "zeros", b"", 8 << 20) as fifo, \
            pytest.raises(ParamsError, match="not a TVM param blob"):
        load_params_file(fifo, bound=_bound(1 << 30, 1 << 30, 1 << 30))
    head = bombs.params_blob_head(["w"])
    with bombs.fifo_stream(tmp_path / "blob", head, 8 << 20) as fifo, \
            pytest.raises(InputError, match=r"blob': a FIFO \(named pipe\) that gives more "
                                            r"than the 1 MiB the model's 2 arg nodes hold"):
        load_params_file(fifo, bound=_bound(1 << 20, 1 << 20, 1 << 20))


def test_npz_member_declaring_more_than_its_bound_is_not_inflated(tmp_path: Path) -> None:
    """A 256 MiB bomb in a 256 KiB file, and a 200-byte file declaring 64 GiB."""
    bomb = bombs.npz_bomb(tmp_path / "bomb.npz", 256 << 20)
    assert bomb.stat().st_size < 512 << 10
    with pytest.raises(ParamsError, match=r"'w.npy' declares 256 MiB once inflated, more than "
                                          r"the 1 MiB of data the largest of the model's"):
        load_params_file(bomb, bound=_bound(1 << 20, 2 << 20, 4 << 20))
    small = bombs.npz_declaring(tmp_path / "small.npz", 64 << 30)
    with pytest.raises(ParamsError, match="declares 64 GiB once inflated"):
        load_params_file(small, bound=_bound(1 << 20, 2 << 20))


def test_npz_header_disagreeing_with_the_directory_is_refused(tmp_path: Path) -> None:
    lie = bombs.npz_declaring(tmp_path / "lie.npz", 1000, header_shape=(1 << 30,))
    with pytest.raises(ParamsError, match=r"its header says float32\[1073741824\] "
                                          r"\(4294967296 bytes\) but the archive declares 1000"):
        load_params_file(lie)


def test_npz_members_together_within_the_total(tmp_path: Path) -> None:
    np.savez(tmp_path / "w.npz", a=np.zeros(200, "f4"), b=np.zeros(200, "f4"))  # 800 B each
    got = load_params_file(tmp_path / "w.npz", bound=_bound(800, 1600))
    assert [a.nbytes for a in got.values()] == [800, 800]
    with pytest.raises(ParamsError, match=r"'b.npy' holds float32\[200\] \(800 bytes\), more "
                                          r"than the 700 bytes of data the model's 2 arg "
                                          r"nodes hold, all arrays together"):
        load_params_file(tmp_path / "w.npz", bound=_bound(800, 1500))


def test_npz_arrays_read_as_np_load_reads_them(tmp_path: Path) -> None:
    arrays = {"c": np.arange(12, dtype="<f4").reshape(3, 4),
              "f": np.asfortranarray(np.arange(12, dtype="int64").reshape(3, 4)),
              "big": np.arange(5, dtype=">f8"), "flag": np.array([True, False]),
              "scalar": np.array(1.5, "float16")}
    for save in (np.savez, np.savez_compressed):
        save(tmp_path / "w.npz", **arrays)
        got = load_params_file(tmp_path / "w.npz")
        with np.load(tmp_path / "w.npz") as want:
            assert list(got) == list(want.files)
            for name in want.files:
                assert got[name].dtype == want[name].dtype
                assert np.array_equal(got[name], want[name]) and got[name].flags.writeable


def test_npz_of_non_npy_members_is_refused(tmp_path: Path) -> None:
    import zipfile
    with zipfile.ZipFile(tmp_path / "w.npz", "w") as zf:
        zf.writestr("notes.txt", "hello")
    with pytest.raises(ParamsError, match="'notes.txt' is not a .npy array"):
        load_params_file(tmp_path / "w.npz")


# ---------------------------------------------------------------- CPU lists

def test_cpu_ids_are_the_machines() -> None:
    assert cpu_ids() >= (os.cpu_count() or 1)
    assert parse_cpu_list(f"0-{cpu_ids() - 1}") == tuple(range(cpu_ids()))


@pytest.mark.parametrize("text", ["0-100000", "100000", "3,0-8", "0-" + "9" * 5000])
def test_a_cpu_the_machine_lacks_is_refused_before_any_range_is_made(text: str) -> None:
    with pytest.raises(InputError, match=r"CPU .* is not one this machine has \(it has CPUs "
                                         r"0-7\)") as err:
        parse_cpu_list(text, limit=8)
    assert len(str(err.value)) < 300  # a 5,000-digit id is not echoed whole
