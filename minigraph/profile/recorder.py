"""Recording one real pass (results/timeline.py ``RealPass``) around a sampler's own op loop:
when each op started and ended, and every thread's CPU clock just outside each op's window.

The readings cost ~1 us a thread and are taken in the gaps between ops, so the op's own
timing is untouched. Counterpart: none in TVM; its profilers keep one duration per call.
"""
from __future__ import annotations

import threading
from typing import Callable

from ..measure.clock import Clock
from ..measure.counters import task_ids, thread_cpu_ns, thread_names
from ..results.timeline import RealPass, Thread


class PassRecorder:
    """Records a RealPass around a sampler's own op loop: ``before()`` right before the op's
    first clock reading, ``after(t0, t1)`` with the readings that timed it. ``follow``: list the
    process's threads at every op (first-run, where TVM's pool appears mid-pass); otherwise the
    threads that exist at the start are followed (one-pass: the pool exists)."""

    def __init__(self, mode: str, clock: Clock, follow: bool,
                 cpu: Callable[[set[int]], dict[int, int]] = thread_cpu_ns) -> None:
        self.main_tid = threading.get_native_id()
        self.follow, self.cpu, self.clock = follow, cpu, clock
        self.tids: set[int] = task_ids() | {self.main_tid}
        self.rp = RealPass(mode, 0)
        self._cpu: dict[int, list[list[int | None]]] = {}   # tid -> [starts, ends]
        self._started = False

    def span(self, name: str, start: int, end: int) -> None:
        self._start(start)
        self.rp.spans.append({"name": name, "start_ns": start - self.rp.clock_ns,
                              "end_ns": end - self.rp.clock_ns})

    def before(self) -> set[int]:
        """Reads every followed thread's CPU clock; returns the threads listed (for counters)."""
        if self.follow:
            self.tids = task_ids() | {self.main_tid}
        self._store(0, self.cpu(self.tids))
        return self.tids

    def after(self, t0: int, t1: int) -> set[int]:
        """The known threads' CPU clocks first (closest to the op), then any thread that
        appeared during the op (its clock counts from its creation); returns the threads."""
        readings = self.cpu(self.tids)
        if self.follow:
            now = task_ids() | {self.main_tid}
            readings.update(self.cpu(now - self.tids))
            self.tids = now
        self._store(1, readings)
        self._start(t0)
        self.rp.op_start_ns.append(t0 - self.rp.clock_ns)
        self.rp.op_end_ns.append(t1 - self.rp.clock_ns)
        return self.tids

    def _start(self, t: int) -> None:
        if not self._started:
            self.rp.clock_ns, self._started = t, True

    def _store(self, side: int, readings: dict[int, int]) -> None:
        """Appends, for op n (the one being recorded), every thread's reading on ``side`` (0:
        start, 1: end); a thread not read (not there yet, ended, not followed) gets None."""
        n = len(self.rp.op_start_ns)
        for tid, ns in readings.items():
            cols = self._pad(self._cpu.setdefault(tid, [[], []]), n + side, n)
            cols[side].append(ns)
        for cols in self._cpu.values():
            self._pad(cols, n + 1, n + side)

    @staticmethod
    def _pad(cols: list[list[int | None]], starts: int, ends: int) -> list[list[int | None]]:
        cols[0].extend([None] * (starts - len(cols[0])))
        cols[1].extend([None] * (ends - len(cols[1])))
        return cols

    def finish(self) -> RealPass:
        n = len(self.rp.op_start_ns)
        for cols in self._cpu.values():
            self._pad(cols, n, n)
        names = thread_names(self._cpu)
        self.rp.threads = [Thread(tid, names.get(tid, ""), "main" if tid == self.main_tid
                                  else "other", cols[0], cols[1])
                           for tid, cols in sorted(self._cpu.items(),
                                                   key=lambda kv: (kv[0] != self.main_tid, kv[0]))]
        return self.rp
