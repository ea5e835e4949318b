"""``minigraph import``: a Relax VM executable -> a build directory the graph door runs.

Writes ``graph.json`` (the derived graph, TVM graph-executor format), ``model.params`` (the
embedded constants as ``c[k]``, plus the function's parameters found in ``--params``),
``model.so`` (a copy of the executable: its library holds the kernels graph.json names) and
``import.json`` (where it came from, the VM's storage plan, what became of every builtin and
the digests of the files it wrote).
Before writing, the derived graph is checked against a traced run of the VM on the same
seeded inputs (runtime/relax_vm/trace.py): kernels, shapes, dataflow, storage and outputs
must agree.
Never clobbered: the output directory may not be the one the executable is in, and no file
written may be one read (the executable, ``--params``), ``--force`` or not; files an earlier
import did not write (another model's build: its graph.json, model.params, model.so,
build.json, model.vm.so) are replaced only with ``force``. The set is written in a staging
area and moved into place complete (fileio/staging.py), so what is read stays intact until
the new set is whole, and a failed import leaves the directory as it was.
Counterpart: what ``relay.build`` + ``export_library`` produced for the graph executor.
"""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..artifacts.buildinfo import file_digests
from ..artifacts.graph_json import dump_graph
from ..artifacts.params import save_params
from ..errors import InputError, MinigraphError
from ..fileio import json_document, read_file, same_file, sha256_file, write_atomic
from ..fileio.staging import install_dir, staging_area
from ..runtime.doors import ModelFiles
from ..runtime.relax_vm.derive import Derivation
from ..runtime.relax_vm.door import open_vm
from ..runtime.relax_vm.trace import verify as verify_run
from ..values.inputs import random_inputs

FORMAT = "minigraph-vm-import/1"
_WRITTEN = ("graph.json", "model.params", "model.so", "import.json")
# what a build writes beside those (compiler.ARTIFACTS): they describe the model an import
# replaces, so with --force they go with it (a stale build.json's digest would refuse model.so)
_BUILD_BESIDE = ("build.json", "model.vm.so")
_MAX_RECORD = 64 << 20  # import.json is a few KiB to a few MiB; anything larger is not ours


@dataclass(frozen=True)
class ImportResult:
    out_dir: Path
    derivation: Derivation
    written: tuple[Path, ...]
    unbound: tuple[str, ...]     # parameters with no value in model.params
    verified: str | None         # the cross-check's summary (None: skipped)
    replaced: tuple[str, ...] = ()  # files another build or the user made, gone (``force``)


def _record(lib: Path, d: Derivation, verified: str | None) -> dict:
    return {"format": FORMAT, "source": os.fspath(lib), "function": d.function, "sizes": d.sizes,
            "verified": verified, "notes": list(d.notes),
            "storage": [{"sid": s.sid, "kind": s.kind, "pc": s.pc, "vm_nbytes": s.vm_nbytes}
                        for s in d.storages],
            "op_pcs": list(d.op_pcs),
            "builtins": [{"pc": b.pc, "name": b.name, "role": b.role} for b in d.builtins]}


def _unchanged(path: Path, rec: object) -> bool:
    """``path`` still holds the bytes an import recorded (size first: cheap)."""
    if not isinstance(rec, dict):
        return False
    try:
        return path.is_file() and path.stat().st_size == rec.get("nbytes") \
            and sha256_file(path) == rec.get("sha256")
    except OSError:
        return False


def _from_earlier_import(out: Path) -> set[str]:
    """The names in ``out`` an earlier import wrote and nobody changed since: those its
    import.json records with their digests (and import.json itself)."""
    try:
        doc = json_document(read_file(out / "import.json", "import.json", _MAX_RECORD),
                            str(out / "import.json"))
    except InputError:  # absent, unreadable, not JSON: nothing there is known to be ours
        return set()
    if not isinstance(doc, dict) or doc.get("format") != FORMAT \
            or not isinstance(doc.get("files"), dict):
        return set()
    return {"import.json"} | {n for n, rec in doc["files"].items()
                              if n in _WRITTEN and _unchanged(out / n, rec)}


def _foreign(out: Path) -> list[str]:
    """Files in ``out`` the import would replace that no earlier import wrote."""
    there = [n for n in _WRITTEN + _BUILD_BESIDE if os.path.lexists(out / n)]
    ours = _from_earlier_import(out) if there else set()
    return [n for n in there if n not in ours]


def check_import_out(lib: Path, out: Path, params: Path | None, force: bool) -> list[str]:
    """InputError, before anything is derived, if the import would write over what it reads
    (always) or over files no earlier import wrote (unless ``force``); returns those files."""
    if out.exists() and not out.is_dir():
        raise InputError(f"-o {out}: exists and is not a directory; name a directory")
    for name in _WRITTEN:  # through symlinks, '..' and hard links (fileio.same_file)
        for what, src in (("the executable", lib), ("the --params file", params)):
            if src is not None and same_file(out / name, src):
                raise InputError(f"-o {out}: would overwrite {what} {src} with the "
                                 f"{name} it writes; name another directory")
    foreign = _foreign(out)
    if same_file(out, lib.parent) or same_file(out, Path(os.path.realpath(lib)).parent):
        others = [n for n in foreign if not same_file(out / n, lib)]
        beside = f", and {', '.join(others)} beside it, which the import would replace" \
            if others else ""
        raise InputError(f"-o {out}: is the directory of the executable {lib} this command "
                         f"reads{beside}; name another -o directory (--force does not change this)")
    if foreign and not force:
        raise InputError(f"-o {out}: already holds {', '.join(foreign)}, which minigraph import "
                         "did not write (another model's build?); --force replaces them, or "
                         "name another -o directory")
    return foreign


def _write(out: Path, lib: Path, graph: str, params: bytes, record: dict) -> tuple[Path, ...]:
    """The four files built in a staging area, then moved into ``out`` as one set (replacing
    an earlier import's, and with it a build's build.json and model.vm.so)."""
    with staging_area(out) as area:  # removed however the block ends
        f = area.files
        write_atomic(f / "graph.json", graph)
        write_atomic(f / "model.params", params)
        try:
            shutil.copyfile(lib, f / "model.so")
        except OSError as err:
            raise InputError(f"cannot copy {lib} into {out}: {err.strerror or err}") from None
        record["files"] = file_digests(f, _WRITTEN[:3])  # what a later import may replace
        write_atomic(f / "import.json", json.dumps(record, indent=1))
        install_dir(f, out, owned=_WRITTEN + _BUILD_BESIDE)
    return tuple(out / name for name in _WRITTEN)


def import_executable(lib: str | os.PathLike, out_dir: str | os.PathLike,
                      params_path: str | os.PathLike | None = None, *,
                      function: str | None = None, verify: bool = True, seed: int = 0,
                      force: bool = False, symbols: dict[str, int] | None = None
                      ) -> ImportResult:
    """Derives (at the sizes ``symbols`` gives a function with symbolic dimensions),
    cross-checks (unless ``verify`` is False) and writes the build directory. ``force``:
    allocate past the memory check, and replace files in ``out_dir`` no import wrote."""
    lib, out = Path(lib), Path(out_dir)
    params_file = Path(params_path) if params_path else None
    replaced = check_import_out(lib, out, params_file, force)
    vm = open_vm(ModelFiles(lib, None, params_file), force=force, function=function,
                 symbols=symbols)
    ex, d, params = vm.executor, vm.derivation, vm.params
    summary = None
    if verify:
        ex.set_input(**random_inputs(ex, {}, seed))
        problems, summary = verify_run(ex, d, lib)
        if problems:
            raise MinigraphError(f"{lib}: the derived graph disagrees with a traced VM run: "
                                 + "; ".join(problems[:3]))
    names = [n for n in ex.input_names() if n not in d.constants]
    values = {**d.constants, **{n: params[n] for n in names if n in params}}
    written = _write(out, lib, dump_graph(d.graph), save_params(values),
                     _record(lib, d, summary))
    return ImportResult(out, d, written, tuple(n for n in names if n not in params), summary,
                        tuple(replaced))
