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

import os
import signal
import sys
import traceback
from pathlib import Path

from ..diagnose.session import diagnose_files
from ..diagnose.spec import DiagnoseSettings
from ..errors import InputError, MinigraphError
from ..fileio.jsontext import document_text
from ..measure.child import die_with_parent
from ..measure.inflight import attach_from_env
from ..profile.session import profile_files
from ..results.profile import Settings
from ..runtime.doors import ModelFiles
from ..threadpool.config import ThreadRequest, parse_cpu_list
from ..values.inputs import parse_input_args
from ..values.run import run_once
from .spec import JobSpec

PARENT_ENV = "MINIGRAPH_RPC_PARENT"  # pid of the process this job must not outlive


def _files(spec: JobSpec, here: Path) -> ModelFiles:
    missing = [n for n in spec.uploaded() if not (here / n).is_file()]
    if missing:
        raise InputError(f"{missing[0]} was not uploaded to the device")
    at = lambda n: None if n is None else here / n  # noqa: E731
    return ModelFiles(here / spec.lib, at(spec.graph), at(spec.params))


def _tuples(settings: dict, key: str) -> dict:
    """Settings as the dataclass takes them: JSON lists back into tuples; machine-dependent
    fields (flush_nbytes) are left to this device (None: sized from its own LLC)."""
    out = {k: v for k, v in settings.items() if k != "flush_nbytes"}
    if key == "modes":
        out["flush_nbytes"] = None
    if isinstance(out.get(key), list):
        out[key] = tuple(out[key])
    return out


def profile_job(spec: JobSpec, files: ModelFiles) -> dict:
    """``minigraph profile`` on this device, exactly as a local one (profile/session.py); the
    Profile as its to_dict document. Threads not given: this device's default (the session
    resolves the request, values/session.py)."""
    t = spec.threads
    req = ThreadRequest(threads=t.get("threads"), affinity=t.get("affinity"),
                        cpus=parse_cpu_list(t["cpus"]) if t.get("cpus") else None,
                        pin_main=t.get("pin_main"))
    try:
        settings = Settings(**_tuples(spec.settings, "modes"))
    except TypeError as err:
        raise InputError(f"bad profile settings: {err}") from None
    here = files.lib.parent
    inputs = parse_input_args([f"{name}={here / upl}" for name, upl in spec.inputs.items()])
    prof, _, failure = profile_files(files, settings, req, force=spec.force, seed=spec.seed,
                                     command=["minigraph", "profile", "(remote job)"],
                                     fill=spec.fill, inputs=inputs, symbols=spec.shapes)
    if failure is not None:
        raise failure
    return prof.to_dict()


def diagnose_job(spec: JobSpec, files: ModelFiles) -> dict:
    """``minigraph diagnose`` on this device, exactly as a local one (diagnose/session.py);
    the Diagnosis document with its attribution (threads not given: this device's default)."""
    s = {**_tuples(spec.settings, "rungs"),
         "shapes": dict(spec.shapes) or dict(spec.settings.get("shapes") or {})}
    try:
        settings = DiagnoseSettings(**s)
    except TypeError as err:
        raise InputError(f"bad diagnose settings: {err}") from None
    here = files.lib.parent
    diag, att, _ = diagnose_files(files, settings, protocols=spec.protocols,
                                  force=settings.force,
                                  command=["minigraph", "diagnose", "(remote job)"],
                                  vm_lib=here / spec.vm_lib if spec.vm_lib else None,
                                  inputs={n: str(here / u) for n, u in spec.inputs.items()})
    return {**diag.to_dict(), "attribution": att.to_dict() if att is not None else None}


def run_job(spec: JobSpec, files: ModelFiles) -> dict:
    """``minigraph run`` on this device: one summary line per output."""
    here = files.lib.parent
    items = [f"{name}={here / upl}" for name, upl in spec.inputs.items()]
    done = run_once(files, items, None, spec.seed, force=spec.force, fill=spec.fill,
                    symbols=spec.shapes)
    return {"outputs": list(done.lines), "data": done.data.to_dict()}


JOBS = {"profile": profile_job, "diagnose": diagnose_job, "run": run_job}


def main() -> int:
    if os.environ.get(PARENT_ENV, "").isdigit():
        die_with_parent(signal.SIGKILL, int(os.environ[PARENT_ENV]))
    attach_from_env()  # the op in flight, for the server to name if a kernel kills this process
    try:
        spec = JobSpec.from_json(sys.stdin.read())
        result = JOBS[spec.kind](spec, _files(spec, Path.cwd()))
        out: dict = {"result": result}
    except MinigraphError as err:
        out = {"error": str(err), "exit_code": err.exit_code}
    except Exception as err:  # noqa: BLE001 - reported to the client, with the traceback
        out = {"error": f"internal error on the device: {type(err).__name__}: {err}",
               "exit_code": 1, "traceback": traceback.format_exc()}
    sys.stdout.write("\n" + document_text(out) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
