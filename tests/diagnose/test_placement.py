"""The main thread queued behind its own pinned pool worker: found in the records, set apart
from the rungs, and costed on rung a as its own component (diagnose/placement.py)."""
from __future__ import annotations

import os
import threading

import numpy as np
import pytest

from minigraph.diagnose.attribution import attribute, attribution_of
from minigraph.diagnose.spec import DiagnoseSettings
from minigraph.measure.counters import pinned_cpus
from minigraph.report.diagnosis import render
from minigraph.results.diagnosis import Diagnosis

BASE = np.array([100_000.0, 200_000.0, 300_000.0])   # ns per op, steady state
FAULTS = np.array([0.0, 50_000.0, 0.0])              # rung a over rung b, in every process
QUEUED = np.array([400_000.0, 300_000.0, 0.0])       # a placed process's extra on rung a


def _times(processes: int, placed_rows: list[int]) -> tuple[dict, dict]:
    """Rungs a and b: a = b + FAULTS; rung a's ``placed_rows`` processes also queued."""
    rng = np.random.default_rng(3)
    a = BASE + FAULTS + rng.normal(0, 200, (processes, 3))
    b = BASE + rng.normal(0, 200, (processes, 3))
    mask = np.zeros((processes, 3), bool)
    for p in placed_rows:
        a[p] += QUEUED
        mask[p, :2] = True
    return {"a": a, "b": b}, {"a": mask, "b": np.zeros_like(mask)}


def test_queued_first_runs_are_set_apart_and_costed_where_they_happened():
    """4 of 10 first runs queued: the components read the clean processes exactly (the typical
    first run), still adding up to the excess, and what queueing added where it happened is
    given beside them (the queued extra, per op and in all)."""
    times, placed = _times(10, [1, 4, 6, 9])
    att = attribute(times, np.zeros((10, 3), bool), placed=placed)
    assert "thread_placement" not in att.components
    assert [x.median_ns for x in att.placement] == pytest.approx([*QUEUED[:2], 0], abs=500)
    assert att.placement_total.median_ns == pytest.approx(QUEUED.sum(), abs=1000)
    assert att.placement_total.lo_ns > 0
    assert [x.median_ns for x in att.components["pool_creation"]] == pytest.approx(FAULTS,
                                                                                    abs=500)
    total = sum(t.median_ns for t in att.component_total.values())
    assert total == pytest.approx(att.excess_total.median_ns)
    assert att.placed == {"a": 8} and att.placed_processes == {"a": (4, 10)}
    # unmarked, the same samples widen the pool step by the mode they may tip the median to
    plain = attribute(times, np.zeros((10, 3), bool))
    assert plain.placement is None
    assert plain.components["pool_creation"][0].hi_ns > QUEUED[0] / 2


def test_no_placed_sample_no_component():
    times, placed = _times(6, [])
    att = attribute(times, np.zeros((6, 3), bool), placed=placed)
    assert att.placement is None and att.placed is None


def _diagnosis(processes: int, queued: set[int]) -> Diagnosis:
    """Records as a worker writes them: rung a's ``queued`` processes ended their first two
    ops on CPU 1, where the pool's worker is pinned, having waited; the rest on CPU 0."""
    ops = [{"index": i, "name": f"op{i}", "func_name": f"k{i}", "kind": "conv2d"}
           for i in range(3)]
    diag = Diagnosis(ops, DiagnoseSettings(processes=processes, rungs=("a", "b")).to_dict())
    times, _ = _times(processes, sorted(queued))
    for rung in ("a", "b"):
        for p in range(processes):
            on_worker = rung == "a" and p in queued
            diag.runs.setdefault(rung, []).append(
                [{"ns": float(t), "asleep_before": 0, "cpu": 1 if on_worker and i < 2 else 0,
                  "waited_ns": 150_000 if on_worker and i < 2 else 0}
                 for i, t in enumerate(times[rung][p])])
            diag.pinned.setdefault(rung, []).append([1])
    return diag


def test_the_records_say_where_the_main_thread_queued_and_the_report_says_so():
    diag = _diagnosis(8, {2, 5})
    placed = diag.placed()
    assert placed["a"].sum() == 4 and placed["a"][2, :2].all() and not placed["b"].any()
    att = attribution_of(diag)
    assert att.placement_total.median_ns == pytest.approx(QUEUED.sum(), rel=0.05)
    text = render(diag, att)
    assert "TVM_BIND_THREADS=0" in text and "a 2/8" in text
    again = Diagnosis.from_dict(diag.to_dict())  # the pinning round-trips
    assert again.pinned == diag.pinned and (again.placed()["a"] == placed["a"]).all()


def test_the_op_that_creates_the_pool_on_the_workers_cpu_is_placed_too():
    """A main thread that creates its worker on the CPU the worker is then pinned to shares
    that CPU from the start: op 0, which created the thread, is set apart like the ops after
    it; where the main thread sat on the other CPU, creating the worker is no placement."""
    diag = _diagnosis(8, {2, 5})
    for p, rows in enumerate(diag.runs["a"]):
        rows[0]["threads_created"] = 1
        rows[0]["waited_ns"] = 120_000  # the new worker ran first, wherever it was made
    placed = diag.placed()["a"]
    assert placed[2, 0] and placed[5, 0]
    assert not placed[[0, 1, 3, 4, 6, 7], 0].any()


def test_a_file_without_pinning_sets_nothing_apart():
    diag = _diagnosis(6, {1})
    diag.pinned = {}
    assert not any(m.any() for m in diag.placed().values())
    assert attribution_of(diag).placed is None


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: nothing to pin apart")
def test_pinned_cpus_reads_a_thread_pinned_narrower_than_the_process():
    cpu = max(os.sched_getaffinity(0))
    ready, done = threading.Event(), threading.Event()
    tid: list[int] = []

    def pinned() -> None:
        tid.append(threading.get_native_id())
        os.sched_setaffinity(0, {cpu})  # this thread only
        ready.set()
        done.wait(10)
    t = threading.Thread(target=pinned)
    t.start()
    try:
        ready.wait(10)
        assert pinned_cpus(tid) == [cpu]
        assert pinned_cpus({threading.get_native_id()}) == []  # the main thread: not narrower
    finally:
        done.set()
        t.join()
