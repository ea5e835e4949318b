"""TVM's environment, written in one place: the worker count TVM's CPU thread pool reads from
TVM_NUM_THREADS once, when the pool is created (``threading_backend.cc`` ``MaxConcurrency``),
set in this process before its pool exists, or in the environment a fresh process starts with.

Every part of minigraph that decides a pool's size (a profile's placement, config.py, the
diagnose ladder's workers, the LLM ladder's) writes it through here, so the variable is spelled
and formatted once. The count itself comes resolved: threadpool/request.py ``ThreadRequest``
``resolved`` is the one rule for a count nobody gave.
"""
from __future__ import annotations

import os
from typing import Mapping

POOL_SIZE_VAR = "TVM_NUM_THREADS"  # read by TVM before OMP_NUM_THREADS (request.py THREAD_VARS)


def set_pool_threads(threads: int) -> None:
    """This process's pool will have ``threads`` workers, if it does not exist yet (TVM reads
    the variable once, at creation: config.py notes when it already existed)."""
    os.environ[POOL_SIZE_VAR] = _count(threads)


def pool_environ(threads: int, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a fresh process whose pool has ``threads`` workers: ``base``
    (default: this process's environment) with the worker count set."""
    return {**(os.environ if base is None else base), POOL_SIZE_VAR: _count(threads)}


def _count(threads: int) -> str:
    """The count as TVM's atoi reads it; a count not resolved (None) is a bug of the caller:
    TVM would read "None" as 0 workers, without a word."""
    if type(threads) is not int:
        raise TypeError(f"a resolved worker count was expected, got {threads!r}")
    return str(threads)
