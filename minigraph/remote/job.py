"""One job on the device, in a fresh process: ``python -m minigraph.remote.job`` (spec on stdin).

The RPC server's session process only starts this process and waits for it: the measuring is
done here, by minigraph's own executor on the device, in a process that has never loaded the
model nor created TVM's thread pool (a session process is a fork of the server, so it is not
fresh: code already mapped, and a pool, if its parent had one, broken by the fork). A profile's
first-run mode therefore sees the device's first inference, exactly as a local ``minigraph
profile`` does; a diagnosis spawns its own fresh worker per rung on the device, as locally.
Prints one JSON line: ``{"result": <Profile / Diagnosis to_dict, or run outputs>}`` or
``{"error": ..., "exit_code": ...}``. Counterpart: the remote half of TVM's old
``debug_executor`` over RPC, which ran the C++ debug executor in the server process itself.
"""
from __future__ import annotations

import ctypes
import json
import os
import signal
import sys
import traceback
from pathlib import Path

from ..errors import InputError, MinigraphError
from ..runtime.doors import ModelFiles
from .spec import JobSpec

PARENT_ENV = "MINIGRAPH_RPC_PARENT"  # pid of the process this job must not outlive


def die_with_parent(parent: int, sig: int = signal.SIGKILL) -> None:
    """Linux: ``sig`` to this process when its parent exits (prctl PR_SET_PDEATHSIG), so no
    device-side process outlives a server killed with SIGKILL. A no-op where prctl is missing."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(sig), 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # it died before prctl: nobody is left to send the signal
        os._exit(1)


def _files(spec: JobSpec, here: Path) -> ModelFiles:
    missing = [n for n in spec.uploaded() if not (here / n).is_file()]
    if missing:
        raise InputError(f"{missing[0]} was not uploaded to the device")
    at = lambda n: None if n is None else here / n  # noqa: E731
    return ModelFiles(here / spec.lib, at(spec.graph), at(spec.params))


def _threads(requested: object) -> int:
    return int(requested) if requested else len(os.sched_getaffinity(0))


def _tuples(settings: dict, key: str) -> dict:
    """Settings as the dataclass takes them: JSON lists back into tuples; machine-dependent
    fields (flush_nbytes) are left to this device."""
    out = {k: v for k, v in settings.items() if k != "flush_nbytes"}
    if isinstance(out.get(key), list):
        out[key] = tuple(out[key])
    return out


def profile_job(spec: JobSpec, files: ModelFiles) -> dict:
    """``minigraph profile`` on this device; the Profile as its to_dict document."""
    from ..measure.environment import capture_env, llc_bytes
    from ..measure.interrupt import terminate_as_interrupt
    from ..profile.model import Settings
    from ..profile.profiler import measure
    from ..protocols.graph_era import pool_reset
    from ..runtime.doors import open_executor
    from ..runtime.runner import random_inputs
    from ..threadpool.config import ThreadRequest, parse_cpu_list, place_threads
    t = spec.threads
    req = ThreadRequest(threads=_threads(t.get("threads")), affinity=t.get("affinity"),
                        cpus=parse_cpu_list(t["cpus"]) if t.get("cpus") else None,
                        pin_main=t.get("pin_main"))
    verify = place_threads(req)
    env = capture_env()
    try:  # the flush is sized from this device's last-level cache, not the client's
        settings = Settings(**_tuples(spec.settings, "modes"), flush_nbytes=2 * llc_bytes(env))
    except TypeError as err:
        raise InputError(f"bad profile settings: {err}") from None
    ex = open_executor(files, force=spec.force)
    ex.set_input(**random_inputs(ex, {}, seed=spec.seed))
    with terminate_as_interrupt():
        prof = measure(ex, settings, reset=pool_reset(req.threads))
    prof.env, prof.threads = env, verify()
    return prof.to_dict()


def diagnose_job(spec: JobSpec, files: ModelFiles) -> dict:
    """``minigraph diagnose`` on this device; the Diagnosis document with its attribution."""
    from ..diagnose.ladder import run_ladder
    from ..diagnose.model import Diagnosis
    from ..diagnose.spec import DiagnoseSettings
    from ..measure.environment import capture_env
    from ..measure.interrupt import terminate_as_interrupt
    from ..runtime.doors import open_executor
    from ..runtime.opinfo import describe_ops
    s = {**_tuples(spec.settings, "rungs"), "threads": _threads(spec.settings.get("threads"))}
    try:
        settings = DiagnoseSettings(**s)
    except TypeError as err:
        raise InputError(f"bad diagnose settings: {err}") from None
    os.environ["TVM_NUM_THREADS"] = str(settings.threads)  # the protocols use the same pool
    ex = open_executor(files, force=settings.force)  # validates before any worker starts
    diag = Diagnosis(describe_ops(ex), settings.to_dict())
    with terminate_as_interrupt():
        run_ladder(diag, files, settings)
        att = diag.attribution()
        if spec.protocols and not diag.partial:
            _protocols(diag, ex, files.lib.parent, spec, settings.threads)
    diag.env = capture_env()
    return {**diag.to_dict(), "attribution": att.to_dict() if att is not None else None}


def _protocols(diag, ex, here: Path, spec: JobSpec, threads: int) -> None:
    from ..protocols.measure import measure_protocols
    from ..runtime.runner import random_inputs
    ex.set_input(**random_inputs(ex, {}, seed=spec.seed))
    vm = here / spec.vm_lib if spec.vm_lib else None
    try:
        diag.protocols = [r.to_dict() for r in measure_protocols(ex, vm_lib=vm, threads=threads)]
    except KeyboardInterrupt:
        diag.partial = True


def run_job(spec: JobSpec, files: ModelFiles) -> dict:
    """``minigraph run`` on this device: one summary line per output."""
    from ..runtime.runner import run_once
    here = files.lib.parent
    items = [f"{name}={here / upl}" for name, upl in spec.inputs.items()]
    return {"outputs": run_once(files, items, None, spec.seed, force=spec.force)}


JOBS = {"profile": profile_job, "diagnose": diagnose_job, "run": run_job}


def main() -> int:
    if os.environ.get(PARENT_ENV, "").isdigit():
        die_with_parent(int(os.environ[PARENT_ENV]))
    try:
        spec = JobSpec.from_json(sys.stdin.read())
        result = JOBS[spec.kind](spec, _files(spec, Path.cwd()))
        out: dict = {"result": result}
    except MinigraphError as err:
        out = {"error": str(err), "exit_code": err.exit_code}
    except Exception as err:  # noqa: BLE001 - reported to the client, with the traceback
        out = {"error": f"internal error on the device: {type(err).__name__}: {err}",
               "exit_code": 1, "traceback": traceback.format_exc()}
    sys.stdout.write("\n" + json.dumps(out) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
