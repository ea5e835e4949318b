"""Renderings of a Profile for other tools: CSV (spreadsheets) and Chrome / Perfetto traces.

The profile's own serialisation (JSON, msgpack) lives with the data, in results/files.py.
"""
from __future__ import annotations

import csv
import io

from ..analysis.roofline import roofline
from ..measure.stats import Stats
from ..results.modes import PER_OP, ModeName
from ..results.profile import Profile
from ..results.timeline import RealPass, Thread


def to_csv(profile: Profile) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    modes = [m for m in PER_OP if m in profile.samples]
    w.writerow(["index", "name", "func_name", "kind", "hash", "shapes"]
               + [f"{m}_median_us" for m in modes] + [f"{m}_iqr_us" for m in modes]
               + [f"{m}_n" for m in modes]
               + ["flops", "gflops", "pct_peak", "roofline_flagged"])
    roof = {r.index: r for r in roofline(profile).ops}
    for op in profile.ops:
        r = roof.get(op["index"])
        stats = [Stats.of(profile.samples[m][op["index"]]) if op["index"] < len(profile.samples[m])
                 else None for m in modes]
        w.writerow([op["index"], op["name"], op["func_name"], op["kind"], op["hash"],
                    "; ".join(f"{t}{s}" for t, s in op["shapes"])]
                   + [f"{s.median_ns / 1e3:.3f}" if s else "" for s in stats]
                   + [f"{s.iqr_ns / 1e3:.3f}" if s else "" for s in stats]
                   + [str(s.n) if s else "" for s in stats]
                   + [f"{op['flops']:.0f}" if op.get("flops") is not None else "",
                      f"{r.gflops:.2f}" if r else "",
                      f"{r.pct_peak:.1f}" if r and r.pct_peak is not None else "",
                      str(int(r.flagged)) if r else ""])
    return buf.getvalue()


MEDIANS_PID = 1  # the per-mode medians; real passes follow as pids 2, 3, ...


def to_trace(profile: Profile) -> dict:
    """Chrome / Perfetto trace-event JSON. One process per real pass (first-run, one-pass): the
    ops on the main thread where and when they really ran, gaps included, and every other
    thread's CPU time during each op and gap; then one process of per-mode medians laid end to
    end from 0, which is a picture of sizes, not of time."""
    events: list[dict] = []
    passes = sorted(profile.timeline.values(), key=lambda p: p.clock_ns)
    origin = passes[0].clock_ns if passes else 0
    listed = profile.threads.get("worker_tids")  # free-form (threadpool's report): check it
    workers = {t for t in listed if type(t) is int} if isinstance(listed, list) else set()
    for pid, real in enumerate(passes, start=MEDIANS_PID + 1):
        events += _real_pass(profile, real, pid, real.clock_ns - origin, workers)
    events += _medians(profile)
    return {"traceEvents": events, "displayTimeUnit": "ns"}


def _meta(pid: int, name: str, sort: int, tid: int | None = None) -> list[dict]:
    if tid is None:
        return [{"ph": "M", "name": "process_name", "pid": pid, "args": {"name": name}},
                {"ph": "M", "name": "process_sort_index", "pid": pid, "args": {"sort_index": sort}}]
    return [{"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}},
            {"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
             "args": {"sort_index": sort}}]


def _thread_label(t: Thread, workers: set[int]) -> str:
    if t.role == "main":
        return f"main thread {t.tid} (runs the ops)"
    if t.tid in workers or (t.cpu_start_ns and t.cpu_start_ns[0] is None):
        return f"TVM pool worker {t.tid}" + (" (created in this pass)"
                                             if t.cpu_start_ns and t.cpu_start_ns[0] is None else "")
    return f"other thread {t.tid} ({t.name})"


def _real_pass(profile: Profile, real: RealPass, pid: int, offset_ns: int,
               workers: set[int]) -> list[dict]:
    """One real pass: ops and spans on the main thread; per other thread, a slice over every
    op or gap in which it used CPU, and a counter track of its CPU use (share of wall time)."""
    what = {ModeName.FIRST_RUN: "iteration 0 of this process",
            ModeName.ONE_PASS: "after the pool reset and warm-up runs"}.get(real.mode, "")
    events = _meta(pid, f"{real.mode}: one real pass ({what}), as timed", pid)
    us = lambda ns: round((offset_ns + ns) / 1e3, 3)  # noqa: E731
    main = real.main()
    for sort, t in enumerate(real.threads):
        events += _meta(pid, _thread_label(t, workers), sort, t.tid)
    tid = main.tid if main else 0
    for span in real.spans:
        events.append({"ph": "X", "name": span["name"], "cat": "run", "pid": pid, "tid": tid,
                       "ts": us(span["start_ns"]), "dur": (span["end_ns"] - span["start_ns"]) / 1e3})
    for i, op in enumerate(profile.ops[:len(real.op_start_ns)]):
        args = {"index": i, "func_name": op["func_name"], "gap_before_ns": real.gap_ns(i),
                "wall_ns": real.op_ns(i)}
        if main is not None and main.op_cpu_ns(i) is not None:
            args["main_cpu_ns"] = main.op_cpu_ns(i)
        events.append({"ph": "X", "name": op["name"], "cat": op["kind"], "pid": pid, "tid": tid,
                       "ts": us(real.op_start_ns[i]), "dur": real.op_ns(i) / 1e3, "args": args})
    for t in real.threads:
        events += _cpu_use(profile, real, t, pid, us)
    return events


def _cpu_use(profile: Profile, real: RealPass, t: Thread, pid: int, us) -> list[dict]:
    """Slices where thread ``t`` used CPU (per op and per gap) and a CPU-use counter."""
    out = []
    for i, op in enumerate(profile.ops[:len(real.op_start_ns)]):
        for name, cpu, start, end in (
                ("between ops", t.gap_cpu_ns(i), real.op_end_ns[i - 1] if i else 0,
                 real.op_start_ns[i]),
                (op["name"], t.op_cpu_ns(i), real.op_start_ns[i], real.op_end_ns[i])):
            if cpu is None or end <= start:
                continue
            share = round(min(cpu / (end - start), 1.0), 3)
            out.append({"ph": "C", "name": f"CPU use {t.tid}", "pid": pid, "ts": us(start),
                        "args": {"share of wall time": share}})
            if cpu > 0 and t.role != "main":
                out.append({"ph": "X", "name": f"{name} (on CPU {share:.0%} of it)",
                            "cat": "cpu", "pid": pid, "tid": t.tid, "ts": us(start),
                            "dur": (end - start) / 1e3, "args": {"cpu_ns": cpu, "op": i}})
    return out


def _medians(profile: Profile) -> list[dict]:
    """One track (tid) per per-op mode, each op's median laid end to end from 0."""
    events = _meta(MEDIANS_PID, "per-mode medians, laid end to end from 0 (sizes, not a real "
                                "timeline)", 99)
    for tid, mode in enumerate(m for m in PER_OP if m in profile.samples):
        events += _meta(MEDIANS_PID, mode, tid, tid)
        ts = 0.0
        for op in profile.ops:
            rows = profile.samples[mode]
            if op["index"] >= len(rows) or not rows[op["index"]]:
                continue
            dur = Stats.of(rows[op["index"]]).median_ns / 1e3
            events.append({"ph": "X", "name": op["name"], "cat": op["kind"], "pid": MEDIANS_PID,
                           "tid": tid, "ts": round(ts, 3), "dur": round(dur, 3),
                           "args": {"func_name": op["func_name"], "hash": op["hash"],
                                    "shapes": op["shapes"], "samples": len(rows[op["index"]])}})
            ts += dur
    return events
