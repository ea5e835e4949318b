"""One fresh process, one rung of the warm-up ladder, one timed iteration (diagnose's worker).

Run as ``python -m minigraph.diagnose.worker SPEC_JSON`` (a ``WorkerSpec``); prints one JSON
line: the per-op records, or an error (with its traceback when the spec asks for it). The
rungs and what each warms are in rungs.py. Rungs b..f wake the pool's workers right before the
timed iteration, so all of them start with the pool in the same state. Rung f also measures the
worker-sleep experiment: pairs of an iteration with the workers awake and one after an idle
gap longer than the pool's spin window.
"""
from __future__ import annotations

import json
import os
import resource
import sys
import time
import traceback

import numpy as np

from ..measure import speed
from ..measure.counters import (current_cpu, longest_wait_ns, pinned_cpus, process_counters,
                                sleeping, task_ids)
from ..measure.inflight import FLIGHT
from ..results import rungs
from ..runtime.debug import DebugExecutor
from ..runtime.doors import locate, open_model
from ..threadpool.wake import PoolWaker
from ..values.inputs import parse_input_args
from ..values.policy import prepare_values
from .spec import WorkerSpec

PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def timed_iteration(ex, known: set[int]) -> list[dict]:
    """Each op timed alone, with process-wide counters around it and the workers' state before."""
    out = []
    for i in range(len(ex.ops)):
        asleep = sleeping(task_ids() - known)
        c0, w0 = process_counters()
        FLIGHT.op(i)  # recorded before the clock starts (measure/inflight.py)
        t0 = time.perf_counter_ns()
        ex.call_op(i)
        t1 = time.perf_counter_ns()
        c1, w1 = process_counters()
        d = [b - a for a, b in zip(c0, c1)]
        out.append({"ns": t1 - t0, "minflt": d[0], "majflt": d[1], "nvcsw": d[2],
                    "nivcsw": d[3], "threads_created": d[4], "migrations": d[5],
                    "waited_ns": d[6], "longest_wait_ns": longest_wait_ns(w0, w1),
                    "asleep_before": asleep, "cpu": current_cpu()})
    return out


def steady_passes(ex, known: set[int], passes: int) -> tuple[list[list[float]], list[list[int]]]:
    """Per op, ``passes`` steady-state samples (ns) and the longest any of the op's threads
    waited for a CPU in each: op-by-op passes made as the timed iteration is (the same
    counters between ops), so each op's steady time pairs with its first-run time like for
    like."""
    runs = [timed_iteration(ex, known) for _ in range(passes)]
    return ([[float(r[i]["ns"]) for r in runs] for i in range(len(ex.ops))],
            [[int(r[i]["longest_wait_ns"]) for r in runs] for i in range(len(ex.ops))])


def touch_activations(ex) -> int:
    """Writes one byte per page of every pool that holds no input or param: takes the faults."""
    held = {ex.plan.entry_sid[ex.graph.eid(n)] for n in ex.graph.arg_nodes}
    pages = 0
    for sid, pool in enumerate(ex.pools):
        if sid not in held:
            view = np.from_dlpack(pool)
            view[::PAGE] = 0
            pages += len(view[::PAGE])
    return pages


def touch_weights(ex) -> int:
    """Reads one byte per page of every bound param: their page-table entries and TLB are
    touched while the caches keep almost nothing of them (a full read would leave whichever
    weights came last in the LLC and mix a cache effect into this step)."""
    pages = 0
    for name in sorted(ex.bound_params):
        view = np.from_dlpack(ex.get_input(name)).reshape(-1).view(np.uint8)
        int(view[::PAGE].sum(dtype=np.uint64))
        pages += len(view[::PAGE])
    return pages


def run_scratch(ex):
    """Every kernel once on a second set of buffers; returned so it stays allocated."""
    kernels = {op.func_name: op.fn for op in ex.ops}  # already resolved: same functions
    scratch = DebugExecutor(ex.graph, kernels, module=ex.module, plan=ex.plan, force=True)
    scratch.run_checked()
    return scratch


def keep_busy(waker, seconds: float) -> int:
    """Runs the wake kernel back to back for ``seconds``: the main thread and every worker stay
    busy (between jobs the workers spin), so the CPUs are at speed when the model starts."""
    calls, end = 0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        waker()
        calls += 1
    return calls


def prepare(ex, rung: str, waker, steady_runs: int, busy_s: float = 0.1
            ) -> tuple[dict, DebugExecutor | None]:
    """Applies every warm-up up to ``rung``; returns what each did (for the report) and the
    scratch executor of rung e (None below it), which the caller must keep alive until the
    timed work is done: freeing its buffers next to the timed iteration would put the unmaps
    right where the woken workers are about to be measured."""
    def reached(r: str) -> bool:
        return rungs.reached(rung, r)
    done: dict = {}
    scratch = None
    if reached("b"):
        waker()  # creates the pool exactly as a model's first parallel kernel would
    if reached("w"):
        done["busy_calls"] = keep_busy(waker, busy_s)
    if reached("c"):
        done["pages_touched"] = touch_activations(ex)
    if reached("d"):
        done["weight_pages_touched"] = touch_weights(ex)
    if reached("e"):
        scratch = run_scratch(ex)
    if reached("f"):
        for _ in range(steady_runs):
            ex.run()
    if reached("w"):
        keep_busy(waker, min(busy_s, 0.05))  # the warm-ups above may have idled the workers
    if reached("b"):
        waker()  # workers awake right now, whatever the warm-ups above took
    return done, scratch


def gap_experiment(ex, waker, known: set[int], gap_s: float, repeat: int) -> dict:
    """Worker sleep: ``repeat`` pairs of (workers awake -> iteration, idle ``gap_s`` ->
    iteration), each pair back to back in this process so its difference is the wake-up alone;
    per op the median record of each side is kept (one outlier in a pair cannot flip it)."""
    awake, gapped, asleep = [], [], []
    for _ in range(max(1, repeat)):
        waker()
        awake.append(timed_iteration(ex, known))
        asleep.append(idle_until_asleep(known, gap_s))
        gapped.append(timed_iteration(ex, known))
    return {"gap_base_ops": median_records(awake), "gap_ops": median_records(gapped),
            "gap_asleep": min(asleep)}


# how long an idle gap may be stretched for the workers to sleep: TVM's workers spin (yielding)
# for a count of rounds before they sleep, so the spin window is a time only on a quiet CPU:
# 0.13 s on an idle 2-vCPU guest, 0.14-0.17 s beside one spinning process, 0.2-0.8 s beside
# two, and past 2 s (the old 4 x 0.5 s limit) in suite runs beside two or three
GAP_LIMIT_S = 8.0


def idle_until_asleep(known: set[int], gap_s: float) -> int:
    """Idles ``gap_s``, then on until every worker is asleep (up to GAP_LIMIT_S in all); the
    workers asleep at the end. A neighbour on a worker's CPU stretches TVM's spin window
    (each yield of the spinning worker waits a scheduler slice): a fixed 0.5 s gap then left
    a worker spinning, and the iteration after it measured no wake-up at all."""
    time.sleep(gap_s)
    end = time.monotonic() + max(0.0, GAP_LIMIT_S - gap_s)
    workers = task_ids() - known
    while (n := sleeping(workers)) < len(workers) and time.monotonic() < end:
        time.sleep(min(0.05, gap_s))
    return n


def median_records(iterations: list[list[dict]]) -> list[dict]:
    """Per op, the record of the iteration whose time is the (lower) median: a real sample,
    so its counters stay consistent with its time."""
    return [sorted(recs, key=lambda r: r["ns"])[(len(recs) - 1) // 2] for recs in zip(*iterations)]


def run_spec(spec: WorkerSpec) -> dict:
    """Loads the model, prepares the rung, times one iteration (and the gap runs on rung f)."""
    before_tvm = task_ids()
    import tvm  # noqa: F401  (imported here, not inside the model's loading: start-up cost)

    startup = resource.getrusage(resource.RUSAGE_SELF)  # start-up and imports, before the model
    given = parse_input_args([f"{n}={path}" for n, path in spec.inputs.items()])
    model = open_model(locate(spec.lib, spec.graph, spec.params), force=spec.force,
                       complete=False, symbols=spec.shapes, inputs=given)
    prepare_values(model, given, spec.fill, spec.seed)
    ex = model.executor
    waker = PoolWaker(spec.wake_lib) if spec.wake_lib else (lambda: None)
    known = task_ids()
    FLIGHT.phase(f"rung {spec.rung}'s warm-ups")  # what a crash report says was running
    done, scratch = prepare(ex, spec.rung, waker, spec.steady_runs, spec.busy_s)
    FLIGHT.phase(f"rung {spec.rung}'s timed iteration")
    result = {"rung": spec.rung, "prepared": done, "ops": timed_iteration(ex, known)}
    # right after it, this process's own steady state: its speed, divided out by attribution
    FLIGHT.phase(f"rung {spec.rung}'s steady passes")
    result["steady"], result["steady_waited"] = steady_passes(ex, known, spec.reference_passes)
    # and the machine's speed, by a probe that never changes (measure/speed.py): does the
    # machine explain how much faster or slower this process ran than the others?
    probe = speed.settled_probe("worker")
    result["probe"] = {k: probe[k] for k in ("compute_ns", "memory_ns")}
    if spec.rung == "f" and spec.gap_s > 0:
        FLIGHT.phase("the worker-sleep experiment")
        t0 = time.monotonic()
        result.update(gap_experiment(ex, waker, known, spec.gap_s, spec.gap_repeat))
        result["gap_wall_s"] = time.monotonic() - t0  # for the parent's time estimate
    pool = task_ids() - known
    result["workers"] = len(pool)
    result["pinned_cpus"] = pinned_cpus(pool)  # where the pool's workers sit
    result["tvm_threads"] = len(known - before_tvm)
    result["startup_cpu_s"] = startup.ru_utime + startup.ru_stime
    del scratch  # freed only now, after every timed iteration
    return result


def main(argv: list[str]) -> int:
    debug = False
    try:
        spec = WorkerSpec.from_json(argv[0] if argv else "")
        debug = spec.debug
        if spec.inflight:  # the parent reads it if this process dies of a signal
            FLIGHT.attach(spec.inflight)
        print(json.dumps(run_spec(spec)))
    except KeyboardInterrupt:
        return 130
    except Exception as err:  # noqa: BLE001 - reported by the parent as this process's failure
        out = {"error": f"{type(err).__name__}: {err}"}
        if debug:
            out["traceback"] = traceback.format_exc()
        print(json.dumps(out))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
