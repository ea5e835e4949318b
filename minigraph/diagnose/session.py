"""One ``minigraph diagnose`` of a model's files, start to finish: the fresh-process ladder,
then TVM's protocols side by side on the same kernels. What the CLI and a remote device's job
both run, so a diagnosis taken on a device is taken exactly as a local one.

The ladder comes first and owns the machine (its fresh processes must not compete with this
one); the protocols then run here, on the same pool size. Ctrl-C or SIGTERM at any point keeps
what was measured, marked partial; a protocol that fails never costs the ladder's records.
"""
from __future__ import annotations

import os
import statistics
import time
from dataclasses import replace
from typing import Callable

from ..artifacts.buildinfo import read_build
from ..errors import last_line
from ..measure.clock import Progress, no_progress
from ..measure.environment import capture_env, environment_soon
from ..measure.inflight import FLIGHT
from ..measure.interrupt import terminate_as_interrupt
from ..measure.provenance import capture
from ..protocols.measure import measure_protocols
from ..results.diagnosis import Diagnosis
from ..results.protocols import ProtocolResult
from ..runtime.doors import ModelFiles, open_model, vm_reference
from ..runtime.opened import OpenedModel
from ..runtime.opinfo import describe_ops
from ..values.check import check_values
from ..values.cost import measure_costs
from ..values.inputs import read_inputs
from ..values.policy import prepare_values
from .attribution import Attribution, attribution_of
from .estimate import Estimate, after_s, budgeted_s, ladder_s
from .ladder import MIN_ROUNDS, FirstRound, run_ladder
from .spec import DiagnoseSettings


def diagnose_files(files: ModelFiles, settings: DiagnoseSettings, *, protocols: bool = True,
                   force: bool = False, progress: Progress = no_progress, debug: bool = False,
                   command: list[str] | None = None, vm_lib: os.PathLike | None = None,
                   inputs: dict[str, str] | None = None,
                   on_estimate: Callable[[Estimate], None] | None = None,
                   ) -> tuple[Diagnosis, Attribution | None, tuple[ProtocolResult, ...]]:
    """The Diagnosis (records, environment, provenance given the ``command``), its
    attribution, and TVM's protocols (none when not asked for or interrupted). ``vm_lib``
    overrides the Relax VM executable the VM protocols run on (default: runtime/doors.py);
    ``inputs``: .npy files by input name, read by every process; ``on_estimate`` is told how
    long the whole diagnosis will take, once the ladder's first round has run."""
    started = time.monotonic()
    os.environ["TVM_NUM_THREADS"] = str(settings.threads)  # the protocols use the same pool
    soon = environment_soon()  # read while the model opens, never beside the ladder
    given = read_inputs([f"{n}={p}" for n, p in (inputs or {}).items()], files)
    model = open_model(files, force=force, complete=False, symbols=settings.shapes,
                       inputs=given)  # validates before any worker starts
    if model.derivation is not None and model.derivation.sizes:  # every worker: these sizes
        settings = replace(settings, shapes=dict(model.derivation.sizes))
    inputs_set = prepare_values(model, given, settings.fill, settings.seed)  # no unset weights
    diag = Diagnosis(describe_ops(model.executor), settings.to_dict())
    if command is not None:
        diag.provenance = capture({"lib": files.lib, "graph": files.graph,
                                   "params": files.params}, command)
    results: tuple[ProtocolResult, ...] = ()
    slow_env = soon()
    with terminate_as_interrupt():
        run_ladder(diag, files, settings, progress=progress, debug=debug, inputs=inputs,
                   first_round=_estimator(diag, settings, protocols, on_estimate, started))
        att = attribution_of(diag)
        if protocols and not diag.partial:
            results = _protocols(diag, model, inputs_set, settings, vm_lib)
        if not diag.partial:
            diag.data = _data(model, inputs_set, settings.fill)
    diag.env = capture_env(**slow_env)
    return diag, att, results


def _estimator(diag: Diagnosis, settings: DiagnoseSettings, protocols: bool,
               tell: Callable[[Estimate], None] | None, start: float
               ) -> FirstRound | None:
    """The ladder's first-round callback that turns its wall times into an Estimate;
    ``start``: when the diagnosis began (time.monotonic), so the hint counts it all."""
    if tell is None:
        return None

    def first_round(took: dict[str, float], gap_s: float) -> None:
        steady = diag.steady_times() or {}
        rows = [row for m in steady.values() for row in m.tolist()]
        per_op = [statistics.median(col) for col in zip(*rows)] if rows else []
        elapsed = time.monotonic() - start
        tell(Estimate(elapsed, budgeted_s(took, gap_s, settings, MIN_ROUNDS),
                      after_s(per_op, protocols), before_s=max(0.0, elapsed - sum(took.values())),
                      budget_s=settings.budget_s, planned_s=ladder_s(took, gap_s, settings)))
    return first_round


def _data(model: OpenedModel, inputs: frozenset[str], fill: str | None) -> dict:
    """The data check and costs, on this process's executor (after the protocols)."""
    report, captured = check_values(model.executor, inputs, run=True)
    costs = measure_costs(model.executor, report, captured, time.perf_counter_ns)
    return replace(report, costs=costs, fill=fill).to_dict()


def _protocols(diag: Diagnosis, model: OpenedModel, inputs: frozenset[str],
               settings: DiagnoseSettings, vm_lib: os.PathLike | None
               ) -> tuple[ProtocolResult, ...]:
    """TVM's protocols on this process's executor, recorded into ``diag``."""
    ex = model.executor
    vm = vm_reference(model)
    if vm_lib is not None:  # another directory's executable, with its own build.json
        vm = replace(vm, lib=vm_lib, build=read_build(vm_lib))
    weights = [n for n in ex.input_names() if n not in inputs and
               ex.sources[n].kind != "constant"]
    FLIGHT.phase("TVM's protocols")  # what a crash report says was running
    try:
        results = measure_protocols(ex, vm=vm, threads=settings.threads, weights=weights)
    except KeyboardInterrupt:
        diag.partial = True
        return ()
    except Exception as err:  # noqa: BLE001 - the ladder's minutes of records are kept
        diag.failures.append(f"protocols: {type(err).__name__}: {last_line(err)}")
        return ()
    diag.protocols = [r.to_dict() for r in results]
    return tuple(results)
