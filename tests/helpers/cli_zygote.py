"""The CLI zygote of tests/helpers/cli_runner.py: imports every minigraph module (and what their
commands import lazily: TVM's compiler, ONNX), then forks one child per request and runs
``python -m minigraph`` in it.

Protocol, one JSON object a line: on stdin a request {argv, cwd, env, timeout, stdin, stdout,
stderr} (the last three: files the child reads and writes) and optionally address_space (the
child's RLIMIT_AS in bytes, set before the command starts); on the private copy of stdout
{"returncode": N} or {"timeout": true} (fd 1 itself goes to stderr, so that nothing a module
prints at import corrupts the replies). Requests are read with os.read, not through a buffered
reader, so no child inherits the next request in a buffer. Ends at EOF on stdin.
"""
from __future__ import annotations

import ctypes
import importlib
import json
import os
import pkgutil
import resource
import runpy
import signal
import sys
import tempfile
import time
import traceback

PRELOAD = ("numpy", "tvm", "tvm.relax", "tvm.relax.frontend.onnx", "tvm.rpc", "onnx")


def preload() -> None:
    for name in PRELOAD:
        importlib.import_module(name)
    import minigraph
    for mod in pkgutil.walk_packages(minigraph.__path__, "minigraph."):
        if not mod.name.endswith("__main__"):
            importlib.import_module(mod.name)


def _exit_code(code: object) -> int:
    """What the interpreter makes of SystemExit's argument."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def child(req: dict) -> None:
    """Runs the command as ``python -m minigraph`` would, then exits; never returns."""
    code = 1
    try:
        os.setpgid(0, 0)  # a timeout kills the command and whatever it started
        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: dies with us
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        tempfile.tempdir = None  # TMPDIR is read again
        out = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        for fd, name, mode in ((0, "stdin", os.O_RDONLY), (1, "stdout", out), (2, "stderr", out)):
            f = os.open(req[name], mode, 0o600)
            os.dup2(f, fd)
            os.close(f)
        if req.get("address_space"):
            resource.setrlimit(resource.RLIMIT_AS, (req["address_space"], req["address_space"]))
        sys.argv = ["minigraph", *req["argv"]]
        try:
            runpy.run_module("minigraph", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as e:
            code = _exit_code(e.code)
        except BaseException:  # noqa: BLE001 - as the interpreter: the traceback, exit 1
            traceback.print_exc()
            code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - a closed stream: nothing left to say
                pass
        os._exit(code)


def wait(pid: int, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return {"returncode": os.waitstatus_to_exitcode(status)}
        time.sleep(0.005)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)
    return {"timeout": True}


def lines(fd: int):
    buf = b""
    while True:
        while b"\n" not in buf:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return
            buf += chunk
        line, buf = buf.split(b"\n", 1)
        yield line


def main() -> int:
    preload()
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    for line in lines(0):
        req = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            child(req)
        replies.write(json.dumps(wait(pid, float(req["timeout"]))) + "\n")
        replies.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
