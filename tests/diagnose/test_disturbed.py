"""Which first-run samples a neighbour took time from (diagnose/disturbed.py), read from the
longest wait of one thread (measure/counters.py), and placement not judged on a busy machine."""
from __future__ import annotations

import numpy as np

from minigraph.diagnose import placement
from minigraph.diagnose.attribution import attribution_of
from minigraph.diagnose.disturbed import disturbed
from minigraph.diagnose.spec import DiagnoseSettings
from minigraph.measure.counters import longest_wait_ns, run_delays, task_ids
from minigraph.report.diagnosis import render
from minigraph.results.diagnosis import Diagnosis, waits_matrix

MS = 1_000_000


def test_the_longest_wait_is_one_threads_and_a_new_thread_counts_whole():
    before = {10: 5 * MS, 11: 1 * MS}
    after = {10: 9 * MS, 11: 2 * MS, 12: 3 * MS}  # 12 was born during the op
    assert longest_wait_ns(before, after) == 4 * MS
    assert longest_wait_ns(before, {10: 5 * MS, 11: 1 * MS}) == 0
    assert longest_wait_ns({}, {}) == 0
    mine = run_delays(task_ids())  # this process's threads, readable on Linux
    assert mine and all(v >= 0 for v in mine.values())


def _beside_a_spinner() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rung a of the ground truth beside one spinning process (as recorded on a 2-vCPU
    guest): op 1 takes 35-40 ms of page faults, 7-11x its 3.5 ms steady time, while each of
    its two threads waits half of it; process 2 stalled (its main thread off the CPU 30 ms)."""
    ns = np.array([[0.3, 40.0], [0.3, 35.0], [0.3, 70.0]]) * MS
    longest = np.array([[0.0, 20.0], [0.0, 17.5], [0.0, 33.0 + 30.0]]) * MS
    summed = np.array([[0.0, 40.5], [0.0, 35.2], [0.0, 70.0]]) * MS
    steady = np.array([[0.03, 3.5], [0.03, 3.4], [0.03, 3.6]]) * MS
    return ns, longest, summed, steady


def test_a_first_run_that_waited_only_its_share_is_kept_and_a_stall_is_left_out():
    ns, longest, summed, steady = _beside_a_spinner()
    bad = disturbed(ns, longest, steady)
    assert not bad[0, 1] and not bad[1, 1]  # its faults, paid while sharing the CPU
    assert bad[2, 1]  # 35 ms slower than the fastest, one thread waited 63 ms: a stall
    # the threads' waits summed read every fault-bound first run as a stall (why not the sum)
    assert disturbed(ns, summed, steady)[:, 1].all()


def _records(waits: dict[str, float]) -> list[list[dict]]:
    return [[{"ns": 1.0, "asleep_before": 0, **waits}]]


def test_the_longest_wait_is_read_where_recorded_and_the_sum_in_older_files():
    assert waits_matrix(_records({"waited_ns": 8.0, "longest_wait_ns": 5.0}))[0, 0] == 5.0
    assert waits_matrix(_records({"waited_ns": 8.0}))[0, 0] == 8.0
    assert waits_matrix(_records({}))[0, 0] == 0.0


def test_placement_is_not_judged_when_others_took_cpu_during_the_ladder():
    ops = [{"index": 0, "name": "op0", "func_name": "k0", "kind": "conv2d"}]
    diag = Diagnosis(ops, DiagnoseSettings(processes=2, rungs=("a", "b")).to_dict())
    for rung in ("a", "b"):  # the main thread ended on the worker's CPU, having waited
        diag.runs[rung] = [[{"ns": 5e6, "asleep_before": 0, "cpu": 1, "waited_ns": 2e6}]] * 2
        diag.pinned[rung] = [[1], [1]]
    quiet = {"wall_s": 5.0, "others_cpus": 0.0, "steal_cpus": 0.0, "cpus": 2.0}
    diag.contention = quiet
    assert placement.judged(diag)["a"].all()
    diag.contention = {**quiet, "others_cpus": 0.9}
    assert placement.judged(diag) is None
    att = attribution_of(diag)
    assert att.placed is None
    assert "thread placement: not judged: other processes took CPU" in render(diag, att)
