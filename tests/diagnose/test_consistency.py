"""profile and diagnose on one model say the same about op 0's thread pool: the same op
creates it in both, both name it with the ladder's one label, and a model run with one thread
(no pool to create) gets neither profile's sentence nor a pool component in diagnose, which
says why it is left out. Counters decide all of it, not timings, so a busy machine cannot move
the answer."""
from __future__ import annotations

import json

import cli_runner
import pytest

from minigraph.results.rungs import COMPONENTS, label

POOL = COMPONENTS["pool_creation"].label


def _cli(*argv: str) -> str:
    done = cli_runner.run(argv, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _both(model, tmp_path, threads: int) -> tuple[dict, str, dict, str]:
    prof, diag = tmp_path / f"p{threads}.json", tmp_path / f"d{threads}.json"
    ptext = _cli("profile", str(model), "--mode", "first-run", "--mode", "warm", "--threads",
                 str(threads), "--budget-ms", "20", "--repeat", "3", "--json", str(prof))
    dtext = _cli("diagnose", str(model), "--processes", "2", "--rungs", "a,b,f", "--gap-ms",
                 "0", "--threads", str(threads), "--quiet", "--json", str(diag))
    return json.loads(prof.read_text()), ptext, json.loads(diag.read_text()), dtext


@pytest.mark.subprocess
def test_profile_and_diagnose_agree_on_who_creates_the_pool(tiny_cnn, tmp_path):
    prof, ptext, diag, dtext = _both(tiny_cnn, tmp_path, threads=2)
    creators = [i for i, c in enumerate(prof["first_run_counters"])
                if c.get("threads_created", 0) > 0]
    assert len(creators) == 1, prof["first_run_counters"]
    op = creators[0]
    # every fresh process of diagnose's rung a saw the same op create the pool
    assert all([i for i, r in enumerate(run) if r["threads_created"] > 0] == [op]
               for run in diag["runs"]["a"])
    assert f"{POOL} falls in it" in ptext
    assert "pool_creation" in diag["attribution"]["components"]
    assert not diag["attribution"]["omitted"] and POOL in dtext


@pytest.mark.subprocess
def test_one_thread_has_no_pool_in_either(tiny_cnn, tmp_path):
    prof, ptext, diag, dtext = _both(tiny_cnn, tmp_path, threads=1)
    assert not any(c.get("threads_created", 0) for c in prof["first_run_counters"])
    assert POOL not in ptext
    att = diag["attribution"]
    assert not {"pool_creation", "worker_wakeup"} & set(att["components"])
    assert set(att["omitted"]) == {"pool"}
    assert f"not listed: {label('pool')}: no op created a thread" in dtext
