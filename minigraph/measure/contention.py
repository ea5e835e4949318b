"""Contention: the CPU time the rest of the machine took while we measured.

A timing can be repeated and summarised, but not cleaned of a neighbour that held a CPU for
the whole window; that has to be measured beside it. This reads the machine's busy and steal
time from /proc/stat and our own CPU time (this process, its threads and its reaped children)
from ``os.times()`` at both ends of a window; the difference is what other processes and the
hypervisor took. Counterpart: none in TVM (its profilers record no machine state at all).
"""
from __future__ import annotations

import os
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from typing import Callable, Iterator

# /proc/stat "cpu" columns: user nice system idle iowait irq softirq steal guest guest_nice
_BUSY_COLUMNS = (0, 1, 2, 5, 6)   # guest time is already inside user
_STEAL_COLUMN = 7

Sample = tuple[float, float, float, float]   # (wall_s, machine busy_s, steal_s, our cpu_s)


@dataclass(frozen=True)
class Contention:
    """Averages over one window, in CPUs (1.0 = one CPU busy for the whole window)."""

    wall_s: float
    others_cpus: float   # busy in processes that are not this one or its reaped children
    steal_cpus: float    # taken by the hypervisor from this guest's vCPUs

    @property
    def busy(self) -> bool:
        """More than a quarter of a CPU taken from us on average: enough to move a timing."""
        return self.others_cpus + self.steal_cpus > 0.25

    def describe(self) -> str:
        return (f"other processes used {self.others_cpus:.2f} CPUs and the hypervisor "
                f"{self.steal_cpus:.2f} on average over {self.wall_s:.1f} s")

    def to_dict(self) -> dict:
        return asdict(self)


def read_proc_stat(path: str = "/proc/stat") -> tuple[float, float] | None:
    """(busy_s, steal_s) summed over all CPUs since boot, or None where /proc is absent."""
    try:
        with open(path) as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    ticks = [int(x) for x in fields[1:]] + [0] * 10
    hz = os.sysconf("SC_CLK_TCK")
    return (sum(ticks[i] for i in _BUSY_COLUMNS) / hz, ticks[_STEAL_COLUMN] / hz)


def _own_cpu_s() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def sample(stat: Callable[[], tuple[float, float] | None] = read_proc_stat,
           own: Callable[[], float] = _own_cpu_s,
           clock: Callable[[], float] = time.monotonic) -> Sample | None:
    """One end of a window; None where the machine's counters cannot be read."""
    machine = stat()
    if machine is None:
        return None
    return (clock(), machine[0], machine[1], own())


def between(start: Sample | None, end: Sample | None) -> Contention | None:
    """What others took between two samples; None if either end is unknown or no time passed."""
    if start is None or end is None or end[0] <= start[0]:
        return None
    wall_s = end[0] - start[0]
    others_s = (end[1] - start[1]) - (end[3] - start[3])
    # jiffies are 10 ms: a short window can read slightly negative; contention is never < 0
    return Contention(wall_s, max(0.0, others_s / wall_s), max(0.0, (end[2] - start[2]) / wall_s))


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


def warning(saved: object, during: str) -> str:
    """One line for a report when the machine was busy during ``during``; "" when it was quiet
    or the saved record is absent (no /proc), older or corrupt."""
    try:
        c = Contention(*(float(saved[f.name]) for f in fields(Contention)))  # type: ignore[index]
    except (KeyError, TypeError, ValueError):
        return ""
    return (f"WARNING: busy machine during {during}: {c.describe()}; the timings include "
            "waiting for them (rerun on a quiet machine)") if c.busy else ""
