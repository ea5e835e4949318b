"""One real pass, as it happened: when each op started and ended, the gaps between ops, and
the CPU time every thread of the process used during each op and each gap.

The first-run and one-pass samplers record one with profile/recorder.py (they run the model
once, op by op, as a user's run does); report/exports.py draws it as a Perfetto timeline,
and an HTML report can draw it from ``RealPass`` alone. Times are ns on the profile's clock,
relative to the pass's start;
``clock_ns`` orders passes against each other. Thread CPU time comes from each thread's POSIX
CPU clock read just outside the op's timed window (measure/counters.py ``thread_cpu_ns``), so
the op's own timing is untouched; the readings cost ~1 us a thread, spent in the gaps.
Counterpart: none in TVM; its profilers keep one duration per call and no threads.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Thread:
    """One thread of the process during a pass: its CPU clock when each op started and ended
    (None: the thread did not exist yet, or had ended)."""

    tid: int
    name: str                     # /proc comm at the end of the pass
    role: str                     # "main": ran the ops; "other": any other (pool workers, ...)
    cpu_start_ns: list[int | None] = field(default_factory=list)
    cpu_end_ns: list[int | None] = field(default_factory=list)

    def op_cpu_ns(self, i: int) -> int | None:
        """CPU time this thread used while op ``i`` ran (a new thread: since it started)."""
        end = self.cpu_end_ns[i]
        start = self.cpu_start_ns[i] if self.cpu_start_ns[i] is not None else 0
        return None if end is None else end - start

    def gap_cpu_ns(self, i: int) -> int | None:
        """CPU time used between op ``i - 1``'s end and op ``i``'s start (None for op 0)."""
        if i == 0 or self.cpu_end_ns[i - 1] is None or self.cpu_start_ns[i] is None:
            return None
        return self.cpu_start_ns[i] - self.cpu_end_ns[i - 1]

    def to_dict(self) -> dict:
        return {"tid": self.tid, "name": self.name, "role": self.role,
                "cpu_start_ns": self.cpu_start_ns, "cpu_end_ns": self.cpu_end_ns}


@dataclass
class RealPass:
    """One timed pass over every op. ``spans`` are the pass's other timed work on the main
    thread (pool reset, warm-up runs): ``{"name", "start_ns", "end_ns"}``."""

    mode: str
    clock_ns: int                 # the clock's reading at the pass's start
    op_start_ns: list[int] = field(default_factory=list)
    op_end_ns: list[int] = field(default_factory=list)
    threads: list[Thread] = field(default_factory=list)
    spans: list[dict] = field(default_factory=list)

    def op_ns(self, i: int) -> int:
        return self.op_end_ns[i] - self.op_start_ns[i]

    def gap_ns(self, i: int) -> int:
        """Time between op ``i - 1``'s end and op ``i``'s start (0 for op 0)."""
        return self.op_start_ns[i] - self.op_end_ns[i - 1] if i else 0

    def main(self) -> Thread | None:
        return next((t for t in self.threads if t.role == "main"), None)

    def rows(self) -> list[dict]:
        """One flat record per op, for a renderer: when it started and ended, the gap before
        it, and each thread's CPU time during the op and during that gap (ns; None: unknown)."""
        return [{"index": i, "start_ns": self.op_start_ns[i], "end_ns": self.op_end_ns[i],
                 "gap_before_ns": self.gap_ns(i),
                 "cpu_ns": {t.tid: t.op_cpu_ns(i) for t in self.threads},
                 "gap_cpu_ns": {t.tid: t.gap_cpu_ns(i) for t in self.threads}}
                for i in range(len(self.op_start_ns))]

    def to_dict(self) -> dict:
        return {"mode": self.mode, "clock_ns": self.clock_ns, "op_start_ns": self.op_start_ns,
                "op_end_ns": self.op_end_ns, "threads": [t.to_dict() for t in self.threads],
                "spans": self.spans}

    @classmethod
    def from_dict(cls, d: dict) -> "RealPass":
        """Inverse of ``to_dict`` for a document ``check_pass`` accepted."""
        return cls(str(d["mode"]), int(d["clock_ns"]), [int(x) for x in d["op_start_ns"]],
                   [int(x) for x in d["op_end_ns"]],
                   [Thread(int(t["tid"]), str(t["name"]), str(t["role"]),
                           list(t["cpu_start_ns"]), list(t["cpu_end_ns"])) for t in d["threads"]],
                   [dict(s) for s in d.get("spans", [])])


def check_pass(d: object, n_ops: int) -> str | None:
    """What is wrong with a saved pass (a field path and why), or None if every report can
    draw it."""
    if not isinstance(d, dict):
        return "must be an object"
    ints = lambda xs: isinstance(xs, list) and all(type(x) is int for x in xs)  # noqa: E731
    if not isinstance(d.get("mode"), str) or type(d.get("clock_ns")) is not int:
        return "mode must be a string and clock_ns an integer"
    for key in ("op_start_ns", "op_end_ns"):
        if not ints(d.get(key)) or len(d[key]) > n_ops:
            return f"{key} must be a list of at most {n_ops} integers (ns)"
    if len(d["op_start_ns"]) != len(d["op_end_ns"]):
        return "op_start_ns and op_end_ns must have one entry per op each"
    threads = d.get("threads")
    if not isinstance(threads, list):
        return "threads must be a list"
    n = len(d["op_start_ns"])
    for j, t in enumerate(threads):
        if not (isinstance(t, dict) and type(t.get("tid")) is int and isinstance(t.get("name"), str)
                and isinstance(t.get("role"), str)
                and all(isinstance(t.get(k), list) and len(t[k]) == n and
                        all(x is None or type(x) is int for x in t[k])
                        for k in ("cpu_start_ns", "cpu_end_ns"))):
            return f"threads[{j}] must have tid, name, role and {n} cpu_start_ns/cpu_end_ns"
    spans = d.get("spans", [])
    if not isinstance(spans, list) or not all(
            isinstance(s, dict) and isinstance(s.get("name"), str)
            and type(s.get("start_ns")) is int and type(s.get("end_ns")) is int for s in spans):
        return "spans must be a list of {name, start_ns, end_ns}"
    return None
