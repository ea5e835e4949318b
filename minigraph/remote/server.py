"""``minigraph rpc-server``: a TVM RPC server that registers minigraph's functions and its device.

Built on ``tvm.rpc.Server``: TVM's server process (a PopenWorker) registers with the tracker
under a key, listens, and forks one session process per client connection, with a fresh
working directory that TVM deletes when the session ends. ``register`` is the
``server_init_callback``: it runs in that server process before it listens and registers

- ``minigraph.remote.identify()`` -> JSON: who this device is (host, pids, CPU, versions) and
  its captured environment;
- ``minigraph.remote.run_job(spec_json)`` -> JSON: runs a ``JobSpec`` on the files uploaded
  to the session directory, in a fresh ``python -m minigraph.remote.job`` process.

Nothing else is served: each session's socket goes through ``gate.Gate``, which passes to TVM
only the allowlist ``SERVED`` (these two, and TVM's upload/download/remove confined to the
session directory) and refuses every other request before TVM reads it: other global
functions, ``load_module``, session constructors such as ``rpc.PopenSession``, raw memory
copies (docs/security.md).

Every device-side process dies with its parent (PR_SET_PDEATHSIG): a server killed with
SIGKILL leaves no listener, session or job behind; the listener, told by SIGTERM, also removes
the server's work root (every session directory).
"""
from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .. import __version__
from ..errors import MinigraphError
from ..fileio.jsontext import document_text
from ..measure.child import ChildTimeout, die_with_parent, importing_this_tree, run_child
from ..measure.inflight import ENV as INFLIGHT_ENV, child_record, crash_message, read_record
from .gate import Gate
from .job import PARENT_ENV
from .spec import JobSpec
from .tracker import Tracker

# lazy: TVM (~1.2 s to import) and psutil (~40 ms) are imported where they are called;
# TVM-free commands load this module

IDENTIFY, RUN_JOB = "minigraph.remote.identify", "minigraph.remote.run_job"
# what a peer may call (tvm.rpc.RPCSession.upload/download/remove ask for TVM's three by name);
# minigraph's client needs IDENTIFY, RUN_JOB, upload and remove
SERVED = frozenset({IDENTIFY, RUN_JOB, "tvm.rpc.server.upload", "tvm.rpc.server.download",
                    "tvm.rpc.server.remove"})
_STATE: dict = {}  # set by register() in TVM's server process, inherited by its sessions


def workdir() -> Path:
    """This session's directory (where ``upload`` puts files): TVM's workpath."""
    import tvm
    return Path(tvm.get_global_func("tvm.rpc.server.workpath")("x")).parent


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo") as f:
            return next((line.split(":", 1)[1].strip() for line in f
                         if line.startswith(("model name", "Processor", "cpu model"))), None)
    except OSError:
        return None


def identify() -> str:
    """Who this device is, cheaply (the job captures the full environment where it runs)."""
    import platform
    import socket

    import tvm

    device = {"host": socket.gethostname(), "key": _STATE.get("key"),
              "server_pid": _STATE.get("server_pid"), "session_pid": os.getpid(),
              "cpu": _cpu_model(), "logical_cores": os.cpu_count(),
              "machine": platform.machine(), "kernel": platform.release(),
              "minigraph": __version__, "tvm": tvm.__version__,
              "python": platform.python_version(), "workdir": str(workdir())}
    return json.dumps({"device": device})


def run_job(spec_json: str) -> str:
    """Runs one job in a fresh process in this session's directory; a JSON envelope back."""
    try:
        spec = JobSpec.from_json(spec_json)
    except Exception as err:  # noqa: BLE001 - the client gets the reason, never a traceback
        return json.dumps({"error": str(err), "exit_code": 2})
    env = importing_this_tree(dict(os.environ, **{PARENT_ENV: str(os.getpid())}))
    with child_record() as (record, path):  # the op in flight, if a kernel kills the job
        env[INFLIGHT_ENV] = str(path)
        try:  # measure/child.py: killed and reaped on timeout, and if this session is stopped
            done = run_child([sys.executable, "-m", "minigraph.remote.job"],
                             stdin=spec.to_json(), env=env, cwd=workdir(),
                             timeout_s=spec.timeout_s, what="the job process on the device")
        except ChildTimeout as err:
            return json.dumps({"error": str(err), "exit_code": 1})
        crash = read_record(record) if done.returncode < 0 else None
    result = done.last_json()
    if crash is not None:
        return json.dumps({"error": crash_message(-done.returncode, crash,
                                                  "the job process on the device"),
                           "exit_code": 1})
    if not done.ok:
        return json.dumps({"error": f"the job process on the device {done.died()}",
                           "exit_code": 1})
    if result is None:
        lines = done.stdout.strip().splitlines() or [""]
        return json.dumps({"error": f"unreadable job output: {lines[-1][:200]}", "exit_code": 1})
    return document_text(result)


def _session_child() -> None:
    """In each forked session process: die with the listener; its SIGTERM handler is not ours."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    die_with_parent(signal.SIGKILL, _STATE["listener_pid"])


def _on_server_death(signum: int, frame: object) -> None:
    """The listener's parent (the rpc-server command) is gone: stop sessions, remove files."""
    try:
        import psutil
        for child in psutil.Process().children(recursive=True):
            child.kill()
    finally:
        shutil.rmtree(_STATE.get("root", ""), ignore_errors=True)
        os._exit(0)


def _confine_file_access() -> None:
    """TVM resolves the file names of ``upload``/``download``/``remove`` through the global
    ``tvm.rpc.server.workpath``, joined unchecked: an absolute name or '..' would read, write or
    remove any file. This wraps the session set-up (``tvm.rpc.server._server_env``) so that each
    session's workpath refuses names outside its directory."""
    import tvm.rpc.server as tvm_server
    import tvm_ffi
    original = tvm_server._server_env

    def confined_env(load_library, work_path=None):
        temp = original(load_library, work_path)  # registers TVM's own functions first
        base = os.path.realpath(temp.temp_dir)

        def workpath(name: str) -> str:
            full = os.path.realpath(os.path.join(base, name))
            if os.path.commonpath([full, base]) != base:
                raise ValueError(f"refused: {name!r} is outside the session directory")
            return full
        tvm_ffi.register_global_func("tvm.rpc.server.workpath", workpath, override=True)
        return temp
    tvm_server._server_env = confined_env


def _serve_gated(serve_loop: Callable[..., None], sock: socket.socket,
                 load_library: str | None, work_path: object) -> None:
    """Stands in for ``tvm.rpc.server._serve_loop`` (the forked session process's body): TVM
    serves the gate's end of a socket pair, never the peer's socket."""
    serve_loop(Gate(sock, SERVED).start(), load_library, work_path)


def _gate_sessions() -> None:
    """Puts the gate in front of every session. TVM's ``_serving`` starts each session process
    with the module global ``_serve_loop``, which sets up the session (``_server_env``) and runs
    ``ServerLoop`` on the socket it is given; if a TVM version no longer works this way, the
    server refuses to start rather than serve ungated."""
    import tvm.rpc.server as tvm_server
    if ("_serve_loop" not in tvm_server._serving.__code__.co_names
            or "_server_env" not in tvm_server._serve_loop.__code__.co_names):
        raise MinigraphError("this TVM's RPC server does not start sessions through "
                             "tvm.rpc.server._serve_loop: minigraph cannot gate them")
    tvm_server._serve_loop = functools.partial(_serve_gated, tvm_server._serve_loop)


def register(key: str, server_pid: int, root: str) -> None:
    """``server_init_callback``: runs in TVM's server process before it listens."""
    import tvm_ffi
    _STATE.update(key=key, server_pid=server_pid, root=root, listener_pid=os.getpid())
    signal.signal(signal.SIGTERM, _on_server_death)
    die_with_parent(signal.SIGTERM, server_pid)
    os.register_at_fork(after_in_child=_session_child)
    _confine_file_access()
    _gate_sessions()
    tvm_ffi.register_global_func(IDENTIFY, identify, override=True)
    tvm_ffi.register_global_func(RUN_JOB, run_job, override=True)


@dataclass
class RunningServer:
    """A started ``tvm.rpc.Server`` with minigraph's functions; ``stop`` ends it and its files."""

    server: object
    host: str
    port: int
    key: str
    root: str

    def stop(self) -> None:
        try:
            self.server.terminate()  # type: ignore[attr-defined]  # kills the listener's tree
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def wait(self) -> None:
        self.server.proc.join()  # type: ignore[attr-defined]


def start_server(tracker: tuple[str, int], key: str, host: str = "127.0.0.1",
                 port: int = 9090, port_end: int = 9199) -> RunningServer:
    """Registers a minigraph RPC server with the tracker under ``key``; returns once it listens.

    Session directories live under one private work root (TMPDIR of TVM's server process),
    removed when the server stops. The tracker hands clients ``host`` itself unless it is a
    wildcard address (then the address the server connected to the tracker from)."""
    from tvm import rpc

    with Tracker(tracker):  # fails now, clearly, if the tracker is down
        pass
    root = tempfile.mkdtemp(prefix=f"minigraph-rpc-{os.getpid()}-")
    os.environ["TMPDIR"] = root  # inherited by TVM's server process: its session dirs go here
    os.environ["PYTHONPATH"] = importing_this_tree(dict(os.environ))["PYTHONPATH"]
    custom = None if host in ("0.0.0.0", "::", "") else host
    try:
        server = rpc.Server(host, port, port_end, tracker_addr=tracker, key=key,
                            custom_addr=custom, silent=True,
                            server_init_callback=functools.partial(register, key, os.getpid(),
                                                                   root))
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return RunningServer(server, host, server.port, key, root)
