"""The relax-vm front door: a Relax VM executable (``tvm.compile(...).export_library``) ->
Derivation (derive.py) -> Executor over the executable's own kernels.

Counterpart: ``relax.VirtualMachine(rt_mod, dev)`` (``VirtualMachineImpl::LoadExecutable`` /
``InitFuncPool``): the bytecode is read from the file before dlopen (the classifier's module
tree, parsed by bytecode.py), the library is then vetted and loaded as for model.so, and every
kernel the graph calls is looked up in the executable's own library, as the VM does first.
Embedded constants become params named ``c[k]``; parameters of ``main`` are bound from
``--params`` (a TVM param blob, by parameter name), or left to values/policy.py. A function
with symbolic dimensions is derived for the sizes given (shapes.py), running the library's
own shape functions.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ...artifacts.library import LibraryFacts
from ...artifacts.library_bin import SYMBOL
from ...artifacts.model_files import ModelFiles
from ...artifacts.params import load_params_file
from ...artifacts.read_once import ModelArtifacts, read_artifacts
from ...artifacts.signatures import ArgSpec, read_signatures
from ...errors import InputError, ParamsError
from ...fileio import read_bounded
from ..debug import DebugExecutor
from ..executor import Executor
from ..kernels import kernel_module, open_library
from ..load import check_graph_args
from ..sources import Source
from .builtins import is_builtin
from .bytecode import VMExec, executable_of
from .derive import Derivation, derive

# lazy: TVM (~1.2 s to import) is imported where it is called; TVM-free commands load this module
_MAX_IMPORT_JSON = 64 << 20  # bytes: import.json is a few KiB; anything larger is not ours


def kernel_symbols(exe: VMExec) -> tuple[str, ...]:
    """Packed functions of the function table that are not VM builtins: the kernels."""
    return tuple(f.name for f in exe.functions
                 if f.kind == "packed_func" and not is_builtin(f.name))


def read_vm(path: str | os.PathLike, facts: LibraryFacts) -> VMExec:
    """The executable in the library (from the classifier's facts: read once); InputError if
    the library holds none."""
    exe = executable_of(facts.library_bin, path)
    if exe is None:
        raise InputError(f"{path}: not a Relax VM executable (no relax.VMExecutable in "
                         f"{SYMBOL}); a kernel library needs its graph.json: MODEL.so GRAPH.json")
    return exe


def imported_function(files: ModelFiles, facts: LibraryFacts) -> str:
    """The function the graph runs: the one import.json beside graph.json names (``import
    --function``), else the executable's entry function (main, or the only one)."""
    if files.graph is not None:
        try:
            doc = json.loads(read_bounded(files.graph.parent / "import.json", _MAX_IMPORT_JSON,
                                          "import.json", "an import record may be"))
            if isinstance(doc, dict) and isinstance(doc.get("function"), str):
                return doc["function"]
        except (OSError, ValueError, InputError):  # absent or not ours: the entry function
            pass
    return read_vm(files.lib, facts).entry().name


class LibraryHost:
    """Calls the executable's own shape functions while deriving (shapes.py): loads the
    library (vetted first, as for any kernel) the first time one is needed, so a static
    executable is still derived without running any of its code."""

    def __init__(self, path: str | os.PathLike, facts: LibraryFacts, build: dict) -> None:
        self.path, self.facts, self.build, self._module = path, facts, build, None

    def module(self):
        """The kernel library (loaded once)."""
        if self._module is None:
            self._module = kernel_module(open_library(Path(self.path), self.facts,
                                                      self.build))
        return self._module

    def __call__(self, name: str, args: list) -> object:
        import tvm
        fn = self.module().get_function(name)
        if len(args) == 1 and isinstance(args[0], list):  # the heap: int64 slots, -1 unknown
            heap = tvm.runtime.tensor(np.array([-1 if v is None else v for v in args[0]],
                                               np.int64))
            fn(heap)
            return heap.numpy().tolist()
        return fn(*args)


def derive_file(lib: str | os.PathLike, params: dict[str, np.ndarray] | None = None,
                function: str | None = None, *, symbols: dict[str, int] | None = None,
                inputs: dict[str, np.ndarray] | None = None
                ) -> tuple[Derivation, dict[str, tuple[ArgSpec, ...]]]:
    """The derived graph of the executable at ``lib`` (read here) for the sizes given
    (``symbols`` by name, or read from the shapes of ``inputs``), and its kernel signatures."""
    art = read_artifacts(ModelFiles(Path(lib), None, None))
    return derive_artifacts(art, LibraryHost(lib, art.facts, art.lib_build), params, function,
                            symbols=symbols, inputs=inputs)


def derive_artifacts(art: ModelArtifacts, host: LibraryHost,
                     params: dict[str, np.ndarray] | None = None, function: str | None = None,
                     *, symbols: dict[str, int] | None = None,
                     inputs: dict[str, np.ndarray] | None = None
                     ) -> tuple[Derivation, dict[str, tuple[ArgSpec, ...]]]:
    """``derive_file`` from what was read once (artifacts/read_once.py); ``host`` runs the
    library's shape functions if the sizes need them."""
    lib = art.files.lib
    exe = read_vm(lib, art.facts)
    sigs = read_signatures(lib, kernel_symbols(exe))
    known = {n: (tuple(a.shape), a.dtype.name)
             for n, a in {**(params or {}), **(inputs or {})}.items()}
    try:
        return derive(exe, sigs, known, function, symbols, host), sigs
    except InputError as err:
        raise InputError(f"{lib}: {err}") from None


def _kernels(lib_mod, d: Derivation, path) -> tuple[dict, list[str]]:
    """func_name -> function: the executable's own library first, then, as the VM does, TVM's
    global registry (a packed function doing real work on tensors, destination-passing, is
    a timed op named after it); a name neither has is refused, naming the instruction."""
    import tvm
    table, notes = {}, []
    for node, pc in zip(d.graph.op_nodes(), d.op_pcs):
        name = node.func_name
        if name.startswith("__") or name in table:
            continue
        if lib_mod.implements_function(name):
            table[name] = lib_mod.get_function(name)
            continue
        fn = tvm.get_global_func(name, allow_missing=True)
        if fn is None:
            raise InputError(f"{path}: {d.function} instruction {pc} calls '{name}', which is "
                             "neither in the executable's library nor a packed function this "
                             "TVM registers; it cannot be run")
        table[name] = fn
        notes.append(f"op '{node.name}' calls TVM's global function '{name}' (not the "
                     "executable's library): timed as an op like the kernels")
    return table, notes


def _bind_params(ex: Executor, params: dict[str, np.ndarray], d: Derivation, source) -> None:
    names = set(ex.input_names()) - set(d.constants)
    unknown = [n for n in params if n not in names]
    if unknown:
        raise ParamsError(f"{source}: {', '.join(unknown[:5])} are not parameters of "
                          f"{d.function} (it takes {', '.join(sorted(names)[:8])})")
    ex.load_params(params, Source("params", os.fspath(source)))


@dataclass(frozen=True)
class OpenedVM:
    """What the door opened: the executor of the derived graph (constants and params bound),
    the derivation, the params read from ``files.params`` and the build.json beside the
    executable."""

    executor: DebugExecutor
    derivation: Derivation
    params: dict[str, np.ndarray]
    build: dict


def open_vm(files: ModelFiles, *, force: bool = False, function: str | None = None,
            symbols: dict[str, int] | None = None,
            inputs: dict[str, np.ndarray] | None = None) -> OpenedVM:
    """``open_artifacts`` of the files, read here (the API's and ``import``'s door)."""
    return open_artifacts(read_artifacts(files), force=force, function=function,
                          symbols=symbols, inputs=inputs)


def open_artifacts(art: ModelArtifacts, *, force: bool = False, function: str | None = None,
                   symbols: dict[str, int] | None = None,
                   inputs: dict[str, np.ndarray] | None = None,
                   executor_class: type[DebugExecutor] = DebugExecutor) -> OpenedVM:
    """The executable opened from what was read once; ``symbols`` and ``inputs`` give the
    sizes of a function with symbolic dimensions; ``executor_class``: the debug executor or a
    subclass (runtime/doors.py)."""
    files, build = art.files, art.lib_build
    params = load_params_file(files.params) if files.params is not None else {}
    host = LibraryHost(files.lib, art.facts, build)
    d, sigs = derive_artifacts(art, host, params, function, symbols=symbols, inputs=inputs)
    lib_mod = host.module()  # the CPU checked and the ELF vetted, then dlopen (once)
    kernels, notes = _kernels(lib_mod, d, files.lib)
    check_graph_args(d.graph, sigs)
    if notes:
        d = replace(d, notes=d.notes + tuple(notes))
    ex = executor_class(d.graph, kernels, module=lib_mod, force=force)
    ex.load_params(d.constants, Source("constant", "embedded in the executable"))
    if params:
        _bind_params(ex, params, d, files.params)
    return OpenedVM(ex, d, params, build)
