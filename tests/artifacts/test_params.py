"""Tests for minigraph.params: blob round trip, corruption, check_params, TVM cross-check."""
from __future__ import annotations

import json
import os
import re
import struct
from pathlib import Path
from typing import Any

import ml_dtypes  # a TVM dependency: always there
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from minigraph.artifacts.graph_json import parse_graph
from minigraph.artifacts.params import (
    NDARRAY_MAGIC,
    PARAMS_MAGIC,
    ParamCheck,
    check_params,
    load_params,
    load_params_file,
    save_params,
    save_params_file,
)
from minigraph.errors import InputError, ParamsError

DTYPES = ["float32", "float16", "float64", "bfloat16", "int8", "int16", "int32", "int64",
          "uint8", "uint16", "uint32", "uint64", "bool"]


def _dtype(name: str) -> np.dtype:
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def _array(name: str, shape: tuple[int, ...]) -> np.ndarray:
    n = int(np.prod(shape))
    return (np.arange(n) % 7 - 2).astype(_dtype(name)).reshape(shape)


def small_blob() -> bytes:
    return save_params({"w": np.arange(6, dtype="float32").reshape(2, 3),
                        "b": np.array([1, 2], dtype="int8")})


def _header_offset(blob: bytes, name: str) -> int:
    """Byte offset of the array header that follows the name table, for patching."""
    return blob.index(struct.pack("<Q", NDARRAY_MAGIC)) if name == "first" else \
        blob.rindex(struct.pack("<Q", NDARRAY_MAGIC))


def _assert_same(a: np.ndarray, b: np.ndarray) -> None:
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


# ---------------------------------------------------------------- round trip

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 3), (0, 4), (1, 1, 2, 2)])
def test_round_trip(dtype: str, shape: tuple[int, ...]) -> None:
    arr = _array(dtype, shape)
    out = load_params(save_params({"p": arr}))
    _assert_same(out["p"], arr)
    assert out["p"].flags.writeable and out["p"].flags.c_contiguous


def test_round_trip_many_and_order() -> None:
    params = {f"p{i}": _array(d, (i % 3 + 1, 2)) for i, d in enumerate(DTYPES)}
    params["ünïcode name"] = np.ones(2, "float32")
    out = load_params(save_params(params))
    assert list(out) == list(params)
    for k in params:
        _assert_same(out[k], params[k])


def test_empty_dict() -> None:
    assert load_params(save_params({})) == {}


def test_non_contiguous_and_big_endian_input() -> None:
    a = np.arange(12, dtype=">i4").reshape(3, 4)
    t = np.arange(12, dtype="float64").reshape(3, 4).T
    out = load_params(save_params({"a": a, "t": t}))
    assert out["a"].dtype == np.dtype("int32") and (out["a"] == a).all()
    assert (out["t"] == t).all() and out["t"].flags.c_contiguous


def test_loaded_arrays_are_independent_copies() -> None:
    blob = bytearray(small_blob())
    out = load_params(blob)
    out["w"][0, 0] = 42.0
    blob[-1] ^= 0xFF
    assert out["w"][0, 0] == 42.0 and load_params(small_blob())["w"][0, 0] == 0.0


def test_layout_matches_format_notes() -> None:
    blob = save_params({"x": np.array([1.0], dtype="float32")})
    assert struct.unpack_from("<QQQQ", blob) == (PARAMS_MAGIC, 0, 1, 1)
    assert blob[32:33] == b"x"
    assert struct.unpack_from("<QQQiiiBBHqq", blob, 33) == (
        1, NDARRAY_MAGIC, 0, 1, 0, 1, 2, 32, 1, 1, 4)


def test_legacy_uint1_bool_loads_as_bool() -> None:
    blob = bytearray(save_params({"m": np.array([True, False, True])}))
    code_at = _header_offset(bytes(blob), "first") + 16 + 8 + 4
    assert blob[code_at:code_at + 2] == bytes([6, 8])  # what TVM 0.27 writes: kDLBool
    blob[code_at:code_at + 2] = bytes([1, 1])  # what older TVM wrote: uint1
    out = load_params(bytes(blob))["m"]
    assert out.dtype == np.bool_ and out.tolist() == [True, False, True]


@pytest.mark.parametrize("value", [np.array([1 + 2j]), np.array(["a"]), np.array([None]),
                                   np.array([1], dtype="float128")
                                   if hasattr(np, "float128") else np.array([1j])])
def test_save_unsupported_dtype(value: np.ndarray) -> None:
    with pytest.raises(ParamsError, match="unsupported dtype"):
        save_params({"x": value})


def test_save_non_string_name() -> None:
    with pytest.raises(ParamsError, match="names must be strings"):
        save_params({1: np.zeros(1)})  # type: ignore[dict-item]


# ---------------------------------------------------------------- corruption

@pytest.mark.parametrize("blob", [b"", b"\x00" * 7, b"\x00" * 64,
                                  struct.pack("<Q", NDARRAY_MAGIC) + b"\x00" * 40])
def test_bad_magic(blob: bytes) -> None:
    with pytest.raises(ParamsError, match="not a TVM param blob"):
        load_params(blob)


def test_not_bytes() -> None:
    with pytest.raises(ParamsError):
        load_params("abc")  # type: ignore[arg-type]


def test_truncation_at_every_offset() -> None:
    blob = small_blob()
    for n in range(len(blob)):
        with pytest.raises(ParamsError):
            load_params(blob[:n])


def test_truncation_message_names_array_and_offset() -> None:
    blob = small_blob()
    with pytest.raises(ParamsError, match=r"byte offset \d+ reading array 'b' data"):
        load_params(blob[:-1])
    with pytest.raises(ParamsError, match=r"byte offset 33 reading length of name 1"):
        load_params(blob[:40])


def test_trailing_bytes() -> None:
    with pytest.raises(ParamsError, match="1 trailing bytes"):
        load_params(small_blob() + b"\x00")


def _patch(blob: bytes, offset: int, fmt: str, *values: Any) -> bytes:
    b = bytearray(blob)
    struct.pack_into(fmt, b, offset, *values)
    return bytes(b)


# offsets inside the first array header (after its magic): see NDArray::Save
_DEV, _NDIM, _CODE, _SHAPE0 = 16, 24, 28, 32


@pytest.mark.parametrize("field,fmt,value,match", [
    (0, "<Q", 0x1234, "bad magic"),
    (_DEV, "<i", 2, "device type 2"),
    (_NDIM, "<i", -1, "ndim -1"),
    (_NDIM, "<i", 1000, "ndim 1000"),
    (_CODE, "<BBH", (2, 32, 4), "lanes=4"),
    (_CODE, "<BBH", (3, 64, 1), "code=3"),
    (_CODE, "<BBH", (2, 8, 1), "code=2 bits=8"),
    (_SHAPE0, "<q", -2, "impossible shape"),
    (_SHAPE0, "<q", 2**62, "impossible shape"),
    (_SHAPE0, "<q", 3, "nbytes is 24 but float32[3, 3] needs 36"),
])
def test_corrupt_header(field: int, fmt: str, value: Any, match: str) -> None:
    blob = small_blob()
    values = value if isinstance(value, tuple) else (value,)
    bad = _patch(blob, _header_offset(blob, "first") + field, fmt, *values)
    with pytest.raises(ParamsError, match=re.escape(match)):
        load_params(bad)


def test_wrong_nbytes() -> None:
    blob = small_blob()
    nbytes_at = _header_offset(blob, "last") + 32 + 8  # 1-d array: one shape dim
    with pytest.raises(ParamsError, match="nbytes is 3 but int8"):
        load_params(_patch(blob, nbytes_at, "<q", 3))


def test_absurd_empty_shape_rejected_not_crashing() -> None:
    blob = save_params({"e": np.zeros((0, 1, 1), "float32")})
    at = _header_offset(blob, "first") + _SHAPE0
    bad = _patch(blob, at, "<qqq", 0, 2**40, 2**40)  # 0 elements, but numpy would overflow
    with pytest.raises(ParamsError, match="impossible shape"):
        load_params(bad)


def test_count_mismatch() -> None:
    blob = small_blob()
    at = _header_offset(blob, "first") - 8
    with pytest.raises(ParamsError, match="2 names but 3 arrays"):
        load_params(_patch(blob, at, "<Q", 3))


def test_huge_name_count_and_length() -> None:
    with pytest.raises(ParamsError, match="claims"):
        load_params(struct.pack("<QQQ", PARAMS_MAGIC, 0, 2**60))
    with pytest.raises(ParamsError, match="truncated"):
        load_params(struct.pack("<QQQQ", PARAMS_MAGIC, 0, 1, 2**63) + b"abc")


def test_duplicate_names() -> None:
    blob = save_params({"a": np.zeros(1), "b": np.zeros(1)})
    with pytest.raises(ParamsError, match="'a' more than once"):
        load_params(blob.replace(struct.pack("<Q", 1) + b"b", struct.pack("<Q", 1) + b"a"))


def test_bad_utf8_name() -> None:
    blob = save_params({"a": np.zeros(1)})
    with pytest.raises(ParamsError, match="not UTF-8"):
        load_params(blob.replace(b"\x00a\x01", b"\x00\xff\x01", 1))


# ---------------------------------------------------------------- files

def test_file_round_trip_is_atomic(tmp_path: Path) -> None:
    p = tmp_path / "model.params"
    p.write_bytes(b"old")
    save_params_file(p, {"x": np.ones(3, "float32")})
    assert os.listdir(tmp_path) == ["model.params"]  # no temp file left behind
    assert load_params_file(p)["x"].tolist() == [1.0, 1.0, 1.0]


def test_save_file_unsupported_leaves_old(tmp_path: Path) -> None:
    p = tmp_path / "model.params"
    p.write_bytes(b"old")
    with pytest.raises(ParamsError):
        save_params_file(p, {"x": np.array([1j])})
    assert p.read_bytes() == b"old" and os.listdir(tmp_path) == ["model.params"]


def test_save_file_bad_dir(tmp_path: Path) -> None:
    p = tmp_path / "no" / "such" / "model.params"
    with pytest.raises(InputError, match="cannot write params file"):
        save_params_file(p, {})


def test_load_file_missing(tmp_path: Path) -> None:
    p = tmp_path / "absent.params"
    err = pytest.raises(InputError, load_params_file, p).value
    assert type(err) is InputError and str(p) in str(err)


def test_load_file_corrupt_names_path(tmp_path: Path) -> None:
    p = tmp_path / "bad.params"
    p.write_bytes(b"garbage!garbage!")
    with pytest.raises(ParamsError, match="bad.params.*not a TVM param blob"):
        load_params_file(p)


# ---------------------------------------------------------------- check_params

GRAPH = {
    "nodes": [{"op": "null", "name": "data", "inputs": []},
              {"op": "null", "name": "p3", "inputs": []},
              {"op": "null", "name": "bias", "inputs": []},
              {"op": "tvm_op", "name": "conv", "inputs": [[0, 0], [1, 0], [2, 0]],
               "attrs": {"func_name": "f", "num_inputs": "3", "num_outputs": "1",
                         "flatten_data": "0"}}],
    "arg_nodes": [0, 1, 2], "heads": [[3, 0]],
    "attrs": {"dltype": ["list_str", ["float32", "float32", "int64", "float32"]],
              "shape": ["list_shape", [[1, 3, 8, 8], [64, 3, 7, 7], [], [1, 64, 2, 2]]],
              "storage_id": ["list_int", [0, 1, 2, 3]]}}


@pytest.fixture
def graph() -> Any:
    return parse_graph(json.dumps(GRAPH))


def _good() -> dict[str, np.ndarray]:
    return {"p3": np.zeros((64, 3, 7, 7), "float32"), "bias": np.array(5, "int64")}


def test_check_ok(graph: Any) -> None:
    c = check_params(graph, _good(), input_names=["data"])
    assert c == ParamCheck((), (), ()) and c.ok and c.summary() == "ok"


def test_check_missing(graph: Any) -> None:
    params = _good()
    del params["bias"]
    c = check_params(graph, params)
    assert c.missing == ("data", "bias") and not c.ok
    assert check_params(graph, params, ("data",)).missing == ("bias",)


def test_check_unknown(graph: Any) -> None:
    params = {**_good(), "extra": np.zeros(1), "conv": np.zeros(1)}
    c = check_params(graph, params, ["data"])
    assert c.unknown == ("extra", "conv") and not c.ok and "unknown: extra, conv" in c.summary()


def test_check_mismatched(graph: Any) -> None:
    params = {"p3": np.zeros((64, 3, 3, 3), "float32"), "bias": np.array(5, "int32")}
    c = check_params(graph, params, ["data"])
    assert c.mismatched == ("p3: expected float32[64, 3, 7, 7], got float32[64, 3, 3, 3]",
                            "bias: expected int64[], got int32[]")


def test_check_input_also_given_as_param(graph: Any) -> None:
    params = {**_good(), "data": np.zeros((1, 3, 8, 8), "float32")}
    assert check_params(graph, params, ["data"]).ok


# ---------------------------------------------------------------- fuzzing

def _load_or_params_error(blob: bytes) -> None:
    try:
        load_params(blob)
    except ParamsError:
        pass


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200))
def test_fuzz_random_bytes(blob: bytes) -> None:
    _load_or_params_error(blob)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=120))
def test_fuzz_random_bytes_after_magic(tail: bytes) -> None:
    _load_or_params_error(struct.pack("<QQ", PARAMS_MAGIC, 0) + tail)


_FLIP_BLOB = save_params({"w": np.arange(6, dtype="float32").reshape(2, 3),
                          "m": np.array([True, False]), "s": np.array(3, "int64")})


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=4))
def test_fuzz_byte_flips(flips: list[tuple[int, int]]) -> None:
    blob = bytearray(_FLIP_BLOB)
    for pos, value in flips:
        blob[pos % len(blob)] = value
    _load_or_params_error(bytes(blob))


# ---------------------------------------------------------------- TVM cross-check

def _tvm_runtime() -> Any:
    import tvm  # the pinned TVM 0.27 has both: a missing one is a failure, not a skip
    assert hasattr(tvm.runtime, "save_param_dict") and hasattr(tvm.runtime, "load_param_dict")
    return tvm


def _to_tvm(tvm: Any, arr: np.ndarray) -> Any:
    make = getattr(tvm.runtime, "tensor", None) or tvm.nd.array
    return make(arr)


def test_tvm_loads_our_bytes_and_we_load_theirs() -> None:
    tvm = _tvm_runtime()
    params = {f"p_{d}": _array(d, (2, 3)) for d in DTYPES}
    params["scalar"] = np.array(2.5, "float32")
    params["empty"] = np.zeros((0, 3), "int32")
    theirs = tvm.runtime.load_param_dict(save_params(params))
    assert set(theirs.keys()) == set(params)
    for k, v in params.items():
        _assert_same(theirs[k].numpy(), v)
    blob = bytes(tvm.runtime.save_param_dict({k: _to_tvm(tvm, v) for k, v in params.items()}))
    ours = load_params(blob)
    assert set(ours) == set(params)
    for k, v in params.items():
        _assert_same(ours[k], v)


def test_tvm_bytes_identical_for_one_array() -> None:
    tvm = _tvm_runtime()
    for d in DTYPES:
        arr = _array(d, (2, 2))
        assert bytes(tvm.runtime.save_param_dict({"x": _to_tvm(tvm, arr)})) == \
            save_params({"x": arr}), d


def _arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    return {"p0": rng.standard_normal((4, 3)).astype("float32"),
            "p1": np.arange(5, dtype="int64"), "scalar": np.array(2.5, dtype="float16")}


@pytest.mark.parametrize("save", [np.savez, np.savez_compressed])
def test_npz_archives_load_like_param_blobs(tmp_path, save):
    """`np.savez(f, **params)` is the two-line export from `export_tvm`'s params: read by
    magic, whatever the file is called, into what the same arrays give as a TVM blob."""
    arrays = _arrays()
    save(tmp_path / "w.npz", **arrays)
    (tmp_path / "w.npz").rename(tmp_path / "weights.params")  # the name does not decide
    got = load_params_file(tmp_path / "weights.params")
    want = load_params(save_params(arrays))
    assert list(got) == list(want)
    for name in want:
        assert got[name].dtype == want[name].dtype and np.array_equal(got[name], want[name])


def test_npz_that_a_param_blob_cannot_hold_is_refused(tmp_path):
    np.savez(tmp_path / "obj.npz", w=np.array([{"a": 1}], dtype=object))
    with pytest.raises(ParamsError, match=r"obj\.npz: not a readable numpy \.npz"):
        load_params_file(tmp_path / "obj.npz")
    np.savez(tmp_path / "c.npz", w=np.ones(2, dtype="complex64"))
    with pytest.raises(ParamsError, match=r"c\.npz: param 'w' has unsupported dtype complex64"):
        load_params_file(tmp_path / "c.npz")
    (tmp_path / "cut.npz").write_bytes((tmp_path / "c.npz").read_bytes()[:40])
    with pytest.raises(ParamsError, match=r"cut\.npz: not a readable numpy \.npz"):
        load_params_file(tmp_path / "cut.npz")
