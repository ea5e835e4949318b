"""The CLI and the Python API run with the same defaults: the thread count nobody gave is
TVM_NUM_THREADS when set, else every CPU the process may use (threadpool/config.py
default_threads), for `minigraph profile` and `Executor.profile` alike."""
from __future__ import annotations

import argparse
import os

import pytest

from minigraph.cli.profile import _thread_request
from minigraph.threadpool.config import default_threads


def _cli_threads() -> int:
    args = argparse.Namespace(threads=None, cpus=None, affinity=None, pin_main=None)
    return _thread_request(args).threads


@pytest.mark.parametrize("env", [None, "1"])
def test_cli_and_api_request_the_same_threads(tiny_cnn, monkeypatch, env):
    from minigraph.api import Executor
    if env is None:
        monkeypatch.delenv("TVM_NUM_THREADS", raising=False)
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
        expected = len(os.sched_getaffinity(0))
    else:
        monkeypatch.setenv("TVM_NUM_THREADS", env)
        expected = int(env)
    assert default_threads() == expected == _cli_threads()
    ex = Executor.from_files(tiny_cnn / "model.so", tiny_cnn / "graph.json")
    prof = ex.profile(modes=("warm",), warm_budget_ms=5)
    assert prof.threads["requested"]["threads"] == expected
