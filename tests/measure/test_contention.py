"""Contention: what other processes and the hypervisor took while we measured."""
from __future__ import annotations

import subprocess
import sys
import time

import psutil
import pytest

from minigraph.analysis.contention import warning
from minigraph.measure.contention import Contention, between, read_proc_stat, sample


def _ends(machine: list[tuple[float, float]], own: list[float], wall: list[float]):
    feeds = [iter(machine), iter(own), iter(wall)]
    return [sample(lambda: next(feeds[0]), lambda: next(feeds[1]), lambda: next(feeds[2]))
            for _ in range(2)]


def test_others_are_machine_busy_minus_our_own_cpu_time():
    # 2 s window: the machine was busy 3 CPU-s, 1 of them ours; 0.4 s stolen
    start, end = _ends([(100.0, 5.0), (103.0, 5.4)], [7.0, 8.0], [50.0, 52.0])
    c = between(start, end)
    assert c == Contention(wall_s=2.0, others_cpus=1.0, steal_cpus=pytest.approx(0.2),
                           others_raw_cpus=1.0)
    assert c.busy and "1.00 CPUs" in c.describe() and not c.clamped


def test_more_cpus_than_the_machine_has_is_clamped_and_explained():
    """Once seen: 'other processes used 4.31 CPUs' on a 2-CPU machine. Counters that disagree
    (here: 10 busy CPU-s in a 2 s window on 2 CPUs) are clamped to the machine, and said."""
    start, end = _ends([(100.0, 5.0, 2), (110.0, 5.0, 2)], [7.0, 8.0], [50.0, 52.0])
    c = between(start, end)
    assert c.others_cpus == 2.0 and c.others_raw_cpus == pytest.approx(4.5) and c.clamped
    line = warning(c.to_dict(), "the ladder")
    assert "used 2.00 CPUs" in line and "gave 4.50 CPUs, more than this machine's 2" in line
    old = {"wall_s": 3.0, "others_cpus": 0.9, "steal_cpus": 0.0}  # saved before the clamp
    assert "0.90 CPUs" in warning(old, "x") and "clamped" not in warning(old, "x")


def test_quiet_window_is_not_busy_and_rounding_never_goes_negative():
    # jiffy rounding: we seem to have used more than the whole machine did
    start, end = _ends([(100.0, 5.0), (100.99, 5.0)], [7.0, 8.0], [50.0, 52.0])
    c = between(start, end)
    assert c.others_cpus == 0.0 and not c.busy
    assert warning(c.to_dict(), "x") == ""


def test_unknown_ends_give_no_contention():
    assert sample(lambda: None) is None
    assert between(None, (1.0, 0.0, 0.0, 0.0)) is None
    same = (1.0, 0.0, 0.0, 0.0)
    assert between(same, same) is None  # no time passed: no average


@pytest.mark.parametrize("saved", [{}, None, [], {"wall_s": "x", "others_cpus": 1,
                                                   "steal_cpus": 0}, {"wall_s": 1}])
def test_warning_ignores_absent_or_corrupt_records(saved):
    assert warning(saved, "x") == ""


def test_warning_names_the_window_and_the_figures():
    line = warning({"wall_s": 3.0, "others_cpus": 0.9, "steal_cpus": 0.0}, "the ladder")
    assert line.startswith("WARNING: busy machine during the ladder: other processes used 0.90")


def test_proc_stat_parsing(tmp_path):
    import os
    hz = os.sysconf("SC_CLK_TCK")
    f = tmp_path / "stat"
    f.write_text(f"cpu  {hz} 0 {hz} 999 5 0 0 {2 * hz} 0 0\ncpu0 1 2 3\n")
    assert read_proc_stat(str(f)) == (2.0, 2.0, 1)
    f.write_text("intr 1 2 3\n")
    assert read_proc_stat(str(f)) is None
    assert read_proc_stat(str(tmp_path / "absent")) is None


@pytest.mark.subprocess
def test_a_busy_neighbour_is_seen_and_our_own_work_is_not():
    """Real /proc: a spinning process that is not ours shows up; our own spinning does not.
    Each is checked against that process's own CPU time (psutil), not against an idle
    baseline, so a machine other processes keep busy checks it as well as a quiet one."""
    if read_proc_stat() is None:
        pytest.skip("no /proc/stat")
    me = psutil.Process()
    start, mine_before = sample(), sum(me.cpu_times()[:2])
    t_end = time.monotonic() + 0.6
    while time.monotonic() < t_end:
        pass
    end, mine_after = sample(), sum(me.cpu_times()[:2])
    mine = between(start, end)
    busy = (end[1] - start[1]) / mine.wall_s   # the machine's busy CPUs, ours included
    ours = (mine_after - mine_before) / mine.wall_s
    # ticks are 10 ms: over 0.6 s the machine's count is good to ~0.017 CPUs per CPU it
    # has, a process's own to ~0.017 per clock read
    slack = 0.02 * max(mine.cpus, 1) + 0.05
    assert ours > 0.2  # we spun: whatever share we were given, it shows in our own time
    assert abs((busy - mine.others_raw_cpus) - ours) < slack, (mine, busy, ours)
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)  # let it start
        h = psutil.Process(hog.pid)
        start, hog_before = sample(), sum(h.cpu_times()[:2])
        time.sleep(0.8)
        end, hog_after = sample(), sum(h.cpu_times()[:2])
    finally:
        hog.kill()
        hog.wait()
    theirs = between(start, end)
    hog_cpus = (hog_after - hog_before) / theirs.wall_s
    assert hog_cpus > 0.2, hog_cpus  # it ran, on a quiet machine or a busy one
    # everything the hog used is someone else's: "others" holds at least that much
    assert theirs.others_raw_cpus > hog_cpus - slack, (theirs, hog_cpus)
