"""``python -m minigraph ...`` for the tests, each command forked from a zygote that imported
minigraph and TVM once.

A fresh interpreter spends ~1.2 s importing TVM before the command starts (ml_dtypes' extension
alone ~0.5 s), and the suite runs some sixty commands. Each command here is still a process of
its own, as ``python -m minigraph`` would be: its own working directory, environment, stdin,
stdout, stderr and exit code, and its own TVM thread pool (the zygote imports and does nothing
else: it never calls into TVM's runtime, so no pool exists to be forked). What differs is only
what an interpreter decides while it starts (the locale's encoding, ``PYTHON*`` variables,
``sys.path``) and that the process is a child of the zygote: tests about those, and tests that
signal the process, start it themselves. An address-space limit (``address_space``) is set in
the child before the command starts, so the command runs under it as a fresh ``python -m
minigraph`` would (only the imports, done in the zygote, were not under it).

``run`` has subprocess.run's shape (a CompletedProcess; TimeoutExpired after killing the
command's process group). The zygote is started on first use and ends with the test process.
"""
from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Mapping, Sequence

ROOT = Path(__file__).resolve().parents[2]
ZYGOTE = Path(__file__).resolve().with_name("cli_zygote.py")
_state: dict[str, subprocess.Popen] = {}


def _zygote() -> subprocess.Popen:
    proc = _state.get("zygote")
    if proc is None or proc.poll() is not None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get(
            "PYTHONPATH", "")])}
        proc = subprocess.Popen([sys.executable, str(ZYGOTE)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, env=env, cwd=ROOT)
        _state["zygote"] = proc
        atexit.register(_close, proc)
    return proc


def _close(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.stdin.close()  # the zygote's request loop ends at EOF
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run(argv: Sequence[object], *, cwd: str | os.PathLike | None = None,
        env: Mapping[str, str] | None = None, timeout: float = 600,
        input: str | None = None, check: bool = False,
        address_space: int | None = None) -> subprocess.CompletedProcess:
    """``python -m minigraph *argv`` in ``cwd`` with ``env`` (default: this process's) and,
    given ``address_space``, that RLIMIT_AS (bytes); text output, as subprocess.run(...,
    capture_output=True, text=True)."""
    args = [sys.executable, "-m", "minigraph", *map(str, argv)]
    with tempfile.TemporaryDirectory(prefix="mg-cli-") as tmp:
        files = {k: os.path.join(tmp, k) for k in ("stdin", "stdout", "stderr")}
        Path(files["stdin"]).write_text(input or "")
        request = {"argv": [str(a) for a in argv], "cwd": str(cwd or os.getcwd()),
                   "env": dict(os.environ if env is None else env), "timeout": timeout,
                   "address_space": address_space, **files}
        proc = _zygote()
        proc.stdin.write(json.dumps(request).encode() + b"\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the CLI zygote died (exit {proc.wait()})")
        reply = json.loads(line)
        out, err = (Path(files[k]).read_text(errors="replace") for k in ("stdout", "stderr"))
    if reply.get("timeout"):
        raise subprocess.TimeoutExpired(args, timeout, out, err)
    done = subprocess.CompletedProcess(args, reply["returncode"], out, err)
    if check:
        done.check_returncode()
    return done
