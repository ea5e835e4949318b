"""What opening a model decided, kept: the door it came in through, its files, the executor,
what the classifier read of the library and, for a Relax VM executable, the derivation.

Every stage after loading (profile, diagnose, the protocols, explain, the remote jobs) takes an
``OpenedModel``, so nothing asks again what kind of library it is or reads a file again.
Counterpart: what ``graph_executor.create`` / ``relax.VirtualMachine`` hold of their module.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from enum import Enum
from typing import Mapping

from ..artifacts.library import Abi, LibraryFacts
from ..artifacts.model_files import ModelFiles
from .debug import DebugExecutor


class DoorKind(str, Enum):
    """The front door a model came in through (runtime/doors.py DOOR_TABLE decides it once);
    a str whose value is what reports and saved documents say."""

    GRAPH = "graph"          # graph.json + a TVM-FFI kernel library (minigraph's builds)
    LEGACY = "legacy"        # graph.json + a library of the old packed C ABI (Relay, NNVM)
    RELAX_VM = "relax-vm"    # a Relax VM executable alone, its graph derived from bytecode

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class OpenedModel:
    door: DoorKind
    files: ModelFiles               # as located (a .tar/.o export: the linked library)
    executor: DebugExecutor         # params bound, every check done
    facts: LibraryFacts             # artifacts/library.py classify(files.lib), read once
    build: dict                     # build.json of the graph (beside graph.json, else the library)
    lib_build: dict                 # build.json beside the library (model.vm.so's too)
    # runtime/relax_vm/derive.py Derivation for the relax-vm door (None for the others): the
    # derived graph's VM storages, builtins and notes, as `explain` and `import` show them
    # (typed object: the core imports no door, tests/package/test_layout.py)
    derivation: object | None = None
    params: dict | None = None      # the arrays read from files.params, if any were

    @property
    def is_vm_executable(self) -> bool:
        """True if the library is a Relax VM executable (the relax-vm door, or a directory
        written by ``import`` whose model.so is the executable itself)."""
        return self.facts.abi is Abi.RELAX_VM


@dataclass(frozen=True)
class VmReference:
    """What TVM's own Relax VM protocols run on (protocols/relax_vm.py): the executable
    (None or a missing file: they are skipped, saying so), its build.json as read when the
    model was opened (its digest of the file, its names), the VM kernel name -> graph
    func_name map (None: build.json's ``vm_names``) and the VM function that runs the model.
    runtime/doors.py ``vm_reference`` makes it from an OpenedModel."""

    lib: str | os.PathLike | None
    build: dict
    names: Mapping[str, str] | None = None
    function: str = "main"
