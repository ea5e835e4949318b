"""A kernel that kills the process is named, never a mute death (issue #24): copies of tiny-cnn's
model.so whose code is overwritten where one kernel starts (ud2: SIGILL, int3: SIGTRAP, a load
from address 0: SIGSEGV) end `run`, `profile` and a diagnose worker with one error naming the
op, its kernel and the signal; and a damaged copy that build.json can recognise is refused
before it is loaded at all."""
from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import cli_runner
import pytest

from minigraph.artifacts.elf import read_image
from minigraph.artifacts.graph_json import load_graph
from minigraph.cli import main

CODE = {"SIGILL": bytes.fromhex("0f0b"),                 # ud2
        "SIGTRAP": bytes.fromhex("cc"),                  # int3
        "SIGSEGV": bytes.fromhex("48c7c0000000004c8b00")}  # mov rax, 0; mov r8, [rax]


def _patch_kernel(d: Path, op_index: int, code: bytes) -> tuple[str, str]:
    """Overwrites the first bytes of op ``op_index``'s kernel (its TVM-FFI entry, found in the
    ELF symbol table) with ``code``; returns (node name, kernel name)."""
    node = [n for n in load_graph(d / "graph.json").nodes if n.op == "tvm_op"][op_index]
    kernel = dict(node.attrs)["func_name"]
    image = read_image(d / "model.so")
    sym = image.symbol("__tvm_ffi_" + kernel)
    text = next(s for s in image.sections if s.addr <= sym.value < s.addr + s.size)
    data = bytearray((d / "model.so").read_bytes())
    at = sym.value - text.addr + text.offset
    data[at:at + len(code)] = code
    (d / "model.so").write_bytes(bytes(data))
    return node.name, kernel


def _rerecord(d: Path) -> None:
    """build.json told the patched bytes: a miscompiled kernel, not a damaged copy."""
    doc = json.loads((d / "build.json").read_text())
    doc["files"]["model.so"]["sha256"] = hashlib.sha256((d / "model.so").read_bytes()).hexdigest()
    (d / "build.json").write_text(json.dumps(doc))


@pytest.fixture
def broken(tiny_cnn: Path, tmp_path: Path):
    def make(signal_name: str, op_index: int = 1) -> tuple[Path, str, str]:
        d = tmp_path / signal_name
        shutil.copytree(tiny_cnn, d)
        name, kernel = _patch_kernel(d, op_index, CODE[signal_name])
        _rerecord(d)
        return d, name, kernel
    return make


def _cli(*argv: str) -> subprocess.CompletedProcess:
    return cli_runner.run(argv, timeout=600)


def _assert_named(proc: subprocess.CompletedProcess, signal_name: str, op_index: int,
                  name: str, kernel: str) -> str:
    last = proc.stderr.strip().splitlines()[-1]  # TVM's own SIGSEGV handler may speak first
    assert last.startswith("error: ") and "Traceback" not in proc.stderr, proc.stderr
    assert f"op {op_index} " in last and f"'{name}'" in last and f"kernel '{kernel}'" in last
    assert f"({signal_name}:" in last, last
    return last


@pytest.mark.subprocess
@pytest.mark.parametrize("signal_name, code", [("SIGILL", 132), ("SIGTRAP", 133),
                                               ("SIGSEGV", 139)])
def test_run_names_the_op_kernel_and_signal(broken, signal_name, code):
    d, name, kernel = broken(signal_name)
    proc = _cli("run", str(d))
    assert proc.returncode == code, proc.stderr
    last = _assert_named(proc, signal_name, 1, name, kernel)
    assert "during the checked run" in last


@pytest.mark.subprocess
@pytest.mark.parametrize("modes", [["first-run", "e2e"], ["e2e"]])
def test_profile_names_the_op_kernel_and_signal(broken, modes):
    """Also with e2e alone: its untimed first run goes op by op, so the op is known."""
    d, name, kernel = broken("SIGILL", op_index=2)
    proc = _cli("profile", str(d), "--quiet", *[a for m in modes for a in ("--mode", m)])
    assert proc.returncode == 132, proc.stderr
    last = _assert_named(proc, "SIGILL", 2, name, kernel)
    assert f"the {modes[0]} mode" in last


@pytest.mark.subprocess
@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_a_diagnose_worker_names_the_op_kernel_and_signal(broken, start):
    d, name, kernel = broken("SIGTRAP")
    proc = _cli("diagnose", str(d), "--quick", "--quiet", "--start", start)
    assert proc.returncode == 1, proc.stderr
    last = _assert_named(proc, "SIGTRAP", 1, name, kernel)
    assert "worker" in last and "timed iteration" in last


def test_a_damaged_copy_is_refused_before_it_is_loaded(tiny_cnn, tmp_path, capsys,
                                                       monkeypatch):
    """build.json recorded model.so's sha256: a copy whose bytes differ never reaches
    dlopen (no load, so no crash), with exit 2 naming the file."""
    d = tmp_path / "m"
    shutil.copytree(tiny_cnn, d)
    _patch_kernel(d, 1, CODE["SIGILL"])
    import tvm_ffi
    loaded = []
    monkeypatch.setattr(tvm_ffi, "load_module", lambda *a, **k: loaded.append(a))
    assert main(["run", str(d)]) == 2
    err = capsys.readouterr().err
    assert "model.so" in err and "differ from the ones build.json recorded" in err
    assert not loaded


def test_build_json_records_each_library_digest(tiny_cnn):
    files = json.loads((tiny_cnn / "build.json").read_text())["files"]
    for name in ("model.so", "model.vm.so"):
        assert files[name]["sha256"] == hashlib.sha256((tiny_cnn / name).read_bytes()).hexdigest()
        assert files[name]["nbytes"] == (tiny_cnn / name).stat().st_size


def test_the_in_flight_record_names_the_op_a_parent_reads(tiny_cnn, tmp_path):
    """The record a watched child keeps (measure/inflight.py): the phase, the op and its
    description, as its parent reads them after a crash."""
    from minigraph.measure.inflight import Flight, child_record, read_record
    from minigraph.runtime.debug import DebugExecutor
    with child_record(tmp_path) as (fd, path):
        assert read_record(fd).where() == "before any kernel ran"
        flight = Flight()
        assert flight.attach(path)
        flight.ops(lambda: ["op 0 (node 7 'a', kernel 'k')"])
        flight.phase("the first-run mode")
        flight.op(0)
        got = read_record(fd)
        assert got.where() == "op 0 (node 7 'a', kernel 'k') during the first-run mode"
        flight.phase("the e2e mode")
        assert "no single op in flight" in read_record(fd).where()
    ex = DebugExecutor.from_files(tiny_cnn / "model.so", tiny_cnn / "graph.json")
    assert ex.describe_op(1).startswith("op 1 (node 8 '") and "kernel '" in ex.describe_op(1)
