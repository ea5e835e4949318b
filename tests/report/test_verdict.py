"""The verdict's rules, each read alone (analysis/verdict.py), and the speed probe's states."""
from __future__ import annotations

from minigraph.analysis.verdict import Evidence, findings
from minigraph.measure.speed import probe, states


def _e(**kw) -> Evidence:
    base = dict(whole=1.0, probe=1.0, changed=(), gap_ns=0.0, n_ops=20, differ={},
                busy=(0.0, 0.0), data_ops_gap_ns=0.0)
    return Evidence(**{**base, **kw})


def test_nothing_differs_is_no_real_difference():
    assert findings(_e())[0].cls == "no real difference"


def test_the_probe_moving_with_the_whole_run_is_machine_speed():
    f = findings(_e(whole=1.38, probe=1.37, gap_ns=1e6))[0]
    assert f.cls == "machine speed" and f.share > 0.9


def test_a_probe_move_the_run_followed_by_less_than_the_floor_is_still_the_machine():
    """Back-to-back profiles: the probe 0.94x, the run 0.96x: the machine sped up, and that
    is the whole story; a probe move the run did not follow is no verdict of its own."""
    f = findings(_e(whole=0.96, probe=0.94, gap_ns=-4e5))[0]
    assert f.cls == "machine speed" and f.share == 1.0 and "0.96x (within 5%)" in f.evidence
    assert findings(_e(whole=1.0, probe=0.94))[0].cls == "no real difference"
    assert findings(_e(whole=1.03, probe=0.94))[0].cls == "no real difference"


def test_a_setting_the_user_changed_leads_the_machine():
    e = _e(whole=1.5, probe=1.0, gap_ns=1e6, differ={"threads": (("threads", 2, 1),)})
    assert [f.cls for f in findings(e)][0] == "threads"


def test_data_that_differ_lead_even_when_they_cost_nothing():
    e = _e(differ={"data": (("subnormal values", 0, 9408),)})
    f = findings(e)[0]
    assert f.cls == "data" and "would pay" in f.evidence


def test_one_changed_op_is_a_few_kernels_and_a_neighbour_is_contention():
    one = _e(changed=(("conv", 2.0, 1e6),), gap_ns=1e6)
    assert findings(one)[0].cls == "a few kernels"
    busy = _e(whole=1.3, probe=1.25, gap_ns=1e6, busy=(0.0, 0.9))
    assert findings(busy)[0].cls == "contention"


def test_an_op_stalled_on_the_less_busy_side_is_contention_when_both_were_busy():
    """Both sides beside neighbours (1.01 and 1.96 CPUs): A's parallel max_pool2d stalled at
    its barrier, B ran it 0.00x that; the busier side is B, the stall A's. Without both busy
    a lone changed op stays a few kernels."""
    stalled = (("max_pool2d", 0.004, -4e6),)
    both = _e(whole=0.94, probe=1.0, changed=stalled, gap_ns=-4e6, n_ops=5, busy=(1.01, 1.96))
    assert findings(both)[0].cls == "contention"
    one = _e(whole=0.94, probe=1.0, changed=stalled, gap_ns=-4e6, n_ops=5, busy=(0.0, 1.96))
    assert findings(one)[0].cls == "a few kernels"


def test_speed_states_group_probes_and_ignore_one_outlier():
    two = states([1.0e6] * 14 + [1.37e6] * 6)
    assert two.levels == (1.0, 1.37) and two.counts == (14, 6)
    one = states([1.0e6, 1.01e6, 1.02e6, 0.99e6] * 3 + [1.5e6])
    assert len(one.levels) == 1
    assert set(probe("x")) == {"where", "compute_ns", "memory_ns"}


def test_a_fleet_compare_says_why_each_device_differs_from_the_first():
    """Two devices' profiles of one model, the second run with one thread: the fleet
    comparison ends with the verdict of each device against the first."""
    import copy
    import json
    from pathlib import Path

    from minigraph.report.fleet import compare as fleet_compare
    from minigraph.results.fleet import DeviceResult, Fleet
    golden = Path(__file__).resolve().parents[1] / "data" / "golden" / "profile.json"
    first = json.loads(golden.read_text())
    second = copy.deepcopy(first)
    second["threads"]["tvm_num_threads"] = first["threads"]["tvm_num_threads"] + 1
    fleet = Fleet("profile", "127.0.0.1:9190", "t", "model.so", 2, [],
                  [DeviceResult(0, "127.0.0.1:9091", {}, {}, first),
                   DeviceResult(1, "127.0.0.1:9092", {}, {}, second)])
    text = fleet_compare(fleet, "warm")
    assert "Why #1 differs from #0: threads" in text, text[-600:]


def test_one_op_a_little_off_is_no_real_difference_but_a_2x_op_is_a_few_kernels():
    """Back-to-back pairs had one op at 0.95x or 1.13x beyond the noise test: placement
    between processes, not a changed kernel; a kernel made 2x is one."""
    small = findings(_e(changed=(("mean", 0.95, -2.0),), gap_ns=-2.0))[0]
    assert small.cls == "no real difference" and "1 passed the noise test" in small.evidence
    big = findings(_e(changed=(("conv", 2.0, 5e5),), gap_ns=5e5))[0]
    assert big.cls == "a few kernels" and big.share == 1.0


def test_kernel_code_is_a_build_difference_only_when_its_size_differs():
    """Digests differ for the same code moved in another library (rip-relative offsets):
    only code of another size is other instructions, a build difference."""
    from minigraph.analysis.evidence import _code_items
    same = {"nbytes": 100, "sha256": "a" * 64}
    moved = {"nbytes": 100, "sha256": "b" * 64}
    other = {"nbytes": 140, "sha256": "c" * 64}
    assert _code_items([(same, moved), (same, moved)]) == []
    (item,) = _code_items([(same, other), (same, moved)])
    assert item[0] == "kernel machine code" and "1 of 2" in item[2] and "1 more" in item[2]


def test_a_kernel_comparison_of_two_files_is_no_build_difference_by_the_files_alone():
    """--by-kernel pairs kernels of two files by design: the files' hashes are no cause; the
    target and the kernels' code are."""
    from minigraph.analysis.evidence import _of_kernels
    files = (("model.so sha256", "1" * 64, "2" * 64), ("graph.json sha256", "3" * 64, "4" * 64))
    assert _of_kernels({"build": files, "threads": (("threads", 2, 1),)}) == \
        {"threads": (("threads", 2, 1),)}
    target = ("build target mcpu", "znver5", "x86-64")
    assert _of_kernels({"build": (*files, target)}) == {"build": (target,)}
