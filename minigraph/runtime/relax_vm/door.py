"""The relax-vm front door: a Relax VM executable (``tvm.compile(...).export_library``) ->
Derivation (derive.py) -> Executor over the executable's own kernels.

Counterpart: ``relax.VirtualMachine(rt_mod, dev)`` (``VirtualMachineImpl::LoadExecutable`` /
``InitFuncPool``): the bytecode is read from the file before dlopen (the classifier's module
tree, parsed by bytecode.py), the library is then vetted and loaded as for model.so, and every
kernel the graph calls is looked up in the executable's own library, as the VM does first. Embedded constants become params named
``c[k]``; parameters of ``main`` are bound from ``--params`` (a TVM param blob, by parameter
name) or, left unbound, get seeded data like any other input.
"""
from __future__ import annotations

import json
import os

import numpy as np

from ...artifacts.buildinfo import read_build
from ...artifacts.library import LibraryFacts, classify
from ...artifacts.library_bin import SYMBOL
from ...artifacts.model_files import ModelFiles
from ...artifacts.params import load_params_file
from ...artifacts.signatures import ArgSpec, read_signatures
from ...errors import InputError, ParamsError
from ..bind import check_graph_args, kernel_names
from ..executor import Executor
from ..kernels import kernel_module, load_library
from ..sources import Source
from .builtins import is_builtin
from .bytecode import VMExec, executable_of
from .derive import Derivation, derive


def kernel_symbols(exe: VMExec) -> tuple[str, ...]:
    """Packed functions of the function table that are not VM builtins: the kernels."""
    return tuple(f.name for f in exe.functions
                 if f.kind == "packed_func" and not is_builtin(f.name))


def read_vm(path: str | os.PathLike, facts: LibraryFacts | None = None) -> VMExec:
    """The executable in the library (from the classifier's facts: read once); InputError if
    the library holds none."""
    facts = facts if facts is not None else classify(path)
    exe = executable_of(facts.library_bin, path)
    if exe is None:
        raise InputError(f"{path}: not a Relax VM executable (no relax.VMExecutable in "
                         f"{SYMBOL}); a kernel library needs its graph.json: MODEL.so GRAPH.json")
    return exe


def imported_function(files: ModelFiles, facts: LibraryFacts | None = None) -> str:
    """The function the graph runs: the one import.json beside graph.json names (``import
    --function``), else the executable's entry function (main, or the only one)."""
    if files.graph is not None:
        try:
            doc = json.loads((files.graph.parent / "import.json").read_text())
            if isinstance(doc, dict) and isinstance(doc.get("function"), str):
                return doc["function"]
        except (OSError, ValueError):
            pass
    return read_vm(files.lib, facts).entry().name


def derive_file(lib: str | os.PathLike, params: dict[str, np.ndarray] | None = None,
                function: str | None = None, facts: LibraryFacts | None = None
                ) -> tuple[Derivation, dict[str, tuple[ArgSpec, ...]]]:
    """The derived graph of a library's executable, and the kernel signatures it recorded."""
    exe = read_vm(lib, facts)
    sigs = read_signatures(lib, kernel_symbols(exe))
    known = {n: (tuple(a.shape), a.dtype.name) for n, a in (params or {}).items()}
    try:
        return derive(exe, sigs, known, function), sigs
    except InputError as err:
        raise InputError(f"{lib}: {err}") from None


def _check_kernels(lib_mod, d: Derivation, path) -> None:
    """Every kernel must come from the executable's own library (the VM would also search
    TVM's global registry; minigraph times only what the file carries)."""
    ops = d.graph.op_nodes()
    for node, pc in zip(ops, d.op_pcs):
        if node.func_name.startswith("__") or lib_mod.implements_function(node.func_name):
            continue
        raise InputError(f"{path}: {d.function} instruction {pc} calls '{node.func_name}', "
                         "which is not in the executable's library (a global packed function "
                         "from another library?); only the file's own kernels can be run")


def _bind_params(ex: Executor, params: dict[str, np.ndarray], d: Derivation, source) -> None:
    names = set(ex.input_names()) - set(d.constants)
    unknown = [n for n in params if n not in names]
    if unknown:
        raise ParamsError(f"{source}: {', '.join(unknown[:5])} are not parameters of "
                          f"{d.function} (it takes {', '.join(sorted(names)[:8])})")
    ex.load_params(params, Source("params", os.fspath(source)))


def open_vm(files: ModelFiles, *, force: bool = False, function: str | None = None,
            facts: LibraryFacts | None = None, with_build: bool = False) -> tuple:
    """(Executor of the derived graph with constants and params bound, the derivation, the
    params read from ``files.params``), and with ``with_build`` the build.json beside it."""
    params = load_params_file(files.params) if files.params is not None else {}
    facts = facts if facts is not None else classify(files.lib)
    d, sigs = derive_file(files.lib, params, function, facts)
    build = read_build(files.lib)
    lib_mod = kernel_module(load_library(files.lib, build, facts))  # CPU checked, then dlopen
    _check_kernels(lib_mod, d, files.lib)
    check_graph_args(d.graph, sigs)
    kernels = {name: lib_mod.get_function(name) for name in kernel_names(d.graph)}
    ex = Executor(d.graph, kernels, module=lib_mod, force=force)
    ex.load_params(d.constants, Source("constant", "embedded in the executable"))
    if params:
        _bind_params(ex, params, d, files.params)
    return (ex, d, params, build) if with_build else (ex, d, params)
