"""Front doors: which artifacts the user named, and the one executor behind all of them.

A model reaches minigraph through one of three doors; everything after ``open_executor`` (run,
profile, diagnose, explain) is the same whichever door it came in through:

- ``graph``: graph.json + a model.so built by TVM 0.27 (TVM-FFI kernels), e.g. by
  ``minigraph build``;
- ``legacy``: graph.json + a model.so built by Relay/NNVM-era TVM (old packed C ABI);
- ``relax-vm``: a Relax VM executable exported by ``tvm.compile(...).export_library`` (no
  graph.json: the graph is derived from the executable).

``locate`` turns what was typed (a build directory, ``model.so graph.json``, or one library)
into files; ``door_of`` tells the doors apart by reading the library, never by its name.
Counterpart: ``tvm.contrib.graph_executor.create`` / ``relax.VirtualMachine``.
"""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..artifacts.model_files import ModelFiles, locate  # noqa: F401  (the doors' API: locate, then open)
from ..errors import InputError

if TYPE_CHECKING:  # the executor imports TVM; locating files must not
    from .executor import Executor

DOORS = ("graph", "legacy", "relax-vm")


def linked(files: ModelFiles) -> ModelFiles:
    """The files, with a .tar/.o export (TVM's export_library) linked into a shared library."""
    from .link import link_export
    lib = link_export(files.lib)
    return files if lib == files.lib else replace(files, lib=lib)


def door_of(files: ModelFiles) -> str:
    """Which front door these files take (read from the library, not guessed from names).
    Old packed-C-ABI libraries take the legacy door (graph.json given, or embedded in the
    library). Otherwise, without graph.json the library must embed a Relax VM executable:
    anything else (a kernel library, a corrupt file) is a one-line InputError."""
    from ..artifacts.library import is_legacy
    if is_legacy(linked(files).lib):  # its ELF symbols say old packed C ABI (artifacts/library.py)
        return "legacy"
    if files.graph is None:
        from .relax_vm.door import is_vm_executable
        if not is_vm_executable(files.lib):
            raise InputError(f"{files.lib}: no graph.json given, and this library holds no "
                             "Relax VM executable (kernels only?); pass MODEL.so GRAPH.json")
        return "relax-vm"
    return "graph"


def vm_reference(ex: "Executor", files: ModelFiles) -> dict:
    """What the Relax VM protocols run on, as ``measure_protocols`` keywords: the executable
    itself when the library is one (the relax-vm door, or a directory written by ``import``:
    its kernel names are the graph's), else model.vm.so beside model.so (``minigraph build``
    writes it; build.json maps the names)."""
    from .relax_vm.door import imported_function, is_vm_executable
    try:
        own = is_vm_executable(files.lib)
    except InputError:  # e.g. a Relay-era model.so of the legacy door: not an executable
        own = False
    if not own:
        return {"vm_lib": files.lib.with_name("model.vm.so"), "vm_names": None,
                "vm_function": "main"}
    return {"vm_lib": files.lib, "vm_names": {op.func_name: op.func_name for op in ex.ops},
            "vm_function": imported_function(files)}


def open_executor(files: ModelFiles, *, force: bool = False) -> "Executor":
    """The executor for any door, with its params bound and every check done."""
    files = linked(files)
    door = door_of(files)
    if door == "graph":
        from .executor import Executor
        return Executor.from_files(files.lib, files.graph, files.params, force=force)
    if door == "legacy":
        from .legacy.door import open_legacy
        return open_legacy(files, force=force)
    from .relax_vm.door import open_vm_executor
    return open_vm_executor(files, force=force)
