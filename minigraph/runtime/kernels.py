"""model.so -> kernel table (mirrors GraphExecutor's ``module_.GetFunction(func_name)``).

The file is vetted before dlopen (artifacts/library.py classifies it: complete, this machine's,
exports TVM-FFI kernels), because dlopen of a truncated or foreign file can kill the process
instead of failing. Every
func_name is then resolved up front, so a missing kernel is reported before anything runs,
with the closest names the library really exports.
"""
from __future__ import annotations

import difflib
import os
import re
from pathlib import Path
from typing import Callable, Iterable

from ..artifacts.buildinfo import check_cpu, check_digest, read_build
from ..artifacts.library import VM_MARK, LibraryFacts, classify
from ..errors import InputError, MissingKernelError, last_line
from ..measure.inflight import FLIGHT

# lazy: TVM (~1.2 s to import) is imported where it is called; TVM-free commands load this module


def _vet(facts: LibraryFacts) -> None:
    """Refuses, before dlopen, anything that is not this TVM's kernel library."""
    if facts.abi.ffi:
        return
    p = facts.path
    if facts.legacy:
        raise InputError(f"{p}: built by an older TVM ({facts.era}: it exports no __tvm_ffi_* "
                         "kernels); open it through runtime.doors.open_executor (as the CLI "
                         "does), which runs such kernels, or rebuild it with `minigraph build`")
    raise InputError(f"{p}: not a TVM kernel library (it exports no __tvm_ffi_* kernels); "
                     "pass the model.so written by `minigraph build`")


def check_library_path(path: str | os.PathLike) -> Path:
    """InputError unless ``path`` names a file (what to say of a directory or a missing one)."""
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{p}: is a directory; pass the model.so file inside it")
    if p.exists() and not p.is_file():  # a FIFO or a device: never opened (it could block)
        raise InputError(f"{p}: not a regular file (a FIFO or device); pass the model.so file")
    if not p.is_file():
        raise InputError(f"{p}: no such library (build one with `python -m minigraph build`)")
    return p


def tvm_path(path: str | os.PathLike) -> str:
    """``path`` as the text TVM takes: TVM encodes file names as UTF-8, while Python decodes
    them with the locale's codec (ASCII under LC_ALL=C, leaving 'ü' as surrogate escapes that
    UTF-8 refuses). The file name's own bytes, read as UTF-8, name the same file; a name whose
    bytes are not UTF-8 cannot be passed to TVM at all: InputError."""
    raw = os.fsencode(os.path.abspath(path))  # a name without a slash: dlopen would search
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{os.fsdecode(raw)!a}: this path is not valid UTF-8, and TVM takes "
                         "file names as UTF-8; rename it or pass a path without those "
                         "bytes") from None


def load_library(path: str | os.PathLike):
    """Loads the TVM shared library at ``path`` (reading its facts and its build.json here:
    a caller that has read them calls ``open_library``)."""
    p = check_library_path(path)
    return open_library(p, classify(p), read_build(p))


def open_library(path: Path, facts: LibraryFacts, build: dict):
    """Loads a TVM shared library whose facts (artifacts/library.py) and build.json were read;
    a foreign or broken file, one built for a CPU with instructions this one lacks, or one
    whose bytes differ from those build.json recorded, is an InputError, before dlopen."""
    check_cpu(path, build)  # first, before dlopen: foreign-CPU kernels die of SIGILL mid-run
    p = check_library_path(path)
    _vet(facts)
    check_digest(p, build)  # a damaged copy of a built library: refused before dlopen
    import tvm  # noqa: F401  (loads TVM's runtime library, whose symbols the kernels use)
    import tvm_ffi
    FLIGHT.phase(f"loading {p.name} (dlopen runs its initialisers)")
    try:  # what tvm.runtime.load_module calls for a .so, minus its os.path checks (done above)
        return tvm_ffi.load_module(tvm_path(p))
    except Exception as err:  # TVM raises its own error types for dlopen failures
        raise InputError(dlopen_failure(p, last_line(err))) from err


# TVM wraps dlerror() as "... Failed to load dynamic shared library PATH DLERROR"
_DLERROR = re.compile(r"Failed to load dynamic shared library (?:\S+) (?P<reason>.*)$")


def dlopen_failure(path: Path, message: str) -> str:
    """The one-line error for a library TVM could not open: dlopen's own reason first (a
    missing file is a missing file, not a TVM version), then what an undefined symbol means."""
    m = _DLERROR.search(message)
    reason = m.group("reason") if m else message
    reason = reason.removeprefix(f"{path}: ").removeprefix(f"{tvm_path(path)}: ")
    hint = ("; the library needs a symbol this TVM does not export: it was built for another "
            "TVM version" if "undefined symbol" in reason else "")
    return f"{path}: dlopen failed: {reason}{hint}"


def kernel_module(module):
    """The module whose functions are the kernels: a Relax VM executable's root module holds
    bytecode and imports its kernel library (``_lib``); time_evaluator needs that library."""
    if module.kind == "library":
        return module
    return next((m for m in module.imports if m.kind == "library"), module)


def _kernels_of(path: str | os.PathLike) -> tuple[str, ...]:
    try:
        return classify(path).kernels
    except InputError:
        return ()


def _missing_hint(name: str, known: tuple[str, ...]) -> str:
    if VM_MARK.removeprefix("__tvm_ffi_") in known:
        return "; this looks like a Relax VM library (model.vm.so): pass model.so instead"
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    if close:
        return f"; closest: {', '.join(close)}"
    return f"; the library exports {len(known)} kernels" if known else ""


def resolve(module, names: Iterable[str], library_path: str | os.PathLike | None = None,
            known: tuple[str, ...] = ()) -> dict[str, Callable]:
    """func_name -> packed function, for every name; MissingKernelError lists the closest of
    the ``known`` kernel names (the classifier's ``LibraryFacts.kernels``; read from
    ``library_path`` only on that error path when not given)."""
    table: dict[str, Callable] = {}
    for name in dict.fromkeys(names):
        fn = module.get_function(name, query_imports=True) if _has(module, name) else None
        if fn is None:
            known = known or (_kernels_of(library_path) if library_path else ())
            raise MissingKernelError(f"kernel '{name}' is not in {library_path or 'the library'}"
                              f"{_missing_hint(name, known)} (was graph.json built together "
                              "with this model.so?)")
        table[name] = fn
    return table


def _has(module, name: str) -> bool:
    try:
        return bool(module.implements_function(name, query_imports=True))
    except TypeError:
        return bool(module.implements_function(name))
