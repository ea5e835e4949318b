"""One ``minigraph profile`` of a model's files, start to finish: what the CLI and a remote
device's job both run, so a profile taken on a device is taken exactly as a local one.

Order matters: TVM's thread pool is placed (or left to the first parallel kernel) before
anything else touches TVM, the environment is read before measuring (the cold flush is sized
from this machine's last-level cache), and a mode that fails part-way still returns what the
modes before it measured. Counterpart: what a script around ``debug_executor.create`` +
``profile()`` did by hand.
"""
from __future__ import annotations

from dataclasses import replace

from ..artifacts.buildinfo import read_build
from ..data.inputs import random_inputs
from ..measure.clock import Progress, no_progress
from ..measure.environment import capture_env, llc_bytes
from ..measure.interrupt import terminate_as_interrupt
from ..measure.peak import machine_peak
from ..measure.provenance import capture
from ..results.profile import Profile, Settings
from ..runtime.doors import ModelFiles, open_executor
from ..runtime.executor import Executor
from ..threadpool.config import ThreadRequest, place_threads, pool_reset
from .profiler import MeasurementError, measure
from .roofline import attach


def profile_files(files: ModelFiles, settings: Settings, req: ThreadRequest, *,
                  force: bool = False, seed: int = 0, progress: Progress = no_progress,
                  command: list[str] | None = None
                  ) -> tuple[Profile, Executor, MeasurementError | None]:
    """Measures every mode of ``settings`` on the model; returns the Profile (environment,
    thread placement and, given the ``command``, provenance filled in), the executor, and the
    error a mode failed with (its profile holds what was measured before it)."""
    verify = place_threads(req)
    env = capture_env()
    if settings.flush_nbytes is None:  # this machine's: twice its last-level cache
        settings = replace(settings, flush_nbytes=2 * llc_bytes(env))
    ex = open_executor(files, force=force)
    provenance = {} if command is None else capture(
        {"lib": files.lib, "graph": files.graph, "params": files.params}, command)
    ex.set_input(**random_inputs(ex, {}, seed=seed))
    failure = None
    with terminate_as_interrupt():
        try:
            prof = measure(ex, settings, reset=pool_reset(req.threads or 1), progress=progress)
        except MeasurementError as err:  # the caller saves and shows it first, reports after
            prof, failure = err.profile, err
    prof.env, prof.threads, prof.provenance = env, verify(), provenance
    _attach_roofline(prof, files)
    return prof, ex, failure


def _attach_roofline(prof: Profile, files: ModelFiles) -> None:
    """FLOPs per op from build.json and this machine's measured peak (cached per machine;
    measured after the profile, on the main thread only, so no mode sees it)."""
    info = read_build(files.graph or files.lib)
    if info.get("kernels"):
        threads = prof.threads.get("tvm_num_threads")
        attach(prof, info, machine_peak(threads if isinstance(threads, int) else 1))
