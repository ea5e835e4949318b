"""One ``minigraph diagnose`` of a model's files, start to finish: the fresh-process ladder,
then TVM's protocols side by side on the same kernels. What the CLI and a remote device's job
both run, so a diagnosis taken on a device is taken exactly as a local one.

The model is opened, its pool sized and its values set by the session profile shares
(values/session.py): it validates everything before any worker starts. The ladder comes first
and owns the machine (its fresh processes must not compete with this one); the protocols then
run here, on the same pool size. Ctrl-C or SIGTERM at any point keeps what was measured, marked
partial; a protocol that fails never costs the ladder's records.
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
from ..measure.inflight import FLIGHT
from ..protocols.measure import measure_protocols
from ..results.attribution import Attribution
from ..results.diagnosis import Diagnosis
from ..results.protocols import ProtocolResult
from ..runtime.doors import ModelFiles, vm_reference
from ..runtime.opinfo import describe_ops
from ..threadpool.request import ThreadRequest
from ..values.inputs import read_inputs
from ..values.session import Session, open_session
from .attribution import attribution_of
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
    given = read_inputs([f"{n}={p}" for n, p in (inputs or {}).items()], files)
    # the protocols use the same pool size as every worker
    session = open_session(files, ThreadRequest(threads=settings.threads), force=force,
                           symbols=settings.shapes, inputs=given, fill=settings.fill,
                           seed=settings.seed, command=command)
    model = session.model
    settings = replace(settings, threads=session.threads.threads)
    if model.derivation is not None and model.derivation.sizes:  # every worker: these sizes
        settings = replace(settings, shapes=dict(model.derivation.sizes))
    diag = Diagnosis(describe_ops(model.executor), settings.to_dict())
    diag.provenance = session.provenance
    results: tuple[ProtocolResult, ...] = ()
    with session.measuring():
        run_ladder(diag, files, settings, progress=progress, debug=debug, inputs=inputs,
                   first_round=_estimator(diag, settings, protocols, on_estimate, started))
        att = attribution_of(diag)
        if protocols and not diag.partial:
            results = _protocols(diag, session, settings, vm_lib)
        if not diag.partial:
            diag.data = session.data()
    diag.env = session.environment()
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


def _protocols(diag: Diagnosis, session: Session, settings: DiagnoseSettings,
               vm_lib: os.PathLike | None) -> tuple[ProtocolResult, ...]:
    """TVM's protocols on this process's executor, recorded into ``diag``."""
    ex = session.model.executor
    vm = vm_reference(session.model)
    if vm_lib is not None:  # another directory's executable, with its own build.json
        vm = replace(vm, lib=vm_lib, build=read_build(vm_lib))
    weights = [n for n in ex.input_names() if n not in session.inputs and
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
