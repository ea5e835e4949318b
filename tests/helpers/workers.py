"""How the suite's two pytest-xdist workers share the machine (pyproject.toml runs ``-n 2``;
``-n 0`` runs it in one process).

- **Units of work.** Each test file is one unit, given to one worker (its module fixtures are
  made once), and the files in ``tests/llm/`` are one unit together: the session's LLM builds
  and compiles (conftest.py's ``llama_tiny``, ``shared_llm_compiles``) are then made once, in
  one worker. Units are handed out in collection order, each to the worker that is free,
  with the few that take 20-50 s on 2 vCPUs first (``FIRST``): a worker that starts one of
  those as the other runs out of work would leave a core idle for its whole length.
- **Alone.** A test marked ``alone`` measures what a neighbour would change (the verdict
  corpus's back-to-back pair, the diagnose ladder's ground truths, timings): it holds the
  machine alone. The other
  worker finishes the test it is in, then waits. Other tests share the machine with each
  other. Two lock files give this: every test holds ``machine`` shared, an alone test holds it
  exclusive; an alone test takes ``turnstile`` first and holds it, and every other test
  passes through it before starting, so a waiting alone test is not starved by the other
  worker's next tests (flock has no writer preference).

Outside xdist (``-n 0``) nothing is locked.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

ALONE = "alone"
LOCKS_VAR = "MINIGRAPH_TEST_LOCKS"  # the lock directory, from the controller to its workers
LLM_FILES = "tests/llm/"  # one unit: the files that share the session's LLM builds
FIRST = (LLM_FILES, "tests/report/test_html.py", "tests/compiler/test_zoo_slow.py",
         "tests/remote/test_remote.py", "tests/diagnose/test_diagnose.py")


def unit_of(nodeid: str) -> str:
    """The unit of work of the test ``nodeid`` (relative to the repository)."""
    path = nodeid.split("::", 1)[0]
    return LLM_FILES if path.startswith(LLM_FILES) else path


def first_units_first(items: list) -> None:
    """Reorders the collected ``items`` (in place, stably) so that ``FIRST``'s units lead."""
    def rank(item) -> int:
        unit = unit_of(item.nodeid)
        return FIRST.index(unit) if unit in FIRST else len(FIRST)
    items.sort(key=rank)


def scheduler(config, log):
    """xdist's file scheduling with ``unit_of``'s units. (pytest-xdist's own ``loadgroup``
    cannot group here: it renames ``Item._nodeid``, which pytest 9.2 no longer reads.)"""
    from xdist.scheduler import LoadScopeScheduling  # the controller's plugin, not a worker's

    config.option.loadscopereorder = False  # keep first_units_first's order, not most tests first

    class ByUnit(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)
    return ByUnit(config, log)


def open_locks(config) -> None:
    """In the process that starts the workers: a directory for their lock files, named to
    them in the environment they inherit (the workers start after pytest_configure)."""
    if getattr(config, "workerinput", None) is None and config.getoption("numprocesses", 0):
        os.environ[LOCKS_VAR] = tempfile.mkdtemp(prefix="minigraph-tests-")


def close_locks(config) -> None:
    """In the process that started the workers, once they have ended: the directory goes."""
    if getattr(config, "workerinput", None) is None and os.environ.get(LOCKS_VAR):
        shutil.rmtree(os.environ.pop(LOCKS_VAR), ignore_errors=True)


def _lock_dir() -> Path | None:
    """The workers' shared lock directory, or None outside a worker."""
    d = os.environ.get(LOCKS_VAR)
    return Path(d) if d and os.environ.get("PYTEST_XDIST_WORKER") else None


@contextlib.contextmanager
def _flocked(path: Path, how: int) -> Iterator[None]:
    # opened per test: a process a test forks keeps its copy of the descriptor, and the
    # explicit unlock releases the lock for every copy
    with open(path, "a") as f:
        fcntl.flock(f, how)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@contextlib.contextmanager
def machine_share(alone: bool) -> Iterator[None]:
    """Held around one test's setup, call and teardown."""
    d = _lock_dir()
    if d is None:
        yield
    elif alone:
        with _flocked(d / "turnstile", fcntl.LOCK_EX), _flocked(d / "machine", fcntl.LOCK_EX):
            yield
    else:
        with _flocked(d / "turnstile", fcntl.LOCK_SH):
            pass
        with _flocked(d / "machine", fcntl.LOCK_SH):
            yield
