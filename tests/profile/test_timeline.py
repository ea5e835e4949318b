"""The real timeline: one real pass per single-pass mode (op start/end with the gaps, every
thread's CPU time), saved with the profile and drawn as a Perfetto trace beside the medians."""
from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest
from clocks import StepClock

from minigraph.errors import InputError
from minigraph.profile.profiler import measure
from minigraph.profile.recorder import PassRecorder
from minigraph.readers.documents import parse_profile
from minigraph.report import exports
from minigraph.results import files
from minigraph.results.profile import Profile, Settings
from minigraph.runtime.debug import DebugExecutor


@pytest.fixture(scope="module")
def ex(tiny_cnn) -> DebugExecutor:
    ex = DebugExecutor.from_files(tiny_cnn / "model.so", tiny_cnn / "graph.json")
    ex.set_input("data", np.ones(ex.graph.shapes[0], "float32"))
    return ex


def test_injected_clock_places_every_op_gap_and_warm_up_exactly(ex):
    prof = measure(ex, Settings(modes=("first-run", "one-pass"), warmups=2), clock=StepClock(1000))
    n = len(ex.ops)
    first, one = prof.timeline["first-run"], prof.timeline["one-pass"]
    # one clock reading before and one after each op: ops 1 us long, 1 us apart
    assert first.op_start_ns == [2000 * i for i in range(n)]
    assert first.op_end_ns == [2000 * i + 1000 for i in range(n)]
    assert [first.gap_ns(i) for i in range(n)] == [0] + [1000] * (n - 1)
    assert [(s["name"], s["start_ns"], s["end_ns"]) for s in one.spans] == [
        ("pool reset", 0, 1000), ("warm-up run 1", 2000, 3000), ("warm-up run 2", 4000, 5000)]
    assert one.op_start_ns[0] == 6000 and one.clock_ns > first.clock_ns
    assert [one.op_ns(i) for i in range(n)] == [1000] * n == [s[0] for s in
                                                              prof.samples["one-pass"]]
    main = first.main()
    assert main is not None and main.tid == threading.get_native_id()
    assert all(main.op_cpu_ns(i) is not None and main.op_cpu_ns(i) >= 0 for i in range(n))
    rows = first.rows()  # what an HTML renderer reads
    assert [r["start_ns"] for r in rows] == first.op_start_ns and rows[1]["gap_before_ns"] == 1000
    assert rows[0]["cpu_ns"][main.tid] == main.op_cpu_ns(0)


def test_recorder_sees_a_busy_thread_and_one_created_mid_op():
    """Real threads, real CPU clocks: while the main thread sleeps through an 'op', a spinning
    thread uses CPU; a thread started during the op is followed from its creation."""
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            pass
    spinner = threading.Thread(target=spin)
    spinner.start()
    try:
        rec = PassRecorder("first-run", time.perf_counter_ns, follow=True)
        rec.before()
        t0 = time.perf_counter_ns()
        late = threading.Thread(target=spin)
        late.start()
        time.sleep(0.2)
        t1 = time.perf_counter_ns()
        rec.after(t0, t1)
        real = rec.finish()
    finally:
        stop.set()
        spinner.join()
        late.join()
    by_tid = {t.tid: t for t in real.threads}
    busy = by_tid[spinner.native_id].op_cpu_ns(0)
    assert busy is not None and busy > 20_000_000  # the GIL is shared: at least 10% of 200 ms
    assert real.main().op_cpu_ns(0) < 0.5 * busy  # it slept
    new = by_tid[late.native_id]
    assert new.cpu_start_ns == [None] and new.op_cpu_ns(0) > 0  # counted from its creation


def test_saved_profile_keeps_the_timeline_and_rejects_a_corrupt_one(ex):
    prof = measure(ex, Settings(modes=("first-run", "one-pass"), warmups=1))
    again = parse_profile(files.to_json(prof).encode())
    assert again.timeline == prof.timeline
    assert files.from_msgpack(files.to_msgpack(prof)).timeline == prof.timeline
    doc = prof.to_dict()
    doc["timeline"]["first-run"]["op_end_ns"] = doc["timeline"]["first-run"]["op_end_ns"][:-1]
    with pytest.raises(InputError, match=r"timeline\.first-run: op_start_ns and op_end_ns"):
        Profile.from_dict(doc)
    doc = prof.to_dict()
    doc["timeline"]["one-pass"]["threads"][0]["cpu_end_ns"][0] = "x"
    with pytest.raises(InputError, match=r"timeline\.one-pass: threads\[0\]"):
        Profile.from_dict(doc)
    del doc["timeline"]  # older files have none: still a profile
    assert Profile.from_dict(doc).timeline == {}


def test_trace_draws_real_passes_with_gaps_and_medians_apart(ex):
    prof = measure(ex, Settings(modes=("first-run", "one-pass", "e2e"), warmups=1, e2e_repeat=2))
    trace = json.loads(json.dumps(exports.to_trace(prof)))["traceEvents"]
    procs = {e["pid"]: e["args"]["name"] for e in trace if e["name"] == "process_name"}
    assert procs[exports.MEDIANS_PID].startswith("per-mode medians")
    real = {pid: name for pid, name in procs.items() if "one real pass" in name}
    assert sorted(n.split(":")[0] for n in real.values()) == ["first-run", "one-pass"]
    main = threading.get_native_id()
    for pid in real:
        ops = [e for e in trace if e["ph"] == "X" and e["pid"] == pid and e["tid"] == main
               and e.get("cat") != "run"]
        assert len(ops) == len(ex.ops)
        for a, b in zip(ops, ops[1:]):  # in order, never overlapping, a real gap between
            assert b["ts"] > a["ts"] + a["dur"]
            assert b["args"]["gap_before_ns"] > 0
        assert any(e["ph"] == "C" and e["pid"] == pid for e in trace)  # CPU-use counters
    medians = [e for e in trace if e["ph"] == "X" and e["pid"] == exports.MEDIANS_PID]
    assert len(medians) == 2 * len(ex.ops) and medians[0]["ts"] == 0
