"""Front doors: which door a model's files take, decided once, and the one executor behind all.

A model reaches minigraph through one of three doors; everything after ``open_model`` (run,
profile, diagnose, explain) is the same whichever door it came in through:

- ``legacy``: graph.json + a model.so built by Relay/NNVM-era TVM (old packed C ABI), or a
  Relay ``export_library`` that embeds its graph (runtime/legacy/);
- ``relax-vm``: a Relax VM executable exported by ``tvm.compile(...).export_library`` (no
  graph.json: the graph is derived from the executable; runtime/relax_vm/);
- ``graph``: graph.json + a model.so built by TVM 0.27 (TVM-FFI kernels), e.g. by
  ``minigraph build`` (the debug executor's own ``DebugExecutor.from_files``).

``locate`` (artifacts/model_files.py) turns what was typed into files; artifacts/library.py
``classify`` reads the library once; ``DOOR_TABLE`` below picks the first door that takes the
files, as tinygrad's lowerer picks a runner. This is the only module that knows all three doors.
Each door makes the debug executor (runtime/debug.py: every command runs ops one at a time, a
crash named by its op), or a subclass of it given as ``executor_class`` (the API's).
Counterpart: ``tvm.contrib.graph_executor.create`` / ``relax.VirtualMachine``.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from ..artifacts.library import Abi, LibraryFacts
from ..artifacts.model_files import ModelFiles, locate  # noqa: F401  (the doors' API: locate, then open)
from ..artifacts.read_once import ModelArtifacts, read_artifacts
from ..errors import InputError
from .debug import DebugExecutor
from .kernels import check_library_path
from .legacy.door import open_legacy
from .link import link_export
from .opened import DoorKind, OpenedModel, VmReference
from .relax_vm.door import imported_function, open_artifacts
from .relax_vm.shapes import given_by


@dataclass(frozen=True)
class Door:
    name: DoorKind
    takes: Callable[[ModelFiles, LibraryFacts], bool]    # read from the facts, never the name
    open: Callable[[ModelArtifacts, "Options"], OpenedModel]


@dataclass(frozen=True)
class Options:
    """How to open: ``force`` the memory check; ``complete``: refuse a graph whose build.json
    names weights that no params file gives (False: values/policy.py decides, with --fill);
    ``executor_class``: the debug executor, or a subclass of it to make instead."""

    force: bool = False
    complete: bool = True
    # a Relax VM function's symbolic sizes: by name (--shape n=128), and the inputs given
    # (their shapes fill the shape heap); other doors' graphs have static shapes
    symbols: tuple[tuple[str, int], ...] = ()
    inputs: tuple[tuple[str, object], ...] = ()
    executor_class: type[DebugExecutor] = DebugExecutor


def _open_legacy(art: ModelArtifacts, opts: Options) -> OpenedModel:
    ex = open_legacy(art.files, art.facts, force=opts.force, executor_class=opts.executor_class)
    return OpenedModel(DoorKind.LEGACY, art.files, ex, art.facts, {}, art.lib_build)


def _open_vm(art: ModelArtifacts, opts: Options) -> OpenedModel:
    vm = open_artifacts(art, force=opts.force, symbols=dict(opts.symbols),
                        inputs=dict(opts.inputs), executor_class=opts.executor_class)
    return OpenedModel(DoorKind.RELAX_VM, art.files, vm.executor, art.facts, vm.build,
                       art.lib_build, vm.derivation, vm.params)


def _open_graph(art: ModelArtifacts, opts: Options) -> OpenedModel:
    """An unreadable library (``art.readable`` False) is reported once graph.json has been
    checked: from_artifacts reports the graph's problems first, in the order it checks them."""
    ex = opts.executor_class.from_artifacts(art, art.files.params, force=opts.force,
                                            complete=opts.complete)
    return OpenedModel(DoorKind.GRAPH, art.files, ex, art.facts, art.graph_build, art.lib_build)


DOOR_TABLE: tuple[Door, ...] = (  # first match wins
    Door(DoorKind.LEGACY, lambda files, facts: facts.legacy, _open_legacy),
    Door(DoorKind.RELAX_VM, lambda files, facts: files.graph is None and facts.abi is Abi.RELAX_VM,
         _open_vm),
    Door(DoorKind.GRAPH, lambda files, facts: files.graph is not None, _open_graph),
)
assert {d.name for d in DOOR_TABLE} == set(DoorKind)  # every kind has its door
# a library the classifier cannot read, given with a graph.json: the graph door, which says
# what is wrong with which file, graph.json first
GRAPH_DOOR = next(d for d in DOOR_TABLE if d.name is DoorKind.GRAPH)


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


def _read(files: ModelFiles) -> ModelArtifacts:
    """The files linked (a .tar/.o export) and read once (artifacts/read_once.py)."""
    files = linked(files)
    if files.graph is None:
        check_library_path(files.lib)
    return read_artifacts(files)


def door_of(files: ModelFiles) -> str:
    """Which front door these files take (read from the library, not guessed from names)."""
    art = _read(files)
    return door_for(art.files, art.facts).name if art.readable else str(DoorKind.GRAPH)


def open_model(files: ModelFiles, *, force: bool = False, complete: bool = True,
               symbols: dict[str, int] | None = None, inputs: dict | None = None,
               executor_class: type[DebugExecutor] = DebugExecutor) -> OpenedModel:
    """Opens the model through its door: the executor with its params bound and every check
    done, and what was decided on the way (``complete``, ``symbols``, ``inputs``,
    ``executor_class``: see ``Options``; the inputs are not set here, only their shapes read)."""
    art = _read(files)
    opts = Options(force, complete, tuple(sorted((symbols or {}).items())),
                   tuple((inputs or {}).items()), executor_class)
    door = door_for(art.files, art.facts) if art.readable else GRAPH_DOOR
    if opts.symbols and door.name is not DoorKind.RELAX_VM:
        given = sorted({given_by(v) for _, v in opts.symbols})  # --shape, --sweep
        raise InputError(f"{art.files.lib}: {' and '.join(given)} give"
                         f"{'s' if len(given) == 1 else ''} sizes of a Relax VM function's "
                         "symbolic dimensions; this model's graph has static shapes")
    return door.open(art, opts)


def open_executor(files: ModelFiles, *, force: bool = False,
                  executor_class: type[DebugExecutor] = DebugExecutor) -> DebugExecutor:
    """The executor for any door (``open_model(...).executor``), as the Python API gives it
    (``executor_class``: the API's, which adds ``profile``)."""
    return open_model(files, force=force, executor_class=executor_class).executor


def vm_reference(model: OpenedModel) -> VmReference:
    """What the Relax VM protocols run on: the executable
    itself when the library is one (the relax-vm door, or a directory written by ``import``:
    its kernel names are the graph's), else model.vm.so beside model.so (``minigraph build``
    writes it; build.json maps the names). Its build.json is the one beside the library, as
    read when the model was opened (model.vm.so lies beside model.so)."""
    if not model.is_vm_executable:
        return VmReference(model.files.lib.with_name("model.vm.so"), model.lib_build)
    function = getattr(model.derivation, "function", None) or \
        imported_function(model.files, model.facts)
    return VmReference(model.files.lib, model.lib_build,
                       {op.func_name: op.func_name for op in model.executor.ops}, function)
