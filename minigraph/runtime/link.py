"""``export_library("model.tar")`` and ``.o`` exports -> a shared library, with the system's cc.

TVM <= 0.20 could export a model as object files (a .tar of ``lib0.o`` [+ ``devc.o``], or one
``.o``) for the user to link; ``tvm.contrib.cc.create_shared`` linked them with
``cc -shared -fPIC``. minigraph does the same when a C compiler is present, vetting each object
first (ELF relocatable object for this machine), and caches the result by content hash in a
private directory, so the diagnose workers (fresh processes) reuse one link.
"""
from __future__ import annotations

import os
import shutil
import stat
import tarfile
import tempfile
from pathlib import Path

from ..artifacts import elf
from ..artifacts.elf import identify
from ..artifacts.library import is_export
from ..errors import InputError
from ..fileio import regular_size, sha256_file
from ..measure.child import run_child

LINK_TIMEOUT_S = 300  # a linker that hangs (a full disk, a network home) is killed, said so

_MAX_MEMBER = 4 << 30  # bytes: an object file beyond this is not a model export


def _cache_dir() -> Path | None:
    """A directory only this user can write, or None (then nothing is cached)."""
    d = Path(tempfile.gettempdir()) / f"minigraph-{os.getuid()}" / "linked"
    try:
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
        st = d.parent.stat()
    except OSError:
        return None
    ok = st.st_uid == os.getuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    return d if ok else None


def _objects(path: Path, into: Path) -> list[Path]:
    """The object files of the export, copied into ``into`` and vetted."""
    if not tarfile.is_tarfile(path):
        out = [into / "lib0.o"]
        shutil.copyfile(path, out[0])
    else:
        out = []
        with tarfile.open(path) as tar:
            for m in tar.getmembers():
                name = os.path.basename(m.name)
                if not (m.isfile() and name.endswith(".o")) or m.size > _MAX_MEMBER:
                    continue
                target = into / f"{len(out)}_{name}"
                with tar.extractfile(m) as src, open(target, "wb") as dst:  # type: ignore[union-attr]
                    shutil.copyfileobj(src, dst)
                out.append(target)
    if not out:
        raise InputError(f"{path}: a .tar with no object files (.o) in it; pass the model "
                         "library, or the .tar that export_library wrote")
    for obj in out:
        with open(obj, "rb") as f:
            identify(f.read(64), f"{path} ({obj.name.partition('_')[2] or obj.name})")
    return out


def link_export(path: str | os.PathLike) -> Path:
    """The shared library linked from a .tar/.o export (cached); the path itself otherwise."""
    p = Path(path)
    if not is_export(p):
        return p
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        raise InputError(f"{p}: object files exported by TVM need linking into a shared "
                         "library and no C compiler (cc, gcc, clang) is installed; run "
                         "`cc -shared -fPIC -o model.so lib0.o` where one is, and pass model.so")
    regular_size(p, elf.MAX_LIBRARY_BYTES, "export", "a model library may be")
    digest = sha256_file(p)[:32]  # streamed in 1 MiB blocks: the export is never held whole
    cache = _cache_dir()
    if cache is not None and (cache / f"{digest}.so").is_file():
        return cache / f"{digest}.so"
    work = Path(tempfile.mkdtemp(prefix="minigraph-link-"))
    try:
        objs = _objects(p, work)
        out = work / "linked.so"
        proc = run_child([cc, "-shared", "-fPIC", "-o", str(out), *map(str, objs)],
                         timeout_s=LINK_TIMEOUT_S, what=f"linking with {cc}")
        if proc.returncode != 0:
            why = (proc.stderr.strip().splitlines() or ["no message"])[-1]
            raise InputError(f"{p}: linking its object files with {cc} failed: {why}")
        if cache is None:
            return out  # left in the temp dir for this process to load
        final = cache / f"{digest}.so"
        os.replace(out, final)
        return final
    finally:
        if cache is not None:
            shutil.rmtree(work, ignore_errors=True)
