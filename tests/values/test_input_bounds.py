"""--input files read within the model's size of each input (issue 49): the .npy header alone
first, its declared size checked against graph.json and against the file before the data is
read. Every source here is small even if a bound were ignored (the endless ones are in
tests/cli/test_bounded_reads.py, under an address-space cap)."""
from __future__ import annotations

from pathlib import Path

import bombs
import numpy as np
import pytest

from minigraph.artifacts.bounds import InputBound
from minigraph.artifacts.model_files import ModelFiles, locate
from minigraph.errors import InputError
from minigraph.values.inputs import load_npy, model_input_bounds, parse_input_args

DATA = InputBound(12288, "float32[1, 32, 32, 3]")


def test_the_graph_gives_each_inputs_bound(tiny_cnn: Path) -> None:
    bounds = model_input_bounds(locate(tiny_cnn))
    assert bounds["data"] == DATA
    assert bounds["conv0_weight"].nbytes == 3 * 3 * 3 * 16 * 4
    vm = ModelFiles(tiny_cnn / "model.vm.so", None, None)
    assert model_input_bounds(vm) == {}  # a VM function's sizes come from its inputs


def test_an_unreadable_graph_gives_no_bounds(tiny_cnn: Path, tmp_path: Path) -> None:
    (tmp_path / "graph.json").write_text("{")
    files = ModelFiles(tiny_cnn / "model.so", tmp_path / "graph.json", None)
    assert model_input_bounds(files) == {}  # the door reports graph.json, in its order


def test_a_header_declaring_more_than_the_input_is_refused_unread(tmp_path: Path) -> None:
    """Only the header is on disk: the size check comes before any data is looked for."""
    p = tmp_path / "x.npy"
    p.write_bytes(bombs.npy_header((1 << 30,)))
    with pytest.raises(InputError) as err:
        load_npy("data", str(p), DATA)
    assert str(err.value) == (f"--input data: {p}: its header declares float32[1073741824] "
                              "(4 GiB of data), more than the 12 KiB input 'data' "
                              "(float32[1, 32, 32, 3]) of the model holds; refused before "
                              "reading it")


def test_a_file_holding_other_than_its_header_says_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "x.npy"
    p.write_bytes(bombs.npy_header((1, 32, 32, 3)) + bytes(12288 + 4))
    with pytest.raises(InputError, match=r"\(12288 bytes of data\) but 12292 bytes follow"):
        load_npy("data", str(p), DATA)
    p.write_bytes(bombs.npy_header((2, 2)) + bytes(3))
    with pytest.raises(InputError, match="16 bytes of data.* but 3 bytes follow"):
        load_npy("data", str(p))


def test_a_stream_is_read_one_byte_past_the_data(tmp_path: Path) -> None:
    head = bombs.npy_header((1, 32, 32, 3))
    with bombs.fifo_stream(tmp_path / "x.npy", head, 8 << 20) as fifo, \
            pytest.raises(InputError, match="but more than 12288 bytes follow"):  # 12 KiB wanted
        load_npy("data", str(fifo), DATA)


@pytest.mark.parametrize("arr", [np.arange(24, dtype="<f4").reshape(2, 3, 4),
                                 np.asfortranarray(np.arange(6, dtype="int64").reshape(2, 3)),
                                 np.arange(4, dtype=">f8"), np.array(3.5, "float16"),
                                 np.zeros((0, 3), "float32")])
def test_valid_files_read_as_np_load_reads_them(tmp_path: Path, arr: np.ndarray) -> None:
    np.save(tmp_path / "x.npy", arr)
    got = parse_input_args([f"x={tmp_path / 'x.npy'}"], {"x": InputBound(arr.nbytes, "")})
    want = np.load(tmp_path / "x.npy")
    assert got["x"].dtype == want.dtype and got["x"].shape == want.shape
    assert np.array_equal(got["x"], want) and got["x"].flags.writeable


@pytest.mark.parametrize("blob,message", [
    (b"\x93NUMPY", "header is truncated"),
    (b"\x93NUMPY\x03\x00", "version 3.0 is not supported"),
    (b"\x93NUMPY\x01\x00\xff\xff", "claims 65535 bytes; numpy writes at most 10000"),
    (b"\x93NUMPY\x01\x00\x10\x00{'descr'", "header is truncated"),
    (b"\x93NUMPY\x01\x00\x08\x00{}      ", "header is corrupt"),
    (b"PK\x03\x04", "not a .npy file")])
def test_broken_headers_are_named(tmp_path: Path, blob: bytes, message: str) -> None:
    (tmp_path / "x.npy").write_bytes(blob)
    with pytest.raises(InputError, match=message):
        load_npy("x", str(tmp_path / "x.npy"))
