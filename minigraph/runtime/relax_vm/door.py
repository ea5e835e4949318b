"""The relax-vm front door: a Relax VM executable (``tvm.compile(...).export_library``) ->
Derivation (derive.py) -> Executor over the executable's own kernels.

Counterpart: ``relax.VirtualMachine(rt_mod, dev)`` (``VirtualMachineImpl::LoadExecutable`` /
``InitFuncPool``): the bytecode is read from the file before dlopen (bytecode.py), the
library is then vetted and loaded as for model.so, and every kernel the graph calls is looked up
in the executable's own library, as the VM does first. Embedded constants become params named
``c[k]``; parameters of ``main`` are bound from ``--params`` (a TVM param blob, by parameter
name) or, left unbound, get seeded data like any other input.
"""
from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

import numpy as np

from ...artifacts import elf
from ...artifacts.library_bin import SYMBOL, read_library_bin
from ...artifacts.params import load_params_file
from ...artifacts.signatures import ArgSpec, read_signatures
from ...errors import InputError, ParamsError
from ..bind import check_graph_args, kernel_names
from ..kernels import kernel_module, load_library
from .builtins import is_builtin
from .bytecode import VMExec, read_executable
from .derive import Derivation, derive

if TYPE_CHECKING:
    from ...artifacts.model_files import ModelFiles
    from ..executor import Executor

# what TVM before the FFI rewrite (<= 0.20, Relay and early Relax) linked into its libraries
_OLD_MARKS = ("__tvm_dev_mblob", "__tvm_module_ctx", "__tvm_main__")


def is_vm_executable(path: str | os.PathLike) -> bool:
    """True if the library embeds a Relax VM executable (read from the file, no dlopen).
    InputError for an unreadable or corrupt file, or a library from an older TVM."""
    lib = read_library_bin(path)
    if lib is not None:
        return any(kind == "relax.VMExecutable" for kind, _ in lib.modules)
    old = sorted(elf.read_image(path).exported() & set(_OLD_MARKS))
    if old:
        raise InputError(f"{path}: built by TVM before 0.21 (Relay era: it exports {old[0]}, "
                         f"not {SYMBOL}); TVM 0.27 cannot load it as an executable. Pass its "
                         "graph.json too, or recompile the model with tvm.compile")
    return False


def kernel_symbols(exe: VMExec) -> tuple[str, ...]:
    """Packed functions of the function table that are not VM builtins: the kernels."""
    return tuple(f.name for f in exe.functions
                 if f.kind == "packed_func" and not is_builtin(f.name))


def read_vm(path: str | os.PathLike) -> VMExec:
    exe = read_executable(path)
    if exe is None:
        raise InputError(f"{path}: not a Relax VM executable (no relax.VMExecutable in "
                         f"{SYMBOL}); a kernel library needs its graph.json: MODEL.so GRAPH.json")
    return exe


def entry_function(path: str | os.PathLike) -> str:
    """The name of the function a derivation of this executable takes (main, or the only)."""
    return read_vm(path).entry().name


def imported_function(files: "ModelFiles") -> str:
    """The function the graph runs: the one import.json beside graph.json names (``import
    --function``), else the executable's entry function."""
    if files.graph is not None:
        try:
            doc = json.loads((files.graph.parent / "import.json").read_text())
            if isinstance(doc, dict) and isinstance(doc.get("function"), str):
                return doc["function"]
        except (OSError, ValueError):
            pass
    return entry_function(files.lib)


def derive_file(lib: str | os.PathLike, params: dict[str, np.ndarray] | None = None,
                function: str | None = None
                ) -> tuple[Derivation, dict[str, tuple[ArgSpec, ...]]]:
    """The derived graph of a library's executable, and the kernel signatures it recorded."""
    exe = read_vm(lib)
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


def _bind_params(ex: "Executor", params: dict[str, np.ndarray], d: Derivation, source) -> None:
    names = set(ex.input_names()) - set(d.constants)
    unknown = [n for n in params if n not in names]
    if unknown:
        raise ParamsError(f"{source}: {', '.join(unknown[:5])} are not parameters of "
                          f"{d.function} (it takes {', '.join(sorted(names)[:8])})")
    ex.load_params(params)


def open_vm(files: "ModelFiles", *, force: bool = False, function: str | None = None
            ) -> tuple["Executor", Derivation, dict[str, np.ndarray]]:
    """(Executor of the derived graph with constants and params bound, the derivation, the
    params read from ``files.params``)."""
    from ..executor import Executor
    params = load_params_file(files.params) if files.params is not None else {}
    d, sigs = derive_file(files.lib, params, function)
    module = load_library(files.lib)  # vets the ELF and the CPU, then dlopen
    lib_mod = kernel_module(module)
    _check_kernels(lib_mod, d, files.lib)
    check_graph_args(d.graph, sigs)
    kernels = {name: lib_mod.get_function(name) for name in kernel_names(d.graph)}
    ex = Executor(d.graph, kernels, module=lib_mod, force=force)
    ex.load_params(d.constants)
    if params:
        _bind_params(ex, params, d, files.params)
    return ex, d, params


def open_vm_executor(files: "ModelFiles", *, force: bool = False) -> "Executor":
    """The relax-vm door of ``doors.open_executor``."""
    return open_vm(files, force=force)[0]
