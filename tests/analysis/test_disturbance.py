"""The disturbed-run rule (analysis/disturbance.py): on profiles built by hand, every sentence
that states a cause states it on a quiet machine and says "cannot tell the cause" with the
figures when the machine was busy or changed speed."""
from __future__ import annotations

import pytest

from minigraph.analysis.disturbance import cause, disturbance
from minigraph.report.summary import summary
from minigraph.results.profile import Profile

OPS = 3


def _profile(busy_cpus: float = 0.0, probes_ns: tuple[float, ...] = ()) -> Profile:
    """Warm medians of 10 us per op, a 40 us e2e run, 1 us of executor overhead, a first run
    of op 0 that created a thread; others took ``busy_cpus``; speed probes ``probes_ns``."""
    ops = [{"index": i, "name": f"op{i}", "kind": "conv2d"} for i in range(OPS)]
    prof = Profile(ops, {"modes": ["first-run", "warm", "e2e"]},
                   {"warm": [[10e3] * 5 for _ in ops],
                    "first-run": [[60e3]] + [[10e3] for _ in ops[1:]]},
                   e2e_ns=[40e3] * 5, dispatch_ns=[1e3] * 5,
                   counters=[{"threads_created": 1, "minflt": 0, "nvcsw": 2}] + [{}] * 2)
    prof.contention.update(wall_s=3.0, others_cpus=busy_cpus, steal_cpus=0.0, cpus=2.0)
    prof.speed["samples"] = [{"compute_ns": t} for t in probes_ns]
    return prof


def test_a_quiet_steady_machine_is_not_disturbed_and_causes_are_stated():
    prof = _profile(probes_ns=(1e6, 1.01e6, 0.99e6, 1e6))
    assert disturbance(prof) is None
    text = summary(prof)
    assert "cannot tell the cause" not in text
    assert "ops timed alone keep their own data in cache" in text
    assert "thread-pool creation falls in it, the first parallel op" in text


def test_a_busy_machine_turns_every_cause_into_what_was_measured():
    prof = _profile(busy_cpus=0.98)
    d = disturbance(prof)
    assert d is not None and d.figures == ("others took 0.98 CPUs and the hypervisor 0.00 "
                                           "over 3.0 s",)
    text = summary(prof)
    assert "keep their own data in cache" not in text
    assert ("e2e - (sum of warm medians + overhead) = 9.00 us (+22.5% of e2e); cannot tell "
            "the cause: the machine was disturbed (others took 0.98 CPUs") in text
    # who created the pool is counted, not timed: still said, with no cost claimed
    assert "it created 1 thread(s)): thread-pool creation falls in it" in text


def test_two_speed_states_are_a_disturbance():
    prof = _profile(probes_ns=(1e6, 1e6, 1e6, 1.38e6, 1.38e6, 1.37e6))
    d = disturbance(prof)
    assert d is not None and d.figures == ("the machine ran in 2 speed states, up to 1.38x "
                                           "slower",)
    assert "cannot tell the cause" in summary(prof)


def test_cause_keeps_the_measured_words_either_way():
    assert cause("x = 3 ms", "because", None, 0.5) == "x = 3 ms: because"
    d = disturbance(_profile(busy_cpus=1.5))
    assert cause("x = 3 ms", "because", d, 0.5).startswith("x = 3 ms; cannot tell the cause: ")


def test_a_difference_beyond_what_the_disturbance_could_make_keeps_its_cause():
    """Two speed states 1.10x apart cannot make e2e 22.5% longer than the per-op sum: the
    cause is said; 1.38x apart could, and it is not."""
    small = _profile(probes_ns=(1e6, 1e6, 1e6, 1.1e6, 1.1e6, 1.1e6))
    assert disturbance(small).reach == pytest.approx(0.10)
    assert "ops timed alone keep their own data in cache" in summary(small)
    large = _profile(probes_ns=(1e6, 1e6, 1e6, 1.38e6, 1.38e6, 1.38e6))
    assert "ops timed alone keep their own data in cache" not in summary(large)
