"""What TVM's thread pool does to a fresh process when it is created: a probe run in a
subprocess (counterpart: thread_pool.cc ``ThreadPool::ThreadPool()`` / ``Init()``)."""
from __future__ import annotations

import os
import sys

from ..errors import MinigraphError
from ..threadpool.config import max_concurrency
from .child import PACKAGE_ROOT, run_child

_PROBE = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
from minigraph.threadpool.config import read_tasks
aff0 = sorted(os.sched_getaffinity(0))
import tvm
mid = read_tasks()
n = tvm.get_global_func("runtime.NumThreads")()
after = read_tasks()
seen = {t.tid for t in mid}
print(json.dumps({"affinity_before": aff0, "affinity_after": sorted(os.sched_getaffinity(0)),
                  "threads_after_import": len(mid), "default_num_threads": n,
                  "workers": [[t.tid, list(t.affinity)] for t in after if t.tid not in seen]}))
"""


def pool_side_effects(env: dict | None = None, timeout: float = 60.0) -> dict:
    """In a fresh subprocess (environment ``env``, default os.environ): caller affinity before and
    after the first runtime.NumThreads(), workers created, default thread count, and TVM's stderr
    warnings. Counterpart: thread_pool.cc ThreadPool::ThreadPool() / Init()."""
    env = dict(os.environ if env is None else env)
    done = run_child([sys.executable, "-c", _PROBE, PACKAGE_ROOT], env=env, timeout_s=timeout,
                     what="thread-pool probe")
    out = done.last_json()
    if not done.ok or out is None:
        raise MinigraphError(f"thread-pool probe {done.died()}")
    out["workers_created"] = len(out["workers"])
    out["repinned_main"] = out["affinity_before"] != out["affinity_after"]
    out["predicted_num_threads"] = max_concurrency(env)
    out["tvm_warnings"] = [ln for ln in done.stderr.splitlines() if "Warning" in ln]
    out["env"] = {k: env.get(k) for k in ("TVM_NUM_THREADS", "OMP_NUM_THREADS",
                                                 "TVM_BIND_THREADS", "TVM_EXCLUDE_WORKER0")}
    return out
