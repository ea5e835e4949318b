"""One measuring session over a model's files: what ``minigraph profile`` and ``minigraph
diagnose`` (locally and in a remote device's job) both open before they measure, and close
with after.

Order matters: the run context (threadpool/request.py ``ThreadRequest``, resolved here, where
every profile and diagnosis starts) is applied to TVM's pool before anything else touches TVM;
the environment's slow parts are read while the model opens, and joined before anything is
timed; the model opens through its door; every arg node gets its value (weights nobody gave
are refused, or filled as ``--fill`` says: values/policy.py); the provenance names the files
that ran. While measuring, SIGTERM is taken as Ctrl-C (``measuring``), so what was measured is
kept, marked partial. After the timed part, ``data`` runs the data check (one checked run)
and what reading subnormal values costs each op: after, so that it never warms what a first
run sees.

It lives in values/ because this is the lowest room that can both open a model (runtime/)
and give it its values; profile/ and diagnose/, one layer up side by side, both use it and
neither imports the other. Counterpart: what a script did around ``graph_executor.create`` +
``load_params`` + ``set_input`` before calling ``debug_executor.profile()``.
"""
from __future__ import annotations

import time
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from ..artifacts.model_files import ModelFiles
from ..measure.environment import capture_env, environment_soon
from ..measure.interrupt import terminate_as_interrupt
from ..measure.provenance import capture
from ..runtime.doors import open_model
from ..runtime.opened import OpenedModel
from ..threadpool.config import place_threads
from ..threadpool.request import ThreadRequest
from .check import check_values
from .cost import measure_costs
from .policy import prepare_values


@dataclass(frozen=True)
class Session:
    """An opened model with its values set, in a process whose TVM pool was sized (and
    placed, when asked: threadpool/config.py ``place_threads``) before TVM ran anything."""

    model: OpenedModel
    threads: ThreadRequest          # the run context, resolved: its worker count is set
    inputs: frozenset[str]          # the arg nodes that are the model's inputs (policy.py)
    fill: str | None                # --fill as given (policy.py), recorded with the data
    provenance: dict                # {} when no command was given
    placed: Callable[[], dict]      # the pool's placement, read back from /proc once it exists
    slow_env: dict                  # capture_env's slow parts, read while the model opened

    def environment(self) -> dict:
        """The environment now (measure/environment.py), its slow parts read at the opening."""
        return capture_env(**self.slow_env)

    def measuring(self) -> AbstractContextManager[None]:
        """Around the measuring: SIGTERM raises KeyboardInterrupt, as Ctrl-C does."""
        return terminate_as_interrupt()

    def data(self) -> dict:
        """The data check (one checked run) and what reading subnormal values costs each op
        that does, as a DataReport's dict: called after the timed part."""
        ex = self.model.executor
        report, captured = check_values(ex, self.inputs, run=True)
        costs = measure_costs(ex, report, captured, time.perf_counter_ns)
        return replace(report, costs=costs, fill=self.fill).to_dict()


def open_session(files: ModelFiles, req: ThreadRequest, *, force: bool = False,
                 symbols: dict[str, int] | None = None,
                 inputs: dict[str, np.ndarray] | None = None, fill: str | None = None,
                 seed: int = 0, command: list[str] | None = None) -> Session:
    """Places the pool as ``req`` asks (resolved here), opens the model (``symbols``: a Relax
    VM function's sizes, else read from the shapes of ``inputs``), gives every arg node its
    value (``inputs`` by name, the others seeded with ``seed``; ``fill``: weights nobody gave)
    and, given the ``command``, records the provenance."""
    req = req.resolved()
    placed = place_threads(req)
    soon = environment_soon()  # read while the model opens, never beside a measurement
    model = open_model(files, force=force, complete=False, symbols=symbols, inputs=inputs)
    # joined now, not just before measuring: a joined thread may still be a task of this
    # process for a moment, and one ending inside first-run's op 0 would hide the thread
    # TVM's pool creates there (first-run counts the process's threads around each op)
    slow_env = soon()
    names = prepare_values(model, inputs, fill, seed)  # refuses unset weights without --fill
    provenance = {} if command is None else capture(
        {"lib": model.files.lib, "graph": files.graph, "params": files.params}, command)
    return Session(model, req, names, fill, provenance, placed, slow_env)
