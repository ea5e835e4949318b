"""The client side: one job on N devices behind TVM's RPC tracker, in parallel -> a Fleet.

Per device, in its own thread (TVM's RPC calls release the GIL): request a free server under
the key from the tracker (waiting at most ``wait_s``), open a session with
``tvm.rpc.connect``, ask the device who it is, ``upload`` the artifacts, run the job there
(``minigraph.remote.run_job``: the measuring is the device's), collect its JSON, ``remove``
the uploads and close the session, whatever happened. A device that fails (drops mid-job,
cannot load the artifacts, is not a minigraph server, never becomes free) gets its error in
its entry; the others' results are kept. Counterpart: ``tvm.rpc.TrackerSession.request`` +
the remote half of the old ``debug_executor`` over RPC, one device at a time.
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..errors import InputError, MinigraphError, last_line
from ..results.fleet import DeviceResult, Fleet
from .server import IDENTIFY, RUN_JOB
from .spec import JobSpec
from .tracker import Grant, NoFreeDevice, Tracker

# lazy: TVM's RPC client (TVM: ~1.2 s to import) is imported where it is called; TVM-free
# commands load this module

RETRY_S = 0.5   # pause before asking again when the tracker re-offers a device already used

Report = Callable[[DeviceResult], None]  # called as each device finishes


@dataclass(frozen=True)
class FleetRequest:
    tracker: tuple[str, int]
    key: str
    devices: int | None          # None: every server registered under the key
    wait_s: float = 60.0         # how long to wait for a free device

    @property
    def tracker_text(self) -> str:
        return f"{self.tracker[0]}:{self.tracker[1]}"


def run_fleet(req: FleetRequest, spec: JobSpec, plan: list[tuple[Path, str]], model: str,
              report: Report = lambda d: None) -> Fleet:
    """Runs ``spec`` on ``req.devices`` distinct devices in parallel; never raises for one
    device's failure (a tracker that cannot be reached is an error before any device)."""
    with Tracker(req.tracker) as tracker:
        registered = tracker.servers(req.key)
    count = len(registered) if req.devices is None else req.devices
    if count == 0:
        raise MinigraphError(f"no RPC server is registered under key '{req.key}' at tracker "
                             f"{req.tracker_text}; start one with `minigraph rpc-server "
                             f"--tracker {req.tracker_text} --key {req.key}`")
    fleet = Fleet(spec.kind, req.tracker_text, req.key, model, count, registered,
                  [DeviceResult(i) for i in range(count)])
    claimed: set[str] = set()
    lock = threading.Lock()
    threads = [threading.Thread(target=_device_job, daemon=True, name=f"device-{i}",
                                args=(req, spec, plan, d, claimed, lock, report))
               for i, d in enumerate(fleet.devices)]
    for t in threads:
        t.start()
    try:
        for t in threads:
            t.join()
    except KeyboardInterrupt:  # the daemon threads' sessions close as the process exits
        fleet.partial = True
        for d in fleet.devices:
            if not d.ok and d.error is None:
                d.error = "interrupted on the client before this device finished"
    return fleet


def _device_job(req: FleetRequest, spec: JobSpec, plan: list[tuple[Path, str]],
                out: DeviceResult, claimed: set[str], lock: threading.Lock,
                report: Report) -> None:
    start, stage = time.monotonic(), ["while connecting"]
    try:
        grant = _claim(req, claimed, lock)
        out.address = grant.address
        _run_on(grant, spec, plan, out, stage)
    except MinigraphError as err:
        out.error = str(err)
    except Exception as err:  # noqa: BLE001 - a TVM RPC error: the device or network failed
        out.error = _rpc_error(out, err, f"{stage[0]} after {time.monotonic() - start:.1f} s")
    finally:
        out.elapsed_s = time.monotonic() - start
    report(out)


def _claim(req: FleetRequest, claimed: set[str], lock: threading.Lock) -> Grant:
    """A free device not yet used by this fleet, within the wait deadline."""
    deadline = time.monotonic() + req.wait_s
    while True:
        try:
            with Tracker(req.tracker) as tracker:
                grant = tracker.request(req.key, max(deadline - time.monotonic(), 0.01))
        except NoFreeDevice:
            with Tracker(req.tracker) as tracker:
                n = len(tracker.servers(req.key))
            raise MinigraphError(f"no free device under key '{req.key}' within "
                                 f"{req.wait_s:g} s (--rpc-wait): tracker {req.tracker_text} "
                                 f"lists {n} server(s) under it, " + (
                                     "all busy or already used by this job" if n else
                                     "none registered")) from None
        with lock:
            if grant.address not in claimed:
                claimed.add(grant.address)
                return grant
        _release(grant)  # the tracker re-offered a device this fleet already used
        time.sleep(RETRY_S)


def _release(grant: Grant) -> None:
    """Opens and closes a session so the server registers as free again at once."""
    from tvm import rpc
    try:
        rpc.connect(grant.host, grant.port, grant.matchkey)
    except Exception:  # noqa: BLE001 - it may be gone already; nothing was sent to it
        pass


def _call(sess, name: str, *args):
    """A remote function's result; the function object is dropped so the session can close."""
    try:
        func = sess.get_function(name)
    except Exception as err:  # noqa: BLE001 - a missing global: AttributeError naming it
        if name in str(err):
            raise MinigraphError(f"the server has no {name}: not a minigraph rpc-server (start "
                                 "devices with `minigraph rpc-server`)") from None
        raise
    return func(*args)


def _run_on(grant: Grant, spec: JobSpec, plan: list[tuple[Path, str]],
            out: DeviceResult, stage: list[str]) -> None:
    """Session, identity, uploads, the job, and cleanup (uploads removed, session closed);
    ``stage[0]`` says what was under way, for the error if the device drops out."""
    from tvm import rpc
    sess = rpc.connect(grant.host, grant.port, grant.matchkey)
    uploaded: list[str] = []
    try:
        stage[0] = "while identifying itself"
        hello = json.loads(_call(sess, IDENTIFY))
        out.device = hello["device"]
        stage[0] = "during the upload"
        for local, remote in plan:
            sess.upload(str(local), remote)
            uploaded.append(remote)
        stage[0] = f"during the {spec.kind} job"
        reply = json.loads(_call(sess, RUN_JOB, spec.to_json()))
        if "error" in reply:
            raise MinigraphError(f"the job failed on the device: {reply['error']}")
        out.result = reply["result"]
        out.environment = out.result.get("env", {})  # what the job captured on the device
    finally:
        for name in uploaded:
            try:
                sess.remove(name)
            except Exception:  # noqa: BLE001 - a dropped device keeps nothing to remove
                break
        del sess  # the last reference: TVM closes the connection and the session ends


_DROPPED = ("kshutdown", "connection", "socket", "closed", "broken pipe", "reset by peer")


def _rpc_error(out: DeviceResult, err: Exception, stage: str) -> str:
    """A TVM RPC failure in words: a lost connection is the device dropping out."""
    where = f"device {out.address}" if out.address else "the device"
    why = last_line(err)
    if any(word in why.lower() for word in _DROPPED):
        return f"{where} dropped out {stage} (the connection was lost: {why})"
    return f"{where} failed {stage}: {why}"


def check_devices(text: str) -> int | None:
    """--rpc-devices: a positive count, or 'all' (None)."""
    if text == "all":
        return None
    if not text.isdigit() or int(text) < 1:
        raise InputError(f"--rpc-devices expects a positive count or 'all', got '{text}'")
    return int(text)
