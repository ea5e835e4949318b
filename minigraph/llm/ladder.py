"""Why the first token is slow: the warm-up ladder of an LLM's first request, one rung per
fresh process (``python -m minigraph.llm.ladder``, a JSON spec on stdin, the result as the
last line of stdout).

Each rung warms one more thing before the measured request (prefill of the prompt, then the
first decode step), cumulatively, so the difference between two rungs is what that thing cost
the first token:

  a  nothing: the request opens the way (the thread pool is created by its first parallel
     kernel, as in a server's first request)
  p  + TVM's thread pool created first
  w  + every weight read once (its pages and TLB entries, hundreds of MB for a real model)
  k  + every kernel called once (a throwaway request on another KV cache: code pages, the
     pool's per-thread workspaces, the VM's function lookups)
  f  + the KV cache's own pages written (the throwaway request on the same cache, rewound):
     the measured request is then a warm one

Counterpart: diagnose/'s ladder for graph models (rungs there: pool, data, first run, ...);
TVM has none (its profilers time warm runs).
"""
from __future__ import annotations

import json
import resource
import sys
import time
from typing import Sequence

import numpy as np

from ..results.llm_diagnosis import RUNGS
from ..threadpool.config import ThreadRequest, configure_threads
from .engine import Engine
from .opened import open_llm
from .profile import record_phase



def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _warm(eng, rung: str, prompt: Sequence[int], threads: int) -> None:
    """The warm-ups of ``rung`` and every rung below it, before the measured request."""
    if rung != "a":
        configure_threads(ThreadRequest(threads=threads))
    if RUNGS.index(rung) >= RUNGS.index("w"):
        for p in eng.params:
            p.numpy()  # a copy out: every page of the weight read
    if RUNGS.index(rung) >= RUNGS.index("k"):
        measured = eng.cache
        eng.new_cache()  # another cache: the kernels run, the measured cache stays untouched
        eng.forward(prompt)
        eng.forward([1])
        eng.cache, eng.depth = measured, 0
    if rung == "f":
        eng.forward(prompt)
        eng.forward([1])
        eng.rewind(len(prompt) + 1)


def _request(eng, prompt: Sequence[int]) -> dict:
    """The measured first request, op by op (calls.py's recording): per phase, its wall time,
    minor page faults and each op's time."""
    out: dict = {}
    token = None
    for phase in ("prefill", "decode"):
        f0 = _faults()
        ph, logits = record_phase(eng, prompt if token is None else [token])
        ops: dict[str, int] = {}
        for c, ns in zip(ph.calls, ph.first_ns):
            key = f"{c.function}:{c.name}"
            ops[key] = ops.get(key, 0) + ns
        out[phase] = {"ns": ph.wall_ns, "faults": _faults() - f0, "ops": ops}
        token = int(np.argmax(logits))
    return out


def worker(spec: dict) -> dict:
    """One fresh process: open, warm up to the rung, measure the first request."""
    t0 = time.perf_counter_ns()
    eng = Engine(open_llm(spec["model"], spec.get("params")))
    load = time.perf_counter_ns() - t0
    rng = np.random.default_rng(spec.get("seed", 0))
    prompt = rng.integers(0, eng.opened.vocab, spec["prompt_len"]).tolist()
    eng.new_cache()
    _warm(eng, spec["rung"], prompt, spec["threads"])
    t0 = time.perf_counter_ns()
    req = _request(eng, prompt)
    return {"rung": spec["rung"], "load_ns": load, "ttft_ns": req["prefill"]["ns"],
            "request_ns": time.perf_counter_ns() - t0, **req}


if __name__ == "__main__":
    print(json.dumps(worker(json.loads(sys.stdin.read()))))
