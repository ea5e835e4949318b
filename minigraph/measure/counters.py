"""Per-thread and per-process counters read around a timed op (getrusage, /proc).

Page faults, context switches, threads created (a change across an op means it created TVM's
thread pool), CPU migrations, the CPU a thread runs on and which threads are asleep. Readers
only: nothing here times anything. Counterpart: none in TVM (its profilers count nothing).
"""
from __future__ import annotations

import functools
import os
import resource
import time
from typing import Callable, Iterable

COUNTER_KEYS = ("minflt", "majflt", "nvcsw", "nivcsw", "threads_created")


def current_cpu() -> int:
    """The CPU this thread runs on now (glibc sched_getcpu; Python's os lacks it), -1 if unknown."""
    return int(_sched_getcpu()())


@functools.cache
def _sched_getcpu() -> Callable[[], int]:
    import ctypes
    try:
        return ctypes.CDLL(None).sched_getcpu
    except (OSError, AttributeError):
        return lambda: -1


def task_ids() -> set[int]:
    """The ids of this process's threads (tasks), from /proc/self/task."""
    try:
        return {int(t) for t in os.listdir("/proc/self/task")}
    except OSError:
        return set()


def thread_rusage() -> tuple[int, int, int, int]:
    """This thread's minor and major faults, voluntary and involuntary context switches."""
    r = resource.getrusage(getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF))
    return r.ru_minflt, r.ru_majflt, r.ru_nvcsw, r.ru_nivcsw


def _thread_clock(tid: int) -> int:
    """The clockid of thread ``tid``'s CPU-time clock: Linux's MAKE_THREAD_CPUCLOCK(tid,
    CPUCLOCK_SCHED), what pthread_getcpuclockid returns for that thread."""
    return (~tid << 3) | 6


def thread_cpu_ns(tids: Iterable[int]) -> dict[int, int]:
    """CPU time (ns) each of this process's threads ``tids`` has used since it started, from
    its POSIX thread CPU clock: exact to the ns and current even for a thread running right now
    on another CPU (/proc/.../schedstat lags up to a scheduler tick). Costs ~1 us a thread;
    threads that ended (or a platform without these clocks) are left out."""
    out = {}
    for tid in tids:
        try:
            out[tid] = time.clock_gettime_ns(_thread_clock(tid))
        except (OSError, AttributeError, OverflowError):
            pass
    return out


def thread_names(tids: Iterable[int]) -> dict[int, str]:
    """Each thread's name (/proc comm), "" where it is gone."""
    return {tid: _task_field(tid, "comm").strip() for tid in tids}


def delta(before: tuple[int, ...], after: tuple[int, ...], keys: tuple[str, ...] = COUNTER_KEYS
          ) -> dict[str, int]:
    """Counter differences across a region, by name."""
    return {k: b - a for k, a, b in zip(keys, before, after)}


def _task_field(tid: int, name: str) -> str:
    try:
        with open(f"/proc/self/task/{tid}/{name}") as f:
            return f.read()
    except OSError:  # the thread ended between listdir and open
        return ""


def sleeping(tids: set[int]) -> int:
    """How many of ``tids`` are asleep (state S: a TVM worker waiting on its futex; a spinning
    worker shows R because it keeps calling sched_yield)."""
    states = [_task_field(t, "stat").rsplit(")", 1)[-1].split()[:1] for t in tids]
    return sum(1 for s in states if s == ["S"])


def pinned_cpus(tids: Iterable[int]) -> list[int]:
    """The CPUs that threads ``tids`` are pinned to: those whose affinity is narrower than
    this process's own. TVM pins each pool worker to one CPU but leaves the main thread free
    (threading_backend.cc ``SetAffinity`` with ``exclude_worker0``), so the main thread can be
    scheduled onto a worker's CPU and queue behind it; read where that happened."""
    mine, out = os.sched_getaffinity(0), set()
    for tid in tids:
        try:
            cpus = os.sched_getaffinity(tid)
        except OSError:  # the thread has exited
            continue
        if cpus < mine:
            out |= cpus
    return sorted(out)


def migrations(tids: set[int]) -> int:
    """CPU migrations of the threads ``tids`` (scheduler debug stats, if readable)."""
    total = 0
    for tid in tids:
        for line in _task_field(tid, "sched").splitlines():
            if line.startswith("se.nr_migrations"):
                total += int(line.split(":")[1])
    return total


def run_delays(tids: Iterable[int]) -> dict[int, int]:
    """Per thread, the nanoseconds it has spent runnable but waiting for a CPU (the second
    field of /proc/self/task/TID/schedstat, kept by the scheduler on every mainstream
    kernel); threads whose field is unreadable are absent. Across an op it is the time a
    neighbour (another process, the hypervisor's other guests) took from the op: a TVM worker
    that waited 4 ms for its CPU stalls the whole parallel kernel at the barrier for those 4 ms."""
    out = {}
    for tid in tids:
        fields = _task_field(tid, "schedstat").split()
        if len(fields) > 1 and fields[1].isdigit():
            out[tid] = int(fields[1])
    return out


def longest_wait_ns(before: dict[int, int], after: dict[int, int]) -> int:
    """The longest any one thread waited for a CPU between two run_delays readings (a thread
    born in between: all of its wait). Not the sum: under a steady neighbour every thread
    waits its share all the time, and two threads waiting at once stall an op once."""
    return max((ns - before.get(tid, 0) for tid, ns in after.items()), default=0)


def process_counters() -> tuple[tuple[int, ...], dict[int, int]]:
    """Process-wide (all threads: workers fault pages too) faults and context switches, the
    thread count, the threads' CPU migrations and their time waiting for a CPU (ns, summed),
    with one /proc listing; and each thread's wait (run_delays) for ``longest_wait_ns``."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    tids = task_ids()
    delays = run_delays(tids)
    return (r.ru_minflt, r.ru_majflt, r.ru_nvcsw, r.ru_nivcsw, len(tids), migrations(tids),
            sum(delays.values())), delays
