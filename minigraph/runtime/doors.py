"""Front doors: which door a model's files take, decided once, and the one executor behind all.

A model reaches minigraph through one of three doors; everything after ``open_model`` (run,
profile, diagnose, explain) is the same whichever door it came in through:

- ``legacy``: graph.json + a model.so built by Relay/NNVM-era TVM (old packed C ABI), or a
  Relay ``export_library`` that embeds its graph (runtime/legacy/);
- ``relax-vm``: a Relax VM executable exported by ``tvm.compile(...).export_library`` (no
  graph.json: the graph is derived from the executable; runtime/relax_vm/);
- ``graph``: graph.json + a model.so built by TVM 0.27 (TVM-FFI kernels), e.g. by
  ``minigraph build`` (the executor core's own ``Executor.from_files``).

``locate`` (artifacts/model_files.py) turns what was typed into files; artifacts/library.py
``classify`` reads the library once; ``DOOR_TABLE`` below picks the first door that takes the
files, as tinygrad's lowerer picks a runner. This is the only module that knows all three doors.
Counterpart: ``tvm.contrib.graph_executor.create`` / ``relax.VirtualMachine``.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from ..artifacts.buildinfo import read_builds
from ..artifacts.library import Abi, LibraryFacts, classify
from ..artifacts.model_files import ModelFiles, locate  # noqa: F401  (the doors' API: locate, then open)
from ..errors import InputError
from .executor import Executor
from .kernels import check_library_path
from .legacy.door import open_legacy
from .link import link_export
from .opened import DoorKind, OpenedModel
from .relax_vm.door import imported_function, open_vm


@dataclass(frozen=True)
class Door:
    name: DoorKind
    takes: Callable[[ModelFiles, LibraryFacts], bool]    # read from the facts, never the name
    open: Callable[[ModelFiles, LibraryFacts, "Options"], OpenedModel]


@dataclass(frozen=True)
class Options:
    """How to open: ``force`` the memory check; ``complete``: refuse a graph whose build.json
    names weights that no params file gives (False: values/policy.py decides, with --fill)."""

    force: bool = False
    complete: bool = True
    # a Relax VM function's symbolic sizes: by name (--shape n=128), and the inputs given
    # (their shapes fill the shape heap); other doors' graphs have static shapes
    symbols: tuple[tuple[str, int], ...] = ()
    inputs: tuple[tuple[str, object], ...] = ()


def _open_legacy(files: ModelFiles, facts: LibraryFacts, opts: Options) -> OpenedModel:
    ex = open_legacy(files, facts, force=opts.force)
    return OpenedModel(DoorKind.LEGACY, files, ex, facts, {})


def _open_vm(files: ModelFiles, facts: LibraryFacts, opts: Options) -> OpenedModel:
    ex, derivation, params, build = open_vm(files, force=opts.force, facts=facts,
                                            with_build=True, symbols=dict(opts.symbols),
                                            inputs=dict(opts.inputs))
    return OpenedModel(DoorKind.RELAX_VM, files, ex, facts, build, derivation, params)


def _open_graph(files: ModelFiles, facts: LibraryFacts | None, opts: Options) -> OpenedModel:
    """``facts`` None: the library could not be classified; from_files then reports graph.json's
    problems first and the library's after, in the order it checks them."""
    assert files.graph is not None  # the door takes only files with a graph.json
    builds = read_builds(files.lib, files.graph)  # build.json, read once
    ex = Executor.from_files(files.lib, files.graph, files.params, force=opts.force,
                             facts=facts, builds=builds, complete=opts.complete)
    return OpenedModel(DoorKind.GRAPH, files, ex, facts or classify(files.lib), builds[1])


DOOR_TABLE: tuple[Door, ...] = (  # first match wins
    Door(DoorKind.LEGACY, lambda files, facts: facts.legacy, _open_legacy),
    Door(DoorKind.RELAX_VM, lambda files, facts: files.graph is None and facts.abi is Abi.RELAX_VM,
         _open_vm),
    Door(DoorKind.GRAPH, lambda files, facts: files.graph is not None, _open_graph),
)
assert {d.name for d in DOOR_TABLE} == set(DoorKind)  # every kind has its door


def linked(files: ModelFiles) -> ModelFiles:
    """The files, with a .tar/.o export (TVM's export_library) linked into a shared library."""
    lib = link_export(files.lib)
    return files if lib == files.lib else replace(files, lib=lib)


def _no_door(files: ModelFiles, facts: LibraryFacts) -> InputError:
    """No graph.json, and the library is not an executable: say what it is instead."""
    if facts.modules or facts.era.startswith("TVM <="):
        return InputError(f"{files.lib}: built by TVM before 0.21 ({facts.era}); TVM 0.27 cannot "
                          "load it as an executable. Pass its graph.json too, or recompile the "
                          "model with tvm.compile")
    return InputError(f"{files.lib}: no graph.json given, and this library holds no Relax VM "
                      "executable (kernels only?); pass MODEL.so GRAPH.json")


def door_for(files: ModelFiles, facts: LibraryFacts) -> Door:
    """The door these files take."""
    door = next((d for d in DOOR_TABLE if d.takes(files, facts)), None)
    if door is None:
        raise _no_door(files, facts)
    return door


def _facts(files: ModelFiles) -> LibraryFacts | None:
    """The library's facts; None when it cannot be read but a graph.json was given (the graph
    door then says what is wrong with which file, graph.json first)."""
    try:
        return classify(files.lib)
    except InputError:
        if files.graph is None:
            raise
        return None


def door_of(files: ModelFiles) -> str:
    """Which front door these files take (read from the library, not guessed from names)."""
    files = linked(files)
    if files.graph is None:
        check_library_path(files.lib)
    facts = _facts(files)
    return "graph" if facts is None else door_for(files, facts).name


def open_model(files: ModelFiles, *, force: bool = False, complete: bool = True,
               symbols: dict[str, int] | None = None, inputs: dict | None = None
               ) -> OpenedModel:
    """Opens the model through its door: the executor with its params bound and every check
    done, and what was decided on the way (``complete``, ``symbols``, ``inputs``: see
    ``Options``; the inputs are not set here, only their shapes read)."""
    files = linked(files)
    if files.graph is None:
        check_library_path(files.lib)
    facts = _facts(files)
    opts = Options(force, complete, tuple(sorted((symbols or {}).items())),
                   tuple((inputs or {}).items()))
    door = door_for(files, facts) if facts is not None else None
    if opts.symbols and (door is None or door.name is not DoorKind.RELAX_VM):
        raise InputError(f"{files.lib}: --shape gives sizes of a Relax VM function's symbolic "
                         "dimensions; this model's graph has static shapes")
    if door is None:
        return _open_graph(files, None, opts)
    return door.open(files, facts, opts)


def open_executor(files: ModelFiles, *, force: bool = False) -> Executor:
    """The executor for any door (``open_model(...).executor``), as the Python API gives it."""
    return open_model(files, force=force).executor


def vm_reference(model: OpenedModel) -> dict:
    """What the Relax VM protocols run on, as ``measure_protocols`` keywords: the executable
    itself when the library is one (the relax-vm door, or a directory written by ``import``:
    its kernel names are the graph's), else model.vm.so beside model.so (``minigraph build``
    writes it; build.json maps the names). ``vm_build``: the build.json beside ``vm_lib`` when
    it is the one already read (the executable's own), else None (read when needed)."""
    if not model.is_vm_executable:
        return {"vm_lib": model.files.lib.with_name("model.vm.so"), "vm_names": None,
                "vm_function": "main", "vm_build": None}
    function = getattr(model.derivation, "function", None) or \
        imported_function(model.files, model.facts)
    return {"vm_lib": model.files.lib,
            "vm_names": {op.func_name: op.func_name for op in model.executor.ops},
            "vm_function": function, "vm_build": model.build}
