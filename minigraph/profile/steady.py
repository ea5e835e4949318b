"""The steady state, interleaved: in-run passes, e2e runs and the executor's own overhead taken
in the same rounds, so that all three see the same machine.

A shared VM changes speed by 1.4x over seconds. Taken one after the other (ten in-run passes,
then, seconds later, twenty e2e runs), in-run's sum and e2e disagreed by -34% to +29% from one
profile to the next: the gap was the machine, not the executor. Here every round takes one e2e
run and one in-run pass (which goes first alternates, so neither always finds the other's
caches), one sample of the executor's overhead (the run loop with no-op kernels, plain and
with in-run's clock stamps, whose difference is what the stamps add to an in-run pass), and
reads the machine's counters around it. analysis/agreement.py then judges in-run against e2e
by their own spread, and says when the machine changed speed, with the evidence.
Counterpart: none in TVM: the debug executor's ``profile()`` and ``benchmark()`` never ran
together.
"""
from __future__ import annotations

import time
from typing import Callable

from ..measure import contention, speed
from ..measure.clock import Clock, Progress, no_progress, stamped_pass, stamped_passes
from ..results.modes import ModeName
from ..results.profile import Profile, Settings
from ..runtime.bind import BoundOp
from ..runtime.debug import DebugExecutor

# lazy: TVM (~1.2 s to import) is imported where it is called; TVM-free commands load this module

NOP_LOOPS = 5  # no-op run-loop passes per round, timed together: one is a few us, near the clock
PROBE_EVERY = 5  # rounds between two speed probes (each ~8 ms, and then one untimed run)


def nop_call(op: BoundOp, nop: Callable) -> tuple[Callable, tuple]:
    """The op's call with its kernel replaced by a no-op called the same way: the call's own
    twin where its function offers one (``nop_twin``: the legacy kernels' prebuilt call into
    a native no-op, runtime/legacy/call.py), else TVM's ``testing.nop``."""
    twin = getattr(op.call[0], "nop_twin", None)
    return (twin() if twin is not None else None) or (nop, op.args)


def nop_calls(ex: DebugExecutor) -> tuple[tuple[Callable, tuple], ...]:
    """The executor's call list with every kernel replaced by a no-op (``nop_call``)."""
    import tvm
    nop = tvm.get_global_func("testing.nop")
    return tuple(nop_call(op, nop) for op in ex.ops)


def overhead(calls: tuple[tuple[Callable, tuple], ...], clock: Clock,
             loops: int = NOP_LOOPS) -> tuple[float, float]:
    """(ns per run of the run loop over ``calls``, ns per in-run pass over them with its
    clock stamps): the executor's own cost, and that plus what the stamps cost."""
    t0 = clock()
    for _ in range(loops):
        for fn, args in calls:
            fn(*args)
    t1 = clock()
    for _ in range(loops):  # the stamped pass alone: the samples' bookkeeping stays outside
        stamped_pass(calls, clock)
    return (t1 - t0) / loops, (clock() - t1) / loops


def steady_rounds(ex: DebugExecutor, settings: Settings, prof: Profile, clock: Clock,
                  progress: Progress = no_progress, wall: Callable[[], float] = time.monotonic
                  ) -> None:
    """Fills the profile's in-run rows, ``e2e_ns``, ``dispatch_ns`` and ``rounds`` (one entry
    per round: when, how long, the machine's counters, what in-run's stamps cost, which went
    first) as the rounds come, so an interrupt keeps every round measured."""
    inrun, e2e = ModeName.IN_RUN in settings.modes, ModeName.E2E in settings.modes
    n = max(settings.inrun_passes if inrun else 0, settings.e2e_repeat if e2e else 0)
    rows = prof.samples.setdefault(ModeName.IN_RUN, [[] for _ in ex.ops]) if inrun else None
    nops = nop_calls(ex) if e2e else ()
    ex.run_checked()  # untimed: whatever ran before left other data in the caches
    first = contention.sample()  # the counters' readings are kept cumulative from here
    t_start = wall()
    for k in range(n):
        progress(ModeName.IN_RUN if inrun else ModeName.E2E, k, n)
        t_round, e2e_first = wall(), k % 2 == 0
        order = (ModeName.E2E, ModeName.IN_RUN)
        for part in order if e2e_first else order[::-1]:
            if part == ModeName.E2E and e2e:
                t0 = clock()
                ex.run()
                prof.e2e_ns.append(float(clock() - t0))
            elif part == ModeName.IN_RUN and rows is not None:
                for row, (ns,) in zip(rows, stamped_passes(ex.calls, 1, clock)):
                    row.append(ns)
        plain, stamped = overhead(nops, clock) if e2e else (0.0, 0.0)
        if e2e:
            prof.dispatch_ns.append(plain)
        prof.rounds.append({"t_s": t_round - t_start, "wall_s": wall() - t_round,
                            "stamp_ns": stamped - plain if e2e else None,
                            "e2e_first": e2e_first, **_counters(first)})
        if (k + 1) % PROBE_EVERY == 0 and k + 1 < n:
            speed.record(prof.speed, f"round {k + 1}")
            ex.run()  # untimed: the probe's 16 MiB copy left other data in the caches


def _counters(first: contention.Sample | None) -> dict:
    """The machine's busy and steal seconds and this process's CPU seconds since ``first``
    (cumulative: a window of any rounds reads as the difference of its ends; one round alone
    can be shorter than the counters' 10 ms tick)."""
    now = contention.sample()
    if first is None or now is None:
        return {}
    return {"since_s": now[0] - first[0], "busy_s": now[1] - first[1],
            "steal_s": now[2] - first[2], "own_s": now[3] - first[3], "cpus": now[4]}
