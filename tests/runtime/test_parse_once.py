"""Decided once, kept: one profile of a Relax VM executable reads its ELF image, its embedded
module tree, its bytecode and its build.json once each, and the answer (the door, the facts,
the derivation) travels with the OpenedModel instead of being asked again."""
from __future__ import annotations

import collections

import pytest
import vm_models

from minigraph.artifacts import buildinfo, elf, library_bin
from minigraph.artifacts.model_files import locate
from minigraph.profile.session import profile_files
from minigraph.results.profile import Settings
from minigraph.runtime import doors
from minigraph.runtime.relax_vm import bytecode
from minigraph.threadpool.config import ThreadRequest

PARSERS = ((elf, "read_image"), (library_bin, "parse_library_bin"),
           (bytecode, "parse_executable"), (buildinfo, "_load"))


@pytest.fixture()
def counted(monkeypatch):
    """Every call of each parser, by parser name."""
    calls: collections.Counter = collections.Counter()
    for module, name in PARSERS:
        real = getattr(module, name)

        def wrapper(*args, _real=real, _name=name, **kwargs):
            calls[_name] += 1
            return _real(*args, **kwargs)
        monkeypatch.setattr(module, name, wrapper)
    return calls


def test_a_relax_vm_profile_parses_each_file_once(tmp_path, counted):
    lib = vm_models.onnx_executable(tmp_path)
    counted.clear()  # building it read nothing of ours; count from here
    settings = Settings(modes=("first-run", "e2e"), e2e_repeat=3, flush_nbytes=1 << 20)
    prof, model, failure = profile_files(locate(lib), settings, ThreadRequest(threads=1))
    assert failure is None and model.door == "relax-vm" and prof.relax_vm  # the VM's own, too
    assert dict(counted) == {"read_image": 1, "parse_library_bin": 1, "parse_executable": 1,
                             "_load": 1}, dict(counted)


def test_a_graph_door_profile_reads_its_library_and_build_json_once(tiny_cnn, counted):
    settings = Settings(modes=("e2e",), e2e_repeat=3, flush_nbytes=1 << 20)
    prof, model, _ = profile_files(locate(tiny_cnn), settings, ThreadRequest(threads=1))
    assert model.door == "graph" and model.facts.abi == "tvm-ffi" and not prof.relax_vm
    # build.json: one read, beside both model.so and graph.json
    assert counted["read_image"] == 1 and counted["_load"] == 1, dict(counted)


def test_the_door_table_decides_from_the_facts(tmp_path, tiny_cnn):
    lib = vm_models.onnx_executable(tmp_path)
    assert doors.open_model(locate(lib)).derivation is not None
    opened = doors.open_model(locate(tiny_cnn))
    assert opened.door == "graph" and opened.derivation is None
    assert [d.name for d in doors.DOOR_TABLE] == ["legacy", "relax-vm", "graph"]
