"""Roofline numbers: the machine's measured peak (cached), GFLOP/s and % of peak per op in the
report and the CSV, and the flag on a kernel far below its neighbours."""
from __future__ import annotations

import csv
import io
import json

from minigraph.analysis.roofline import roofline
from minigraph.profile.roofline import attach, shape_flops
from minigraph.report.exports import to_csv
from minigraph.report.roofline import render
from minigraph.results.profile import Profile


def _profile(ns_per_op: list[float], flops: list[float], peak_gflops: float = 100.0,
             shapes: list[int] | None = None) -> Profile:
    """Op i's arguments: two 1x4x4x16 tensors and an int64 vector of shapes[i] (default i)
    elements, so ops differ in shape unless ``shapes`` says otherwise."""
    shapes = shapes or list(range(len(ns_per_op)))
    ops = [{"index": i, "name": f"op{i}", "func_name": f"f{i}", "kind": "conv2d", "hash": "",
            "shapes": [["float32", [1, 4, 4, 16]], ["float32", [1, 4, 4, 16]],
                       ["int64", [shapes[i]]]], "layouts": {}}
           for i in range(len(ns_per_op))]
    prof = Profile(ops, {"modes": ["warm"]}, {"warm": [[ns, ns, ns] for ns in ns_per_op]})
    attach(prof, {"kernels": {f"f{i}": {"flops": f} for i, f in enumerate(flops)}},
           {"gflops": peak_gflops, "gflops_per_thread": peak_gflops, "threads": 1,
            "method": "test"})
    return prof


def test_gflops_and_percent_of_peak_are_exact():
    prof = _profile([1_000.0, 2_000.0], [50e3, 50e3])  # 50 kFLOP each, over 2 KiB
    r0, r1 = roofline(prof).ops
    assert prof.ops[0]["flops"] == 50e3 and r0.intensity == 50e3 / 2048
    assert r0.gflops == 50.0 and r0.pct_peak == 50.0  # 50 kFLOP in 1 us = 50 GFLOP/s
    assert r1.gflops == 25.0 and r1.pct_peak == 25.0
    text = render(prof)
    assert "peak 100 GFLOP/s" in text
    assert "in 3.00 us = 33.3 GFLOP/s (33% of peak)" in text


def test_kernel_far_below_its_neighbours_is_flagged():
    times = [1_000.0] * 9
    times[4] = 10_000.0  # the same work, 10x slower
    prof = _profile(times, [50e3] * 9)
    flagged = [r.index for r in roofline(prof).ops if r.flagged]
    assert flagged == [4]
    assert "op 4 op4: 5.0 GFLOP/s is below 33% of its compute-heavy neighbours' 50.0" \
        in render(prof)


def test_a_slow_op_whose_same_shape_twin_ran_fast_is_not_called_badly_scheduled():
    times = [1_000.0] * 9
    times[4] = 10_000.0
    prof = _profile(times, [50e3] * 9, shapes=[0, 1, 2, 3, 4, 5, 6, 7, 4])  # op 8: op 4's shape
    rows = roofline(prof).ops
    assert not any(r.flagged for r in rows) and rows[4].twin == (8, 50.0)
    text = render(prof)
    assert "poorly scheduled" not in text
    assert "but op 8 of the same shape ran at 50.0: the same computation at another speed" \
        in text
    times[8] = 10_000.0  # both slow: the computation itself runs slow
    assert [r.index for r in roofline(_profile(times, [50e3] * 9,
                                               shapes=[0, 1, 2, 3, 4, 5, 6, 7, 4])).ops
            if r.flagged] == [4, 8]


def test_on_a_busy_machine_the_flag_states_no_cause():
    times = [1_000.0] * 9
    times[4] = 10_000.0
    prof = _profile(times, [50e3] * 9)
    prof.contention.update(wall_s=2.0, others_cpus=0.98, steal_cpus=0.0, cpus=2.0)
    text = render(prof)
    assert "poorly scheduled" not in text
    assert ("op 4 op4: 5.0 GFLOP/s is below 33% of its compute-heavy neighbours' 50.0 GFLOP/s; "
            "cannot tell the cause: the machine was disturbed (others took 0.98 CPUs") in text


def test_memory_bound_ops_are_not_flagged():
    times = [1_000.0] * 5
    times[2] = 10_000.0
    flops = [50e3] * 5
    flops[2] = 1e3  # 1 kFLOP over 2 KiB of arguments: not arithmetic-heavy
    assert not any(r.flagged for r in roofline(_profile(times, flops)).ops)


def test_csv_carries_flops_gflops_and_percent_of_peak():
    prof = _profile([1_000.0, 2_000.0], [50e3, 50e3])
    rows = list(csv.DictReader(io.StringIO(to_csv(prof))))
    assert [r["gflops"] for r in rows] == ["50.00", "25.00"]
    assert [r["pct_peak"] for r in rows] == ["50.0", "25.0"]
    assert rows[0]["flops"] == "50000"


def test_flops_survive_a_json_round_trip():
    prof = _profile([1_000.0], [50e3])
    again = Profile.from_dict(json.loads(json.dumps(prof.to_dict())))
    assert again.ops[0]["flops"] == 50e3 and again.env["peak"]["gflops"] == 100.0
    assert render(again) == render(prof)


def test_peak_is_measured_once_and_cached(tmp_path, monkeypatch):
    from minigraph.measure import peak
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    first = peak.machine_peak(2)
    assert first["gflops_per_thread"] > 1.0  # any real CPU does > 1 GFLOP/s with FMAs
    assert first["gflops"] == round(2 * first["gflops_per_thread"], 2)
    cached = json.loads((tmp_path / "minigraph" / "peak.json").read_text())
    assert cached[first["key"]]["gflops_per_thread"] == first["gflops_per_thread"]
    monkeypatch.setattr(peak, "measure_peak", lambda: (_ for _ in ()).throw(AssertionError))
    assert peak.machine_peak(1)["gflops_per_thread"] == first["gflops_per_thread"]


def _peaks(monkeypatch, cached: float, fresh: float) -> list[bool]:
    """session.machine_peak returning ``cached`` GFLOP/s, or ``fresh`` when asked to measure
    again; the list records each call's refresh flag."""
    from minigraph.profile import session
    calls: list[bool] = []

    def machine_peak(threads: int = 1, refresh: bool = False) -> dict:
        calls.append(refresh)
        g = fresh if refresh else cached
        return {"gflops": g * threads, "gflops_per_thread": g, "threads": threads,
                "method": "test"}
    monkeypatch.setattr(session, "machine_peak", machine_peak)
    return calls


def _build(n: int) -> dict:
    return {"kernels": {f"f{i}": {"flops": 50e3} for i in range(n)}}


def test_a_rate_above_the_cached_peak_measures_the_peak_again(monkeypatch):
    """50 GFLOP/s against a cached 20 (taken on a busy machine): measured again, 100."""
    from minigraph.profile.session import _attach_roofline
    calls = _peaks(monkeypatch, cached=20.0, fresh=100.0)
    prof = _profile([1_000.0, 2_000.0], [50e3, 50e3])
    prof.threads = {"tvm_num_threads": 1}
    _attach_roofline(prof, _build(2))
    assert calls == [False, True]
    assert max(r.pct_peak for r in roofline(prof).ops) == 50.0
    assert "(33% of peak)" in render(prof)


def test_a_peak_still_below_the_rates_is_not_shown_as_a_share(monkeypatch):
    from minigraph.profile.session import _attach_roofline
    _peaks(monkeypatch, cached=20.0, fresh=30.0)
    prof = _profile([1_000.0, 2_000.0], [50e3, 50e3])
    prof.threads = {"tvm_num_threads": 1}
    _attach_roofline(prof, _build(2))
    assert prof.env["peak"]["below_rates"] is True
    assert all(r.pct_peak is None for r in roofline(prof).ops)
    text = render(prof)
    assert "of peak" not in text and "peak unknown: ops ran faster than the 30 GFLOP/s" in text
    assert "%" not in text.split("\n", 2)[1]


def test_flops_from_shapes_where_no_build_json_counts_them():
    conv = {"kind": "conv2d", "shapes": [["float32", [1, 3, 8, 8]], ["float32", [8, 3, 3, 3]],
                                         ["float32", [1, 8, 8, 8]]]}
    assert shape_flops(conv) == 2.0 * (8 * 8 * 8) * (3 * 3 * 3)  # NCHW, OIHW
    nhwc = {"kind": "conv2d", "shapes": [["float32", [1, 8, 8, 3]], ["float32", [3, 3, 3, 8]],
                                         ["float32", [1, 8, 8, 8]]]}
    assert shape_flops(nhwc) == 2.0 * (8 * 8 * 8) * (3 * 3 * 3)  # NHWC, HWIO
    mm = {"kind": "dense/matmul", "shapes": [["float32", [1, 128]], ["float32", [128, 10]],
                                             ["float32", [1, 10]]]}
    assert shape_flops(mm) == 2.0 * 10 * 128
    packed = {"kind": "conv2d", "shapes": [["float32", [1, 1, 8, 8, 16]],
                                           ["float32", [1, 1, 3, 3, 16, 16]],
                                           ["float32", [1, 1, 8, 8, 16]]]}
    assert shape_flops(packed) is None and shape_flops({"kind": "pooling", "shapes": []}) is None
    prof = _profile([1_000.0], [0.0])
    prof.ops[0].update(func_name="not-in-build-json", kind="conv2d", shapes=conv["shapes"])
    prof.ops[0].pop("flops")
    attach(prof, {"kernels": {}}, None)
    assert prof.ops[0]["flops"] == shape_flops(conv) and prof.ops[0]["flops_from"] == "shapes"
    assert "FLOPs from the argument shapes" in render(prof)
