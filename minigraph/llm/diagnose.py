"""``minigraph diagnose`` for LLMs: the first request at every rung of the warm-up ladder
(ladder.py), each in fresh processes, interleaved round by round; the steps between rungs
say what made the first token slow.

Counterpart: diagnose/session.py for graph models; MLC-LLM and TVM have none.
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, replace
from typing import Callable, Sequence

from ..diagnose.ladder import worker_env
from ..errors import InputError, MinigraphError
from ..measure.child import run_child
from ..measure.contention import recorded
from ..results.llm_diagnosis import RUNGS, LLMDiagnosis
from ..threadpool.request import ThreadRequest

WORKER_TIMEOUT_S = 600  # one process: open, warm up, one request (a 125M model: ~5 s)


@dataclass(frozen=True)
class Settings:
    processes: int = 3
    rungs: tuple[str, ...] = RUNGS
    prompt_len: int = 128
    threads: int | None = None   # None: the run context's default, resolved by diagnose_llm


def parse_rungs(text: str | None) -> tuple[str, ...]:
    """--rungs a,p,...: known rungs, in ladder order, at least two."""
    if text is None:
        return RUNGS
    given = [r.strip() for r in text.split(",") if r.strip()]
    bad = [r for r in given if r not in RUNGS]
    if bad or len(set(given)) < 2:
        raise InputError(f"--rungs {text!r}: an LLM's ladder has rungs {','.join(RUNGS)}; "
                         "give two or more")
    return tuple(r for r in RUNGS if r in given)


def _one(model: str, params: str | None, rung: str, s: Settings, seed: int) -> dict:
    spec = {"model": os.path.abspath(model), "params": params and os.path.abspath(params),
            "rung": rung, "prompt_len": s.prompt_len, "threads": s.threads, "seed": seed}
    # the worker's pool is created in it, reading TVM_NUM_THREADS then (as diagnose/ladder.py's)
    done = run_child([sys.executable, "-m", "minigraph.llm.ladder"], stdin=json.dumps(spec),
                     env=worker_env(s.threads), timeout_s=WORKER_TIMEOUT_S,
                     what=f"the rung-{rung} process")
    result = done.last_json()
    if not done.ok or result is None:
        raise MinigraphError(f"the rung-{rung} process {done.died()}")
    return result


def diagnose_llm(model: str, params: str | None, s: Settings, cpu: str, name: str,
                 progress: Callable[[int, int], None] = lambda i, n: None) -> LLMDiagnosis:
    """Every rung in ``s.processes`` fresh processes, rounds interleaved, order flipped each
    round (a drift of the machine falls on every rung alike)."""
    s = replace(s, threads=ThreadRequest(threads=s.threads).resolved().threads)
    records: list[dict] = []
    busy: dict = {}
    total = s.processes * len(s.rungs)
    with recorded(busy):
        for i in range(s.processes):
            order: Sequence[str] = s.rungs if i % 2 == 0 else tuple(reversed(s.rungs))
            for rung in order:
                progress(len(records), total)
                records.append(_one(model, params, rung, s, seed=0))
    diag = LLMDiagnosis(name, s.threads, cpu, s.prompt_len, s.rungs, tuple(records))
    return replace(diag, contention=busy)
