"""What a run asks of TVM's CPU thread pool, checked before anything is configured: the
worker count (given, or the default every part of minigraph shares), the affinity mode, the
CPUs, the main thread's CPU. This request is a run's context for TVM's pool, resolved once
where the run starts (``resolved``: the one rule for a count nobody gave); environ.py writes
what TVM reads of it. A request TVM could not honour (a thread count its pool would not
run, a CPU this machine lacks, TVM_NUM_THREADS=abc that its atoi reads as one thread) is an
InputError here, locally or on the device a remote job runs on; config.py configures the pool
and reads back what it got. Counterpart: ``threading_backend.cc`` ``MaxConcurrency``.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace

from ..errors import InputError
from .cpulist import cpu_ids
from .environ import POOL_SIZE_VAR

MODES = {"big": 1, "little": -1, "one-per-core": -2, "share-all": -3}
# the most workers a request may ask for: TVM's pool starts one thread per worker (then uses
# no more than the CPUs), and its atoi of TVM_NUM_THREADS wraps a 1099511627776 to 1 thread
MAX_THREADS = 1024
THREAD_VARS = (POOL_SIZE_VAR, "OMP_NUM_THREADS")  # what sets TVM's worker count, in order


@dataclass(frozen=True)
class ThreadRequest:
    """What the user asked for.

    ``affinity`` maps onto TVM's ``config_threadpool`` modes: "big" -> kBig (1), "little" ->
    kLittle (-1), "one-per-core" -> kSpecifyOneCorePerThread (-2, worker i on cpus[i + 1], caller
    on all of ``cpus``), "share-all" -> kSpecifyThreadShareAllCore (-3, every thread on all of
    ``cpus``). Without ``affinity``, ``cpus`` implies "share-all" (kBig would ignore ``cpus``);
    the specify modes without ``cpus`` use the current affinity (TVM would use zero workers).
    """

    threads: int | None = None
    affinity: str | None = None
    cpus: tuple[int, ...] | None = None
    pin_main: int | None = None

    def __post_init__(self) -> None:
        """A request TVM could not honour is refused here (locally, or on the device a remote
        job runs on): a thread count it would not run, a CPU this machine does not have."""
        if self.threads is not None and (type(self.threads) is not int
                                         or not 1 <= self.threads <= MAX_THREADS):
            raise InputError(f"threads must be 1 to {MAX_THREADS}, got {self.threads!r}")
        if self.affinity is not None and self.affinity not in MODES:
            raise InputError(f"unknown affinity {self.affinity!r}; expected one of "
                             f"{sorted(MODES)}")
        n = cpu_ids()
        if self.pin_main is not None and (type(self.pin_main) is not int
                                          or not 0 <= self.pin_main < n):
            raise InputError(f"--pin-main {self.pin_main!r}: not a CPU this machine has (it "
                             f"has CPUs 0-{n - 1})")

    def resolved(self) -> ThreadRequest:
        """The request with its worker count decided, as every run does where it starts (the
        CLI, the shared session of profile and diagnose, a remote device's job, the Python
        API): as given, else one per CPU of ``cpus`` (TVM's pool would use no more), else
        ``default_threads()``."""
        if self.threads is not None:
            return self
        return replace(self, threads=len(self.cpus) if self.cpus else default_threads())


def _atoi(text: str) -> int:
    m = re.match(r"\s*([+-]?\d+)", text)
    return int(m.group(1)) if m else 0


def max_concurrency(environ: dict | None = None, hardware: int | None = None) -> int:
    """Predicted pool size; mirrors threading_backend.cc MaxConcurrency() (no thread-local
    override)."""
    env = os.environ if environ is None else environ
    val = env.get(THREAD_VARS[0], env.get(THREAD_VARS[1]))
    if val is not None:
        return max(_atoi(val), 1)
    hw = hardware if hardware is not None else (os.cpu_count() or 1)
    machine = os.uname().machine
    return max(hw // 2 if machine in ("x86_64", "AMD64") else hw, 1)


def default_threads(environ: dict | None = None) -> int:
    """minigraph's worker count when none is given, the same in the CLI, the API, diagnose
    and on remote devices: what the user set in TVM_NUM_THREADS (or OMP_NUM_THREADS), else
    every CPU this process may use. TVM's own default (hardware threads / 2 on x86-64, one
    worker on a 2-vCPU guest) is not used: it assumes SMT pairs a guest's vCPUs do not have.
    A variable that is not a whole number of 1 to MAX_THREADS is an InputError: TVM's atoi
    would read ``abc`` as one thread, without a word."""
    env = os.environ if environ is None else environ
    name = next((v for v in THREAD_VARS if v in env), None)
    if name is None:
        return max(len(os.sched_getaffinity(0)), 1)
    digits = env[name].strip().lstrip("0")
    if not (digits.isascii() and digits.isdigit()) or len(digits) > len(str(MAX_THREADS)) \
            or int(digits) > MAX_THREADS:
        raise InputError(f"{name}={env[name][:40]!r} is not a number of threads from 1 to "
                         f"{MAX_THREADS}: set a number, unset it, or pass --threads N")
    return int(digits)
