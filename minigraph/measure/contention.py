"""Contention: the CPU time the rest of the machine took while we measured.

A timing can be repeated and summarised, but not cleaned of a neighbour that held a CPU for
the whole window; that has to be measured beside it. This reads the machine's busy and steal
time from /proc/stat and our own CPU time (this process, its threads and its reaped children)
from ``os.times()`` at both ends of a window; the difference is what other processes and the
hypervisor took (a report's line about it: analysis/contention.py). Counterpart: none in
TVM (its profilers record no machine state at all).
"""
from __future__ import annotations

import os
import time
from contextlib import contextmanager
from dataclasses import MISSING, asdict, dataclass, fields
from typing import Callable, Iterator

# /proc/stat "cpu" columns: user nice system idle iowait irq softirq steal guest guest_nice
_BUSY_COLUMNS = (0, 1, 2, 5, 6)   # guest time is already inside user
_STEAL_COLUMN = 7

Sample = tuple[float, ...]   # (wall_s, machine busy_s, steal_s, our cpu_s, machine CPUs)
BUSY_CPUS = 0.25  # others' plus the hypervisor's CPUs, on average, that move a timing


@dataclass(frozen=True)
class Contention:
    """Averages over one window, in CPUs (1.0 = one CPU busy for the whole window)."""

    wall_s: float
    others_cpus: float   # busy in processes that are not this one or its reaped children
    steal_cpus: float    # taken by the hypervisor from this guest's vCPUs
    cpus: float = 0.0    # CPUs /proc/stat counts (0: unknown, e.g. a record saved before)
    others_raw_cpus: float = 0.0  # before clamping to [0, cpus]; differs only when clamped

    @property
    def busy(self) -> bool:
        """More than a quarter of a CPU taken from us on average: enough to move a timing."""
        return self.others_cpus + self.steal_cpus > BUSY_CPUS

    @property
    def clamped(self) -> bool:
        return self.cpus > 0 and self.others_raw_cpus > self.cpus

    def describe(self) -> str:
        text = (f"other processes used {self.others_cpus:.2f} CPUs and the hypervisor "
                f"{self.steal_cpus:.2f} on average over {self.wall_s:.1f} s")
        if self.clamped:
            text += (f" (the counters gave {self.others_raw_cpus:.2f} CPUs, more than this "
                     f"machine's {self.cpus:.0f}: /proc/stat's busy time and our own CPU time "
                     "disagreed, e.g. CPU time of processes we started but had not reaped, or "
                     "a VM whose vCPUs were paused; shown clamped to the machine)")
        return text

    def to_dict(self) -> dict:
        return asdict(self)


def read_proc_stat(path: str = "/proc/stat") -> tuple[float, float, int] | None:
    """(busy_s, steal_s) summed over all CPUs since boot and the number of CPUs counted, or
    None where /proc is absent."""
    try:
        with open(path) as f:
            lines = f.readlines()
    except OSError:
        return None
    fields = lines[0].split() if lines else []
    if not fields or fields[0] != "cpu":
        return None
    ticks = [int(x) for x in fields[1:]] + [0] * 10
    cpus = sum(1 for line in lines[1:] if line.startswith("cpu"))
    hz = os.sysconf("SC_CLK_TCK")
    return (sum(ticks[i] for i in _BUSY_COLUMNS) / hz, ticks[_STEAL_COLUMN] / hz, cpus)


def own_cpu_s() -> float:
    """Our CPU seconds so far: this process, its threads and its reaped children."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def tree_cpu_s(pid: int | None) -> float:
    """A live child's user + system CPU seconds, its own and its reaped children's (ours,
    though not in ``own_cpu_s`` until it is reaped); 0 where unreadable (not started, gone)."""
    if pid is None:
        return 0.0
    import psutil  # lazy: ~40 ms, and only a ladder with a zygote asks
    try:
        t = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return 0.0
    return t.user + t.system + t.children_user + t.children_system


def sample(stat: Callable[[], tuple[float, ...] | None] = read_proc_stat,
           own: Callable[[], float] = own_cpu_s,
           clock: Callable[[], float] = time.monotonic) -> Sample | None:
    """One end of a window; None where the machine's counters cannot be read."""
    machine = stat()
    if machine is None:
        return None
    cpus = float(machine[2]) if len(machine) > 2 else 0.0
    return (clock(), machine[0], machine[1], own(), cpus)


def between(start: Sample | None, end: Sample | None) -> Contention | None:
    """What others took between two samples; None if either end is unknown or no time passed.
    "Others" is clamped to [0, the machine's CPUs]: jiffies are 10 ms, so a short window can
    read slightly negative, and counters that disagree can read more than the machine has."""
    if start is None or end is None or end[0] <= start[0]:
        return None
    wall_s = end[0] - start[0]
    raw = ((end[1] - start[1]) - (end[3] - start[3])) / wall_s
    cpus = end[4] if len(end) > 4 else 0.0
    others = min(max(0.0, raw), cpus) if cpus else max(0.0, raw)
    return Contention(wall_s, others, max(0.0, (end[2] - start[2]) / wall_s), cpus, raw)


@contextmanager
def recorded(into: dict) -> Iterator[None]:
    """Measures the window of the ``with`` body, however it ends, into ``into`` (left empty
    where the machine's counters cannot be read)."""
    start = sample()
    try:
        yield
    finally:
        busy = between(start, sample())
        into.update(busy.to_dict() if busy else {})


def saved(record: object) -> Contention | None:
    """A Contention read back from its saved dict; None when the record is absent (no /proc),
    older or corrupt."""
    try:
        return Contention(*(float(record[f.name])  # type: ignore[index]
                            for f in fields(Contention)
                            if f.name in record or f.default is MISSING))  # type: ignore
    except (KeyError, TypeError, ValueError):
        return None

