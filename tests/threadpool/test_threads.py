"""Tests for minigraph.threadpool.config. TVM's pool is per thread and created once, so every scenario that
touches it runs in its own fresh subprocess (launched in parallel to stay fast)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from minigraph.errors import InputError
from minigraph.measure.pool_probe import pool_side_effects
from minigraph.threadpool.config import (
    ThreadRequest,
    _homogeneous,
    _parse_stat,
    max_concurrency,
    parse_cpu_list,
    read_tasks,
)

pytestmark = pytest.mark.subprocess

ROOT = Path(__file__).resolve().parents[2]
TVM_VARS = ("TVM_NUM_THREADS", "OMP_NUM_THREADS", "TVM_BIND_THREADS", "TVM_EXCLUDE_WORKER0")
ALLOWED = tuple(sorted(os.sched_getaffinity(0)))
HW = os.cpu_count() or 1

# The child measures everything itself (independently of the report) and prints both.
CHILD = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
import tvm
from minigraph.threadpool.config import ThreadRequest, configure_threads
req = ThreadRequest(**json.loads(sys.argv[2]))
tids0 = set(int(t) for t in os.listdir("/proc/self/task"))
before = sorted(os.sched_getaffinity(0))
report = configure_threads(req)
raw = {"before": before, "main": sorted(os.sched_getaffinity(0)),
       "num_threads": tvm.get_global_func("runtime.NumThreads")(),
       "new": {t: sorted(os.sched_getaffinity(int(t))) for t in os.listdir("/proc/self/task")
               if int(t) not in tids0}}
print(json.dumps({"raw": raw, "report": report.to_dict()}))
"""


def _clean_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in TVM_VARS}
    env["OPENBLAS_NUM_THREADS"] = "1"  # keep numpy's own threads out of the picture
    env["TVM_THREAD_POOL_SPIN_COUNT"] = "0"  # idle workers sleep at once: faster, same affinity
    return env


SCENARIOS = {
    "default": {},
    "impossible": {"threads": len(ALLOWED) + 2, "cpus": [ALLOWED[0], 4095]},
    "pin_main": {"threads": 1, "pin_main": ALLOWED[-1]},
}


@pytest.fixture(scope="module")
def runs() -> dict:
    """All scenario children plus pool_side_effects(), run concurrently."""
    env = _clean_env()
    with ThreadPoolExecutor(1) as ex:
        side = ex.submit(pool_side_effects, env)
        procs = {name: subprocess.Popen([sys.executable, "-c", CHILD, str(ROOT), json.dumps(req)],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        env=env)
                 for name, req in SCENARIOS.items()}
        out = {}
        for name, p in procs.items():
            stdout, stderr = p.communicate(timeout=60)
            assert p.returncode == 0, stderr
            out[name] = json.loads(stdout.strip().splitlines()[-1])
        out["side_effects"] = side.result(timeout=60)
    return out


def tvm_main_after(before: list[int], mc: int) -> list[int]:
    """What threading_backend.cc does to the creating thread (kBig, homogeneous CPUs, binding on):
    pinned to CPUs 0..min(mc, hw)-1 of TVM's own order, unless there are more workers than CPUs."""
    return before if mc > HW else list(range(min(mc, HW)))


def assert_no_missed_mismatch(run: dict, req: dict) -> None:
    """Independent check: every real difference measured by the child appears in the report."""
    raw, rep = run["raw"], run["report"]
    text = "\n".join(rep["mismatches"])
    assert rep["main_affinity_after"] == raw["main"]
    assert rep["tvm_num_threads"] == raw["num_threads"]
    allowed = set(rep["process_affinity_before"]) if not req.get("cpus") else \
        set(req["cpus"]) & set(rep["process_affinity_before"])
    want_main = [req["pin_main"]] if req.get("pin_main") is not None else sorted(allowed)
    if raw["main"] != want_main:
        assert "main thread" in text, text
    if req.get("threads") and raw["num_threads"] != req["threads"]:
        assert f"TVM uses {raw['num_threads']}" in text, text
    if req.get("threads", 0) > len(allowed):
        assert "oversubscribed" in text, text
    for tid, aff in raw["new"].items():
        assert int(tid) in rep["worker_tids"]
        if not set(aff) <= allowed:
            assert f"worker tid {tid}" in text, text


@pytest.mark.parametrize("text,expected", [
    ("0-3,6", (0, 1, 2, 3, 6)), ("5", (5,)), (" 1 , 3-4 ", (1, 3, 4)), ("2,0-1,1", (0, 1, 2)),
    ("7-7", (7,)),
])
def test_parse_cpu_list(text: str, expected: tuple[int, ...]) -> None:
    assert parse_cpu_list(text, limit=8) == expected  # as on a machine of 8 CPUs


@pytest.mark.parametrize("text", ["", "  ", "a", "3-1", "1,,2", "-1", "1-", "0x1", "1;2", None])
def test_parse_cpu_list_errors(text) -> None:
    with pytest.raises(InputError):
        parse_cpu_list(text)


def test_parse_stat_weird_comm() -> None:
    fields = " ".join(["S"] + [str(i) for i in range(4, 39)] + ["7", "0"])
    assert _parse_stat(f"123 (a) (b c) {fields}") == ("a) (b c", 7)


def test_read_tasks_main_and_renamed_thread() -> None:
    ready, done = threading.Event(), threading.Event()
    tid: list[int] = []

    def body() -> None:
        tid.append(threading.get_native_id())
        Path(f"/proc/self/task/{tid[0]}/comm").write_text("x) (y z")
        ready.set()
        done.wait(5)

    inherited = tuple(sorted(os.sched_getaffinity(0)))  # a new thread starts with its creator's
    t = threading.Thread(target=body)
    t.start()
    ready.wait(5)
    try:
        tasks = {task.tid: task for task in read_tasks()}
    finally:
        done.set()
        t.join()
    main = tasks[os.getpid()]  # as the OS has it now (a pool made by an earlier test pins it)
    assert main.affinity and main.affinity == tuple(sorted(os.sched_getaffinity(0)))
    assert main.last_cpu in main.affinity
    assert tasks[tid[0]].name == "x) (y z"
    assert tasks[tid[0]].affinity == inherited


def test_max_concurrency_mirrors_tvm() -> None:
    assert max_concurrency({"TVM_NUM_THREADS": "3", "OMP_NUM_THREADS": "8"}) == 3
    assert max_concurrency({"OMP_NUM_THREADS": "8"}) == 8
    assert max_concurrency({"TVM_NUM_THREADS": "junk"}) == 1  # atoi("junk") == 0 -> max(0, 1)
    if os.uname().machine == "x86_64":
        assert max_concurrency({}, hardware=2) == 1
        assert max_concurrency({}, hardware=16) == 8


def test_bad_request_rejected() -> None:
    from minigraph.threadpool.config import configure_threads
    with pytest.raises(InputError):
        configure_threads(ThreadRequest(affinity="fastest"))
    with pytest.raises(InputError):
        configure_threads(ThreadRequest(threads=0))


def test_default_pool_repins_as_tvm_does(runs: dict) -> None:
    run = runs["default"]
    raw, rep = run["raw"], run["report"]
    assert rep["tvm_num_threads"] == max_concurrency({})
    assert_no_missed_mismatch(run, {})
    if _homogeneous(HW) and raw["before"] == list(range(HW)):
        assert raw["main"] == tvm_main_after(raw["before"], max_concurrency({}))
    if raw["main"] != raw["before"]:  # e.g. on 2 CPUs: {0,1} -> {0}
        assert any("re-pinned by TVM" in m for m in rep["mismatches"])
    else:
        assert not rep["mismatches"]


def test_impossible_request_reported(runs: dict) -> None:
    run = runs["impossible"]
    text = "\n".join(run["report"]["mismatches"])
    assert "oversubscribed" in text
    assert "4095" in text and "not allowed" in text
    # a non-empty cpus list makes TVM's worker count len(usable cpus) == 1
    assert run["raw"]["num_threads"] == 1
    assert f"requested threads={SCENARIOS['impossible']['threads']}, TVM uses 1" in text
    assert_no_missed_mismatch(run, SCENARIOS["impossible"])


def test_pin_main_honoured(runs: dict) -> None:
    run = runs["pin_main"]
    assert run["raw"]["main"] == [ALLOWED[-1]]
    assert not any("main thread" in m for m in run["report"]["mismatches"])
    assert_no_missed_mismatch(run, SCENARIOS["pin_main"])
    json.dumps(run["report"])


def test_pool_side_effects(runs: dict) -> None:
    out = runs["side_effects"]
    assert out["default_num_threads"] == out["predicted_num_threads"] == max_concurrency({})
    assert out["repinned_main"] == (out["affinity_before"] != out["affinity_after"])
    assert out["workers_created"] == max_concurrency({}) - 1  # worker 0 is the caller
    if _homogeneous(HW) and out["affinity_before"] == list(range(HW)):
        assert out["affinity_after"] == tvm_main_after(out["affinity_before"], max_concurrency({}))
