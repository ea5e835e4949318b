"""``minigraph import``: a Relax VM executable -> a build directory the graph door runs.

Writes ``graph.json`` (the derived graph, TVM graph-executor format), ``model.params`` (the
embedded constants as ``c[k]``, plus the function's parameters found in ``--params``),
``model.so`` (a copy of the executable: its library holds the kernels graph.json names) and
``import.json`` (where it came from, the VM's storage plan and what became of every builtin).
Before writing, the derived graph is checked against a traced run of the VM on the same
seeded inputs (runtime/relax_vm/trace.py): kernels, shapes, dataflow, storage and outputs
must agree.
Counterpart: what ``relay.build`` + ``export_library`` produced for the graph executor.
"""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..artifacts.graph_json import dump_graph
from ..artifacts.params import save_params
from ..errors import InputError, MinigraphError
from ..fileio import same_file, write_atomic
from ..runtime.doors import ModelFiles
from ..runtime.relax_vm.derive import Derivation
from ..runtime.relax_vm.door import open_vm
from ..runtime.relax_vm.trace import verify as verify_run
from ..values.inputs import random_inputs

FORMAT = "minigraph-vm-import/1"


@dataclass(frozen=True)
class ImportResult:
    out_dir: Path
    derivation: Derivation
    written: tuple[Path, ...]
    unbound: tuple[str, ...]     # parameters with no value in model.params
    verified: str | None         # the cross-check's summary (None: skipped)


def _record(lib: Path, d: Derivation, verified: str | None) -> dict:
    return {"format": FORMAT, "source": os.fspath(lib), "function": d.function, "sizes": d.sizes,
            "verified": verified, "notes": list(d.notes),
            "storage": [{"sid": s.sid, "kind": s.kind, "pc": s.pc, "vm_nbytes": s.vm_nbytes}
                        for s in d.storages],
            "op_pcs": list(d.op_pcs),
            "builtins": [{"pc": b.pc, "name": b.name, "role": b.role} for b in d.builtins]}


def _prepare(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(f"-o {out}: cannot create the directory: {err.strerror or err}") \
            from None


def _copy(src: Path, dst: Path) -> None:
    tmp = dst.with_name(f".{dst.name}.tmp{os.getpid()}")
    try:
        shutil.copyfile(src, tmp)
        os.replace(tmp, dst)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise InputError(f"cannot write {dst}: {err.strerror or err}") from None


_WRITTEN = ("graph.json", "model.params", "model.so", "import.json")


def import_executable(lib: str | os.PathLike, out_dir: str | os.PathLike,
                      params_path: str | os.PathLike | None = None, *,
                      function: str | None = None, verify: bool = True, seed: int = 0,
                      force: bool = False, symbols: dict[str, int] | None = None
                      ) -> ImportResult:
    """Derives (at the sizes ``symbols`` gives a function with symbolic dimensions),
    cross-checks (unless ``verify`` is False) and writes the build directory."""
    lib, out = Path(lib), Path(out_dir)
    for name in _WRITTEN:  # through symlinks, '..' and hard links (fileio.same_file)
        for what, src in (("the executable", lib), ("the --params file", params_path)):
            if src is not None and same_file(out / name, src):
                raise InputError(f"-o {out}: would overwrite {what} {src} with the "
                                 f"{name} it writes; name another directory")
    ex, d, params = open_vm(ModelFiles(lib, None, Path(params_path) if params_path else None),
                            force=force, function=function, symbols=symbols)
    summary = None
    if verify:
        ex.set_input(**random_inputs(ex, {}, seed))
        problems, summary = verify_run(ex, d, lib)
        if problems:
            raise MinigraphError(f"{lib}: the derived graph disagrees with a traced VM run: "
                                 + "; ".join(problems[:3]))
    names = [n for n in ex.input_names() if n not in d.constants]
    values = {**d.constants, **{n: params[n] for n in names if n in params}}
    _prepare(out)
    written = tuple(out / name for name in _WRITTEN)
    write_atomic(written[0], dump_graph(d.graph))
    write_atomic(written[1], save_params(values))
    _copy(lib, written[2])
    write_atomic(written[3], json.dumps(_record(lib, d, summary), indent=1))
    return ImportResult(out, d, written, tuple(n for n in names if n not in params), summary)
