"""One ``minigraph profile`` of a model's files, start to finish: what the CLI and a remote
device's job both run, so a profile taken on a device is taken exactly as a local one.

The model is opened, its pool placed and its values set by the session diagnose shares
(values/session.py); the environment is read before measuring (the cold flush is sized from
this machine's last-level cache), a mode that fails part-way still returns what the modes
before it measured. The data check's one checked run, the data costs and the Relax VM's own
numbers (an executable only) come after minigraph's modes, so they never warm what first-run
sees. Counterpart: what a script around ``debug_executor.create`` + ``profile()`` did by
hand.
"""
from __future__ import annotations

import os
import time
from dataclasses import replace

from ..artifacts.kernel_code import kernel_code
from ..errors import last_line
from ..measure.clock import Progress, no_progress
from ..measure.environment import llc_bytes
from ..measure.inflight import FLIGHT
from ..measure.peak import machine_peak
from ..protocols.relax_vm import measure_vm
from ..protocols.settings import ProtocolSettings
from ..results.profile import Profile, Settings
from ..results.protocols import skipped
from ..runtime.doors import ModelFiles, vm_reference
from ..runtime.opened import DoorKind, OpenedModel
from ..threadpool.config import pool_reset
from ..threadpool.request import ThreadRequest
from ..values.session import open_session
from .profiler import MeasurementError, measure
from .roofline import above_peak, attach, shape_flops


def profile_files(files: ModelFiles, settings: Settings, req: ThreadRequest, *,
                  force: bool = False, seed: int = 0, progress: Progress = no_progress,
                  command: list[str] | None = None, inputs: dict | None = None,
                  fill: str | None = None, symbols: dict[str, int] | None = None
                  ) -> tuple[Profile, OpenedModel, MeasurementError | None]:
    """Measures every mode of ``settings`` on the model; returns the Profile (environment,
    thread placement, the data it ran on, the Relax VM's own numbers for an executable and,
    given the ``command``, provenance filled in), the opened model, and the error a mode
    failed with (its profile holds what was measured before it). ``inputs``: arrays by name
    (the others are seeded); ``fill``: what weights nobody gave get (values/policy.py);
    ``symbols``: a Relax VM function's symbolic sizes (else read from the inputs' shapes);
    ``req``: the pool's placement (its thread count resolved by the session if not given)."""
    session = open_session(files, req, force=force, symbols=symbols, inputs=inputs, fill=fill,
                           seed=seed, command=command)
    model, env = session.model, session.environment()
    if settings.flush_nbytes is None:  # this machine's: twice its last-level cache
        settings = replace(settings, flush_nbytes=2 * llc_bytes(env))
    failure = None
    with session.measuring():
        try:
            prof = measure(model.executor, settings,
                           reset=pool_reset(session.threads.threads), progress=progress)
        except MeasurementError as err:  # the caller saves and shows it first, reports after
            prof, failure = err.profile, err
        if not prof.partial:
            prof.data = session.data()
        if settings.relax_vm and model.door is DoorKind.RELAX_VM and not prof.partial:
            prof.relax_vm = _relax_vm(model)
    prof.env, prof.threads, prof.provenance = env, session.placed(), session.provenance
    prof.env["build"] = {k: model.build[k] for k in BUILD_FACTS if k in model.build}
    prof.env["library"] = {"abi": model.facts.abi.value, "parallel_kernels": model.facts.parallel}
    if model.derivation is not None and getattr(model.derivation, "sizes", None):
        prof.settings["sizes"] = dict(model.derivation.sizes)  # the symbolic sizes profiled
    _attach_roofline(prof, model.build)
    _attach_code(prof, model.files.lib)
    return prof, model, failure


def _attach_code(prof: Profile, lib: str | os.PathLike) -> None:
    """Each op's kernel code size and digest (artifacts/kernel_code.py): compare tells "same
    kernel hash, other machine code" (another -mcpu or schedule) from it."""
    code = kernel_code(lib, sorted({op["func_name"] for op in prof.ops}))
    for op in prof.ops:
        if op["func_name"] in code:
            op["code"] = code[op["func_name"]]


# what build.json says of the code that ran, kept in the profile (analysis/verdict.py's "build")
BUILD_FACTS = ("model", "target", "schedule_policy", "tvm_version", "vector_unit")


def _relax_vm(model: OpenedModel) -> list[dict]:
    """TVM's own numbers on the executable itself (its time_evaluator and set_instrument),
    taken after minigraph's modes on the same pool; a failure is one skipped result."""
    ref = vm_reference(model)
    keys = ("relax_vm_e2e", "relax_vm_instrument")
    try:
        FLIGHT.phase("the Relax VM's own numbers")  # what a crash report says was running
        results = measure_vm(model.executor, ref, keys, ProtocolSettings(),
                             time.perf_counter_ns)
    except KeyboardInterrupt:
        return []
    except Exception as err:  # noqa: BLE001 - the profile's own modes are kept
        results = [skipped(k, f"{type(err).__name__}: {last_line(err)}") for k in keys]
    return [r.to_dict() for r in results]


def _attach_roofline(prof: Profile, build: dict) -> None:
    """FLOPs per op from build.json and this machine's measured peak (cached per machine;
    measured after the profile, on the main thread only, so no mode sees it)."""
    if build.get("kernels") or any(shape_flops(op) is not None for op in prof.ops):
        threads = prof.threads.get("tvm_num_threads")
        n = threads if isinstance(threads, int) else 1
        attach(prof, build, machine_peak(n))
        if above_peak(prof) > 1:  # an op beat the peak: the cached one was taken on a busy machine
            attach(prof, build, machine_peak(n, refresh=True))
            if above_peak(prof) > 1:
                prof.env["peak"]["below_rates"] = True
