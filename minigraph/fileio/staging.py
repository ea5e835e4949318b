"""A set of output files built in a staging area and moved into place complete (``build``).

``staging_area(out)`` makes a hidden ``.minigraph-staging-*`` directory beside (or inside) the
output directory, with ``files/`` (what will be installed) and ``work/`` (the compiler's
temporaries: TVM's ``export_library`` writes lib0.o and devc.o there instead of /tmp), and
removes it when the block ends. The area is locked (``flock`` on its directory) while its
process lives, so one killed outright (SIGKILL, the OOM killer) leaves an unlocked area behind,
which the next ``staging_area`` for the same place recognises and removes; an area another
build is using stays locked and is left alone. ``install_dir`` moves the set into place.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ..errors import InputError, MinigraphError

PREFIX = ".minigraph-staging-"
_UNLOCKED_GRACE_S = 60.0  # an area not yet locked (just made by another build) is left alone


@dataclass(frozen=True)
class Staging:
    files: Path  # the set being built: moved into the output directory when complete
    work: Path   # temporaries, removed with the area


def _locked_by_someone(area: Path) -> bool:
    try:
        fd = os.open(area, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return True  # cannot tell: leave it
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # releases the lock if it was taken
    return False


def remove_stale(base: Path) -> list[Path]:
    """Removes the staging areas under ``base`` whose process is gone (nobody holds their
    lock); returns them."""
    removed = []
    for area in base.glob(PREFIX + "*"):
        try:
            young = time.time() - area.stat().st_mtime < _UNLOCKED_GRACE_S
        except OSError:
            continue
        if area.is_dir() and not (young and not (area / "files").exists()) \
                and not _locked_by_someone(area):
            shutil.rmtree(area, ignore_errors=True)
            removed.append(area)
    return removed


@contextlib.contextmanager
def staging_area(out: str | os.PathLike[str]) -> Iterator[Staging]:
    """A fresh, locked staging area for ``out``: inside ``out`` if it exists (same filesystem
    even when ``out`` is a mount point), else under its nearest existing ancestor; removed when
    the block ends, as are areas left by killed builds. Nothing is created at ``out`` itself;
    InputError if the place cannot be written."""
    o = Path(out)
    if o.exists() and not o.is_dir():
        raise InputError(f"output directory {o}: exists and is not a directory")
    base = o if o.is_dir() else next(p for p in o.absolute().parents if p.exists())
    try:
        root = Path(tempfile.mkdtemp(prefix=PREFIX, dir=base))
    except OSError as err:
        raise InputError(f"cannot write to output directory {o}: {err.strerror or err}") from err
    lock = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held until this process ends
        area = Staging(root / "files", root / "work")
        area.files.mkdir()  # before anything slower: an area without it is spared 60 s
        area.work.mkdir()
        remove_stale(base)
        yield area
    finally:
        shutil.rmtree(root, ignore_errors=True)  # files/ is gone already once installed
        os.close(lock)


def install_dir(staging: Path, out: str | os.PathLike[str], owned: tuple[str, ...] = ()) -> None:
    """Moves the complete set of files in ``staging`` into ``out``: a rename of the whole
    directory when ``out`` does not exist yet, else one rename per file with Ctrl-C and SIGTERM
    held off until the last one (the set is then complete: the build is done), and the
    ``owned`` names the new set lacks removed, so no old file stays beside the new ones."""
    o = Path(out)
    with _signals_held():
        try:
            if not o.exists():
                o.parent.mkdir(parents=True, exist_ok=True)
                umask = os.umask(0o022)
                os.umask(umask)
                os.chmod(staging, 0o777 & ~umask)  # as mkdir would make it (mkdtemp: 0700)
                os.rename(staging, o)
                return
            names = {p.name for p in staging.iterdir()}
            for name in names:
                os.replace(staging / name, o / name)
            for name in set(owned) - names:
                (o / name).unlink(missing_ok=True)
            staging.rmdir()
        except OSError as err:
            raise MinigraphError(f"cannot move the new files into {o}: "
                                 f"{err.strerror or err}") from err


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM recorded, not raised, inside the block (main thread only: Python
    runs signal handlers there; elsewhere nothing can be changed and nothing is)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, lambda signum, frame: None)
                for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
