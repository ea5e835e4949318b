"""Legacy libraries minigraph cannot or must not run: one-line errors, never a crash.

Truncated, foreign-architecture (ELF for aarch64, Mach-O, PE), device-carrying and runtime-
calling libraries are refused before any dlopen; bad arguments are refused before any kernel
call; a failing kernel is an error naming it.
"""
from __future__ import annotations

import struct
from pathlib import Path

import cli_runner
import legacy_abi_fixtures as fx
import numpy as np
import pytest

from minigraph.artifacts.modblob import parse_blob
from minigraph.cli import main
from minigraph.errors import InputError, KernelError, MissingKernelError
from minigraph.runtime.doors import door_of, locate, open_executor


def _aarch64(p: Path) -> None:
    head = bytearray(64)
    head[:7] = b"\x7fELF\x02\x01\x01"
    struct.pack_into("<HHI", head, 16, 3, 183, 1)  # ET_DYN, EM_AARCH64
    p.write_bytes(bytes(head) + bytes(4096))


def _macho(p: Path) -> None:
    p.write_bytes(struct.pack("<II", 0xFEEDFACF, 0x0100000C) + bytes(4088))


def _pe(p: Path) -> None:
    head = bytearray(256)
    head[:2], head[128:132] = b"MZ", b"PE\0\0"
    struct.pack_into("<I", head, 60, 128)
    struct.pack_into("<H", head, 132, 0xAA64)
    p.write_bytes(bytes(head))


def _truncated(fraction: float):
    def make(p: Path, src: Path) -> None:
        data = src.read_bytes()
        p.write_bytes(data[:int(len(data) * fraction)])
    return make


def _device_blob(p: Path, _src: Path) -> None:
    blob = struct.pack("<Q", 2) + fx.dmlc_str("_lib") + fx.dmlc_str("cuda") + b"\x01" * 64
    fx.build_library(p, fx.MODEL_KERNELS, extra_c=fx.blob_c("__tvm_dev_mblob", blob))


def _extern(p: Path, _src: Path) -> None:
    fx.build_library(p, fx.MODEL_KERNELS + fx.EXTERN_KERNEL)


def _no_fini(p: Path, _src: Path) -> None:
    fx.build_library(p, fx.MODEL_KERNELS + fx.WHOAMI_KERNEL, "B", ("-nostartfiles",))


CASES = {  # name -> (make the library, words the one-line error must contain)
    "truncated headers": (_truncated(0.05), ("truncated or corrupt",)),
    "truncated segment": (_truncated(0.7), ("truncated",)),
    "aarch64 ELF": (lambda p, s: _aarch64(p), ("built for aarch64", "this machine is")),
    "Mach-O": (lambda p, s: _macho(p), ("Mach-O", "arm64")),
    "PE": (lambda p, s: _pe(p), ("Windows PE", "arm64")),
    "device module": (_device_blob, ("cuda module(s) in __tvm_dev_mblob",)),
    "extern calls": (_extern, ("packed functions TVM 0.27 does not provide",
                               "tvm.contrib.cblas.matmul")),
    "system-lib without _fini": (_no_fini, ("constructor cannot be neutralised",)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_library_is_one_line_error(name, legacy_model, tmp_path, capsys):
    make, words = CASES[name]
    d = legacy_model("A")
    lib = tmp_path / "deploy_lib.so"
    make(lib, d / "deploy_lib.so")
    code = main(["run", str(lib), str(d / "deploy_graph.json")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, err
    assert all(w in err for w in words), err


@pytest.mark.subprocess
@pytest.mark.parametrize("name", ["truncated segment", "aarch64 ELF", "device module"])
def test_bad_library_in_a_fresh_process_is_no_signal(name, legacy_model, tmp_path):
    make, _ = CASES[name]
    d = legacy_model("A")
    lib = tmp_path / "deploy_lib.so"
    make(lib, d / "deploy_lib.so")
    proc = cli_runner.run(["run", lib, d / "deploy_graph.json"], timeout=120)
    assert proc.returncode == 2 and proc.stderr.startswith("error: "), proc.stderr


def test_explain_names_what_is_inside_a_refused_library(tmp_path, legacy_model, capsys):
    lib = tmp_path / "dev.so"
    _device_blob(lib, lib)
    assert main(["explain", str(lib)]) == 0
    text = capsys.readouterr().out
    assert "modules in __tvm_dev_mblob: _lib, cuda" in text
    assert "minigraph can run it: no: it carries cuda module(s)" in text


def test_missing_kernel_names_the_closest(tmp_path, legacy_model):
    import json
    d = legacy_model("A")
    doc = fx.model_graph()
    doc["nodes"][6]["attrs"]["func_name"] = "fuse_meen"
    (tmp_path / "g.json").write_text(json.dumps(doc))
    with pytest.raises(MissingKernelError, match="closest: fuse_mean"):
        open_executor(locate(d / "deploy_lib.so", tmp_path / "g.json"))


def test_arguments_are_validated_before_the_kernel_is_called(legacy_model):
    import tvm

    from minigraph.runtime.legacy.kernels import kernel_table
    from minigraph.runtime.legacy.loader import load_legacy
    k = kernel_table(load_legacy(legacy_model("A") / "deploy_lib.so"),
                     ["fuse_split"])["fuse_split"]
    x, a, b = (tvm.runtime.empty(s, "float32") for s in ((4,), (2,), (2,)))
    raw = np.zeros(9, "float32")
    with pytest.raises(InputError, match="not 64-byte aligned"):
        k(np.frombuffer(raw.data, "float32", 4, offset=4), a, b)
    with pytest.raises(InputError, match="strided"):
        k(np.zeros(8, "float32")[::2], a, b)
    with pytest.raises(InputError, match="complex64"):
        k(np.zeros(4, "complex64"), a, b)
    with pytest.raises(KernelError, match="fuse_split: num_args should be 3"):
        k(x, a)  # the kernel's own check, reached safely: every argument was well formed
    with pytest.raises(KernelError, match=r"arg1.shape\[0\]"):
        k(x, tvm.runtime.empty((3,), "float32"), b)
    k(x, a, b)  # and it still works afterwards


def test_door_of_a_tvm_027_library_stays_graph(tiny_cnn):
    assert door_of(locate(tiny_cnn)) == "graph"


def test_module_blob_parsing():
    tree = struct.pack("<Q", 2) + struct.pack("<2Q", 0, 1) + struct.pack("<Q", 0)
    blob = struct.pack("<Q", 3) + fx.dmlc_str("_lib") + fx.dmlc_str("_import_tree") + tree + \
        fx.dmlc_str("opencl") + b"\x00" * 16
    parsed = parse_blob(struct.pack("<Q", len(blob)) + blob)
    assert parsed.modules == ("_lib", "_import_tree", "opencl") and not parsed.complete
    with pytest.raises(ValueError, match="truncated"):
        parse_blob(struct.pack("<Q", len(blob)) + blob[:20])
