"""The suite's own sharing of the machine (tests/helpers/workers.py): units of work, their
order, and the alone lock (flock conflicts between two opens of a file in one process too, so
threads stand in for the two workers)."""
from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest
import workers

WAIT_S = 10.0  # for a lock that must come; "must not come" is read after 0.3 s


@pytest.fixture
def locks(tmp_path, monkeypatch):
    monkeypatch.setenv(workers.LOCKS_VAR, str(tmp_path))
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")


def _enter(alone: bool, entered: threading.Event, leave: threading.Event) -> threading.Thread:
    def hold():
        with workers.machine_share(alone):
            entered.set()
            leave.wait(WAIT_S)
    t = threading.Thread(target=hold, daemon=True)
    t.start()
    return t


def test_units_are_files_and_the_llm_files_are_one():
    assert workers.unit_of("tests/cli/test_stop.py::test_x[1]") == "tests/cli/test_stop.py"
    assert workers.unit_of("tests/llm/test_attention.py::t") == workers.unit_of(
        "tests/llm/test_cli_run.py::t")
    items = [SimpleNamespace(nodeid=n) for n in (
        "tests/a/test_a.py::t", "tests/llm/test_rope.py::t", "tests/a/test_a.py::u")]
    workers.first_units_first(items)
    assert [i.nodeid for i in items] == ["tests/llm/test_rope.py::t", "tests/a/test_a.py::t",
                                         "tests/a/test_a.py::u"]


def test_an_alone_test_waits_for_shared_ones_and_then_holds_the_machine(locks):
    shared_in, shared_out = threading.Event(), threading.Event()
    alone_in, alone_out = threading.Event(), threading.Event()
    late_in, late_out = threading.Event(), threading.Event()
    threads = [_enter(False, shared_in, shared_out)]
    assert shared_in.wait(WAIT_S)
    threads.append(_enter(True, alone_in, alone_out))
    assert not alone_in.wait(0.3)            # a shared test still runs
    threads.append(_enter(False, late_in, late_out))
    assert not late_in.wait(0.3)             # the waiting alone test goes first (turnstile)
    shared_out.set()
    assert alone_in.wait(WAIT_S)
    assert not late_in.wait(0.3)             # alone: nothing else runs
    alone_out.set()
    assert late_in.wait(WAIT_S)
    late_out.set()
    for t in threads:
        t.join(WAIT_S)


def test_shared_tests_run_together_and_nothing_is_locked_outside_workers(locks, monkeypatch):
    a_in, b_in, out = threading.Event(), threading.Event(), threading.Event()
    threads = [_enter(False, a_in, out), _enter(False, b_in, out)]
    assert a_in.wait(WAIT_S) and b_in.wait(WAIT_S)
    monkeypatch.delenv("PYTEST_XDIST_WORKER")  # -n 0: an alone test takes no lock
    c_in = threading.Event()
    threads.append(_enter(True, c_in, out))
    assert c_in.wait(WAIT_S)
    out.set()
    for t in threads:
        t.join(WAIT_S)
