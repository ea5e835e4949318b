"""TVM CPU thread-pool configuration, pinning, and verification of the affinity actually obtained.

Counterparts: ``src/runtime/thread_pool.cc`` (``ThreadPool``, a ``static thread_local`` per
calling thread, created by the first ``runtime.NumThreads`` / ``runtime.config_threadpool`` /
parallel launch) and ``src/runtime/threading_backend.cc`` (``MaxConcurrency``,
``ThreadGroup::Impl::Configure`` / ``SetAffinity``). TVM 0.27 facts this module relies on:

* ``runtime.NumThreads() -> int`` creates the pool if needed and returns ``num_workers_used_``.
* ``runtime.config_threadpool(mode: int, nthreads: int, cpus: list[str] = [])`` with mode
  1=kBig, -1=kLittle, -2=kSpecifyOneCorePerThread, -3=kSpecifyThreadShareAllCore. A non-empty
  ``cpus`` also sets the (thread-local) max concurrency, i.e. the worker count, to ``len(cpus)``.
* Worker count = TVM_NUM_THREADS, else OMP_NUM_THREADS, else hardware_concurrency/2 on x86_64;
  read once when the pool is created. TVM_EXCLUDE_WORKER0=0 gives worker 0 its own thread;
  TVM_BIND_THREADS != 1 disables all pinning.
* Pool creation configures kBig: workers pinned one CPU each, and the *calling* thread pinned to
  the first min(MaxConcurrency, big cores) CPUs in TVM's own order (CPU ids 0..n-1 sorted by
  cpuinfo_max_freq), ignoring the process's existing affinity (taskset is not respected).
"""
from __future__ import annotations

import json
import os
import re
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from ..errors import InputError
from .cpulist import parse_cpu_list
from .environ import set_pool_threads
from .request import (  # noqa: F401 (config's API: what is asked, and its defaults)
    MAX_THREADS,
    MODES,
    ThreadRequest,
    default_threads,
    max_concurrency,
)

# lazy: TVM (~1.2 s to import) is imported where it is called; TVM-free commands load this module

REPINNED = "re-pinned by TVM"  # a mismatch TVM causes on its own: no setting was refused
_CONFIGURED: set[int] = set()  # native ids of threads whose pool configure_threads created


@dataclass(frozen=True)
class TaskAffinity:
    """One thread (task) of a process, from /proc/<pid>/task/<tid>/{stat,status}."""

    tid: int
    name: str
    affinity: tuple[int, ...]
    last_cpu: int | None


@dataclass(frozen=True)
class ThreadReport:
    """Requested vs. measured thread configuration. ``main`` is the configuring (calling) thread;
    process affinities are the union over all tasks; ``worker_tids`` are threads TVM spawned."""

    requested: ThreadRequest
    process_affinity_before: tuple[int, ...]
    process_affinity_after: tuple[int, ...]
    main_affinity_after: tuple[int, ...]
    tvm_num_threads: int
    tasks: tuple[TaskAffinity, ...]
    mismatches: tuple[str, ...]
    notes: tuple[str, ...]
    worker_tids: tuple[int, ...] = ()

    def to_dict(self) -> dict:
        """Plain JSON-serialisable dict (tuples become lists)."""
        return json.loads(json.dumps(asdict(self)))


def _parse_stat(text: str) -> tuple[str, int | None]:
    """(comm, field 39 = last CPU) from a stat line; comm may contain spaces and parentheses."""
    start, end = text.find("("), text.rfind(")")
    rest = text[end + 1:].split()
    last = rest[36] if len(rest) > 36 else None  # rest[0] is field 3 (state)
    return text[start + 1:end], int(last) if last and last.lstrip("-").isdigit() else None


def read_tasks(pid: int | None = None) -> tuple[TaskAffinity, ...]:
    """All tasks of ``pid`` (default: this process) with allowed CPUs and last CPU run on."""
    root = Path(f"/proc/{pid if pid is not None else 'self'}/task")
    out = []
    for tdir in sorted(root.iterdir(), key=lambda p: int(p.name)):
        try:
            name, last = _parse_stat((tdir / "stat").read_text())
            status = (tdir / "status").read_text()
        except OSError:  # the thread exited meanwhile
            continue
        m = re.search(r"^Cpus_allowed_list:\s*(\S+)", status, re.M)
        aff = parse_cpu_list(m.group(1)) if m else ()
        out.append(TaskAffinity(int(tdir.name), name, aff, last))
    return tuple(out)


def _global(name: str):
    import tvm  # lazy: importing this module must not load TVM
    return tvm.get_global_func(name)


def _homogeneous(hw: int) -> bool:
    """True if threading_backend.cc InitSortedOrder sees one cpuinfo_max_freq: no little cores."""
    freqs = set()
    for i in range(hw):
        try:
            freqs.add(Path(f"/sys/devices/system/cpu/cpu{i}/cpufreq/cpuinfo_max_freq").read_text().strip())
        except OSError:
            freqs.add("0")
    return len(freqs) <= 1


def _apply_cpus(cpus: tuple[int, ...], notes: list[str], mismatches: list[str]) -> tuple[int, ...]:
    """sched_setaffinity every current task to ``cpus``; returns what the kernel kept."""
    try:
        os.sched_setaffinity(0, cpus)
    except (OSError, ValueError) as exc:
        raise InputError(f"none of the requested cpus {list(cpus)} can be used: {exc}") from exc
    kept = tuple(sorted(os.sched_getaffinity(0)))
    if set(cpus) - set(kept):
        mismatches.append(f"requested cpus {sorted(set(cpus) - set(kept))} are not allowed/online;"
                          f" the kernel kept {list(kept)}")
    for task in read_tasks():
        try:
            os.sched_setaffinity(task.tid, kept)
        except OSError:
            pass
    notes.append(f"sched_setaffinity applied {list(kept)} to all existing tasks")
    return kept


def _create_pool(req: ThreadRequest, cpus: tuple[int, ...] | None, notes: list[str]) -> None:
    """Create (or reconfigure) the calling thread's pool: NumThreads, or config_threadpool."""
    name = req.affinity or ("share-all" if cpus else None)
    if name is None:
        _global("runtime.NumThreads")()
        notes.append("pool created by runtime.NumThreads() (TVM default: kBig)")
        return
    nthreads = req.threads or 0
    if name == "little" and not nthreads and _homogeneous(os.cpu_count() or 1):
        nthreads = max_concurrency()
        notes.append(f"'little': all CPUs have one max frequency, TVM's little_count_ is 0 and would"
                     f" use 0 threads; passing nthreads={nthreads} (pinning in reverse CPU order)")
    args = [MODES[name], nthreads] + ([[str(c) for c in cpus]] if cpus else [])
    _global("runtime.config_threadpool")(*args)
    notes.append(f"runtime.config_threadpool{tuple(args)} ('{name}')")
    if cpus and name in ("big", "little"):
        notes.append("kBig/kLittle ignore the cpus list for pinning (only its length counts)")


def _check(req: ThreadRequest, before: tuple[int, ...], cpus: tuple[int, ...] | None,
           main: tuple[int, ...], workers: list[TaskAffinity], nthreads: int) -> list[str]:
    """Every difference between the request and what the kernel reports now."""
    out, allowed = [], set(cpus or before)
    if req.threads and req.threads > len(allowed):
        out.append(f"requested threads={req.threads} but only {len(allowed)} CPUs allowed"
                   f" {sorted(allowed)}: oversubscribed")
    if req.threads and nthreads != req.threads:
        out.append(f"requested threads={req.threads}, TVM uses {nthreads} (runtime.NumThreads)")
    if nthreads < 1:
        out.append(f"TVM reports {nthreads} threads: parallel kernels get no workers")
    want = (req.pin_main,) if req.pin_main is not None else tuple(sorted(allowed))
    if main != want:
        who = f"pin_main={req.pin_main} not honoured" if req.pin_main is not None else REPINNED
        out.append(f"main thread {who}: expected {list(want)}, actual {list(main)}"
                   f" (was {list(before)} before the pool)")
    for w in workers:
        if not set(w.affinity) <= allowed:
            out.append(f"worker tid {w.tid} affinity {list(w.affinity)} outside allowed {sorted(allowed)}")
        elif req.affinity in ("big", "little", "one-per-core") and len(w.affinity) != 1:
            out.append(f"worker tid {w.tid} not pinned to one CPU ({list(w.affinity)}) in '{req.affinity}' mode")
    return out


def configure_threads(req: ThreadRequest) -> ThreadReport:
    """Configure the calling thread's TVM pool as requested, then verify it against /proc."""
    import tvm  # noqa: F401  (lazy; imported first so its own threads are not taken for workers)
    notes: list[str] = []
    mismatches: list[str] = []
    first = read_tasks()
    before = tuple(sorted(os.sched_getaffinity(0)))
    cpus = _apply_cpus(tuple(req.cpus), notes, mismatches) if req.cpus else None
    if cpus is None and req.affinity in ("one-per-core", "share-all"):
        cpus = before
        notes.append(f"'{req.affinity}' without cpus: using the current affinity {list(before)}")
    if req.threads is not None:
        set_pool_threads(req.threads)  # read once, when the pool is created
        notes.append(f"TVM_NUM_THREADS={req.threads} set before pool creation")
    if threading.get_native_id() in _CONFIGURED:
        notes.append("this thread's pool already existed: TVM_NUM_THREADS is not re-read")
    _CONFIGURED.add(threading.get_native_id())
    _create_pool(req, cpus, notes)
    if req.pin_main is not None:
        try:
            os.sched_setaffinity(0, (req.pin_main,))
        except OSError as exc:
            mismatches.append(f"pin_main={req.pin_main} failed: {exc}")
    return verify_threads(req, first, before, cpus, notes, mismatches)


def verify_threads(req: ThreadRequest, first: tuple[TaskAffinity, ...], before: tuple[int, ...],
                   cpus: tuple[int, ...] | None = None, notes: list[str] | None = None,
                   mismatches: list[str] | None = None) -> ThreadReport:
    """Reads the pool's real placement back from /proc and lists every mismatch with ``req``.

    ``first`` and ``before`` are the tasks and affinity read before the pool existed; the pool
    may have been created by configure_threads or lazily by the first parallel kernel."""
    notes, mismatches = list(notes or []), list(mismatches or [])
    seen = {t.tid for t in first}
    nthreads = int(_global("runtime.NumThreads")())
    tasks = read_tasks()
    workers = [t for t in tasks if t.tid not in seen]
    main = tuple(sorted(os.sched_getaffinity(0)))
    notes.append(f"TVM spawned {len(workers)} worker thread(s); runtime.NumThreads()={nthreads}")
    mismatches += _check(req, before, cpus, main, workers, nthreads)
    return ThreadReport(req, tuple(sorted({c for t in first for c in t.affinity})),
                        tuple(sorted({c for t in tasks for c in t.affinity})), main, nthreads,
                        tasks, tuple(mismatches), tuple(notes), tuple(w.tid for w in workers))


def pool_reset(threads: int) -> Callable[[], None]:
    """The profilers' pool reset (``ResetThreadPool`` in TVM <= 0.19, called by the profiler's
    constructor): ``runtime.config_threadpool(kBig, threads)``. TVM 0.27 exposes no
    ``ResetThreadPool``; this re-pins the workers and the caller but does not re-create them."""
    def reset() -> None:
        import tvm
        f = tvm.get_global_func("runtime.config_threadpool", allow_missing=True)
        if f is not None:
            f(1, threads)
    return reset


def place_threads(req: ThreadRequest) -> Callable[[], dict]:
    """Configures TVM's pool as ``req`` asks before a profile; returns what reports the
    placement read back from /proc once the pool exists (a profile's thread report).

    Without explicit placement the pool is left to the first parallel kernel (only
    TVM_NUM_THREADS is set), so a first-run sees pool creation as a user's first inference does.
    ``req`` is resolved (request.py ``ThreadRequest.resolved``): its worker count is set."""
    if req.affinity or req.cpus or req.pin_main is not None:
        # explicit placement needs the pool now (config_threadpool), so first-run no longer
        # includes pool creation; the report says so
        placed = configure_threads(req).to_dict()
        placed["notes"] = list(placed.get("notes", [])) + [
            "pool created before first-run by --affinity/--cpus/--pin-main"]
        return lambda: placed
    set_pool_threads(req.threads)
    import tvm  # noqa: F401  (its own threads must not be taken for pool workers)
    tasks_before, affinity_before = read_tasks(), tuple(sorted(os.sched_getaffinity(0)))
    return lambda: verify_threads(req, tasks_before, affinity_before).to_dict()
