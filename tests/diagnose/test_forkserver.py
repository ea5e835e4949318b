"""The ladder's fork server: workers forked from a pre-imported zygote are still fresh for
everything the ladder measures (TVM's pool created by the first parallel op, a fresh
activation's page faults), own their memory (no copy-on-write faults left for a timed op),
import nothing the zygote lacked, and leave no process behind."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil
import pytest
from machine import fresh_page_faults

from minigraph.diagnose.forkserver import ForkServer
from minigraph.diagnose.ladder import spawn, worker_env, worker_result
from minigraph.diagnose.spec import WorkerSpec
from minigraph.errors import MinigraphError
from minigraph.runtime.doors import locate

pytestmark = pytest.mark.subprocess

ROOT = Path(__file__).resolve().parents[2]
PAGES_64MIB = fresh_page_faults(64 << 20)


@pytest.fixture(scope="module")
def wake_lib(tmp_path_factory) -> str:
    from minigraph.threadpool.wake import build_wake_library
    return str(build_wake_library(tmp_path_factory.mktemp("wake")))


def _spec(model: Path, rung: str, wake: str | None, **kw) -> WorkerSpec:
    files = locate(model)
    base = dict(steady_runs=1, reference_passes=1, gap_s=0.0, gap_repeat=1, busy_s=0.05, seed=0, force=False)
    return WorkerSpec(str(files.lib), str(files.graph), None, rung,
                      wake if rung != "a" else None, **{**base, **kw})


def test_forked_workers_see_pool_creation_and_fresh_page_faults(groundtruth_model, wake_lib):
    """Ground truth (helpers/groundtruth.py): op 0 is the first parallel kernel, op 1
    writes a fresh 64 MiB activation. Forked like spawned: op 0 creates TVM's pool on rung a,
    op 1 takes a fault per page until rung c pre-touches the activations; the zygote itself
    stays single-threaded, without a pool."""
    env = worker_env(2)
    got: dict[str, dict] = {}
    with ForkServer(env) as server:
        for rung in ("a", "b", "c"):
            spec = _spec(groundtruth_model, rung, wake_lib)
            done = server.run(spec, 120)
            got[rung] = worker_result(spec, done)
            assert done.cpu_s > 0
        zygote = psutil.Process(server.zygote_pid)
        assert zygote.num_threads() == 1  # no TVM pool, no worker thread in the zygote
    spawned = spawn(_spec(groundtruth_model, "a", wake_lib), env, 120)
    for res in (got["a"], spawned):
        assert res["ops"][0]["threads_created"] >= 1  # TVM_NUM_THREADS=2: the pool's worker
        assert res["ops"][1]["minflt"] >= 0.9 * PAGES_64MIB
    assert got["b"]["ops"][0]["threads_created"] == 0  # created by the wake kernel before
    assert got["b"]["ops"][1]["minflt"] - got["c"]["ops"][1]["minflt"] >= 0.9 * PAGES_64MIB
    # the child owns its memory: the forked first run takes no more faults than a spawned one
    # (a few allocator pages either way; without own_private_memory there were ~20 more)
    # (op 1's fresh activation is left out: its 16,384 faults, checked above, may come as huge
    # pages in one process and small ones in the other, which would drown the few that matter)
    fork_faults = sum(o["minflt"] for i, o in enumerate(got["a"]["ops"]) if i != 1)
    spawn_faults = sum(o["minflt"] for i, o in enumerate(spawned["ops"]) if i != 1)
    assert fork_faults <= spawn_faults + 8, (fork_faults, spawn_faults)
    assert got["a"]["startup_cpu_s"] < spawned["startup_cpu_s"]  # imports done once, not here


def test_a_worker_imports_nothing_the_zygote_did_not(tiny_cnn, wake_lib):
    """If a worker needed a module the zygote lacks, every forked process would pay its
    import (and a fresh spawn would differ from a fork in one more way)."""
    spec = _spec(tiny_cnn, "f", wake_lib, gap_s=0.05)
    code = textwrap.dedent(f"""
        import json, sys
        from minigraph.diagnose import forkserver
        forkserver.preload()
        before = set(sys.modules)
        from minigraph.diagnose.worker import run_spec
        from minigraph.diagnose.spec import WorkerSpec
        run_spec(WorkerSpec.from_json({spec.to_json()!r}))
        print(json.dumps(sorted(set(sys.modules) - before)))
        """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=worker_env(2), timeout=120, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_own_private_memory_leaves_no_copy_on_write_fault():
    """A forked child writing 8 MiB it inherited takes a fault per page (copy-on-write);
    after own_private_memory it takes none."""
    code = textwrap.dedent("""
        import os, resource, sys
        from minigraph.diagnose.forkserver import own_private_memory
        buf = bytearray(8 << 20)
        buf[::4096] = b"x" * len(buf[::4096])  # resident in the parent
        for own in (False, True):
            r, w = os.pipe()
            if os.fork() == 0:
                if own:
                    own_private_memory()
                f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                buf[::4096] = b"y" * len(buf[::4096])
                os.write(w, str(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0).encode())
                os._exit(0)
            os.wait()
            print(own, os.read(r, 64).decode())
        """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=60, check=True)
    faults = dict(line.split() for line in out.stdout.splitlines())
    assert int(faults["False"]) >= 2000  # 2048 pages, each copied on first write
    assert int(faults["True"]) <= 16


def test_timeout_kills_the_forked_worker_and_close_leaves_no_process(tiny_cnn):
    from minigraph.diagnose.ladder import forked
    spec = _spec(tiny_cnn, "f", None, gap_s=60)
    before = {c.pid for c in psutil.Process().children(recursive=True)}  # the suite's helpers
    with ForkServer(worker_env(1)) as server:
        with pytest.raises(MinigraphError, match="killed"):
            forked(server)(spec, {}, 1)
        spec = _spec(tiny_cnn, "a", None)  # the zygote still serves after a killed worker
        assert forked(server)(spec, {}, 60)["rung"] == "a"
    assert not [c for c in psutil.Process().children(recursive=True)
                if c.status() != psutil.STATUS_ZOMBIE and c.pid not in before]
