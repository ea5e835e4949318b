"""One ``minigraph profile`` of a model's files, start to finish: what the CLI and a remote
device's job both run, so a profile taken on a device is taken exactly as a local one.

Order matters: TVM's thread pool is placed (or left to the first parallel kernel) before
anything else touches TVM, the environment is read before measuring (the cold flush is sized
from this machine's last-level cache), a mode that fails part-way still returns what the
modes before it measured. Weights nobody gave are refused before anything runs (or filled as
``--fill`` says, and recorded); the data check's one checked run, the data costs and the Relax
VM's own numbers (an executable only) come after minigraph's modes, so they never warm what
first-run sees. Counterpart: what a script around ``debug_executor.create`` + ``profile()``
did by hand.
"""
from __future__ import annotations

import os
import time
from dataclasses import replace

from ..artifacts.kernel_code import kernel_code
from ..errors import last_line
from ..measure.clock import Progress, no_progress
from ..measure.environment import capture_env, environment_soon, llc_bytes
from ..measure.inflight import FLIGHT
from ..measure.interrupt import terminate_as_interrupt
from ..measure.peak import machine_peak
from ..measure.provenance import capture
from ..protocols.relax_vm import measure_vm
from ..protocols.settings import ProtocolSettings
from ..results.profile import Profile, Settings
from ..results.protocols import skipped
from ..runtime.doors import ModelFiles, open_model, vm_reference
from ..runtime.opened import DoorKind, OpenedModel
from ..threadpool.config import ThreadRequest, default_threads, place_threads, pool_reset
from ..values.check import check_values
from ..values.cost import measure_costs
from ..values.policy import prepare_values
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
    ``symbols``: a Relax VM function's symbolic sizes (else read from the inputs' shapes)."""
    verify = place_threads(req)
    soon = environment_soon()  # read while the model opens; joined before anything is timed
    model = open_model(files, force=force, complete=False, symbols=symbols, inputs=inputs)
    env = capture_env(**soon())
    if settings.flush_nbytes is None:  # this machine's: twice its last-level cache
        settings = replace(settings, flush_nbytes=2 * llc_bytes(env))
    ex = model.executor
    provenance = {} if command is None else capture(
        {"lib": model.files.lib, "graph": files.graph, "params": files.params}, command)
    names = prepare_values(model, inputs, fill, seed)  # refuses unset weights without --fill
    failure = None
    with terminate_as_interrupt():
        try:
            prof = measure(ex, settings, reset=pool_reset(req.threads or default_threads()),
                           progress=progress)
        except MeasurementError as err:  # the caller saves and shows it first, reports after
            prof, failure = err.profile, err
        if not prof.partial:
            prof.data = _data(model, names, fill)
        if settings.relax_vm and model.door is DoorKind.RELAX_VM and not prof.partial:
            prof.relax_vm = _relax_vm(model)
    prof.env, prof.threads, prof.provenance = env, verify(), provenance
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


# what build.json says of the code that ran, kept in the profile (report/verdict.py's "build")
BUILD_FACTS = ("model", "target", "schedule_policy", "tvm_version", "vector_unit")


def _data(model: OpenedModel, inputs: frozenset[str], fill: str | None) -> dict:
    """The data check (one checked run, after the timed modes so that first-run stays a
    first run) and what reading subnormal values costs each op that does."""
    report, captured = check_values(model.executor, inputs, run=True)
    costs = measure_costs(model.executor, report, captured, time.perf_counter_ns)
    return replace(report, costs=costs, fill=fill).to_dict()


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
