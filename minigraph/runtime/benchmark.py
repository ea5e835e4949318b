"""``GraphModule.benchmark`` on the debug executor: time_evaluator's loop over ``run``, its result.

Counterparts: ``GraphModule.benchmark`` (python/tvm/contrib/graph_executor.py, v0.16), which
called ``Module.time_evaluator`` ("run", or "run_from_inputs" with ``end_to_end``) and
returned ``tvm.runtime.module.BenchmarkResult`` (still shipped by TVM 0.27). The loop itself is
``measure.clock.time_repeats`` (WrapTimeEvaluator's, in Python); the result is TVM's own class,
so ``.mean .median .max .min .std .results`` and its printed summary are TVM's.
"""
from __future__ import annotations

import functools
import time
from typing import Callable, Mapping, Protocol

from ..artifacts.dlpack import KDLCPU
from ..errors import InputError
from ..measure.clock import Clock, time_repeats

# lazy: TVM (~1.2 s to import) is imported where it is called; TVM-free commands load this module


class Runnable(Protocol):
    """What the benchmark loop needs of an executor (runtime/executor.py ``Executor``: it reads
    only GraphModule's API)."""

    device: object

    def run(self) -> None: ...

    def set_input(self, key=None, value=None, **params) -> None: ...

    def as_input(self, name, value, eid: int): ...

    def entry_of(self, key: str | int) -> int: ...

    def get_output(self, index: int): ...

    def get_num_outputs(self) -> int: ...


class _ResultList:
    """Makes TVM's ``BenchmarkResult`` (seconds per run, one result per repeat) also behave as
    the list of those results that ``Executor.benchmark`` returned before it matched TVM, so
    ``res[0]``, ``len(res)`` and ``statistics.median(res)`` keep working."""

    results: list

    def __len__(self) -> int:
        return len(self.results)

    def __getitem__(self, i):
        return self.results[i]

    def __iter__(self):
        return iter(self.results)


@functools.lru_cache(maxsize=1)
def result_class() -> type:
    """``BenchmarkResult``: TVM's class with the list behaviour. Made on first use, because
    importing TVM takes seconds and most commands (show, compare, explain) never need it."""
    from tvm.runtime.module import BenchmarkResult as TVMBenchmarkResult

    class BenchmarkResult(_ResultList, TVMBenchmarkResult):
        __doc__ = _ResultList.__doc__
    return BenchmarkResult


def _check_device(device, ex: Runnable) -> None:
    if device is None:
        return
    kind = getattr(device, "device_type", getattr(device, "dlpack_device_type", lambda: None))
    kind = kind() if callable(kind) else kind
    if kind is not None and int(kind) != KDLCPU:
        raise InputError(f"benchmark: minigraph's executor runs on the CPU; got device {device} "
                         f"(use tvm.cpu(), the executor's device {ex.device})")


def _end_to_end_step(ex: Runnable, inputs: Mapping) -> Callable[[], object]:
    """GraphExecutor's ``run_from_inputs``: copy the given inputs in, run, copy every output
    out to a new host array."""
    host = {name: ex.as_input(name, value, ex.entry_of(name)) for name, value in inputs.items()}

    def step() -> list:
        ex.set_input(**host)
        ex.run()
        return [ex.get_output(i).numpy() for i in range(ex.get_num_outputs())]
    return step


def benchmark(ex: Runnable, device=None, func_name: str = "run", *, repeat: int = 5,
              number: int = 5, min_repeat_ms: float | None = None,
              limit_zero_time_iterations: int = 100, end_to_end: bool = False,
              cooldown_interval_ms: float = 0, repeats_to_cooldown: int = 1,
              inputs: Mapping | None = None, clock: Clock):
    """``GraphModule.benchmark`` with an injectable clock (``DebugExecutor.benchmark`` is the
    public face). Without ``end_to_end``, ``inputs`` are set once before timing; with it they are
    copied in on every run and the outputs copied out, as TVM's ``run_from_inputs`` did.
    Unlike TVM, the cooldown also applies with ``end_to_end`` (TVM silently dropped it)."""
    _check_device(device, ex)
    if not end_to_end and func_name != "run":
        raise InputError(f"benchmark: func_name {func_name!r}: the executor's only timed "
                         "function is 'run' (GraphModule's other functions take arguments)")
    if repeat < 1 or number < 1 or repeats_to_cooldown < 1:
        raise InputError(f"benchmark: repeat, number and repeats_to_cooldown must be >= 1, got "
                         f"{repeat}, {number}, {repeats_to_cooldown}")
    inputs = dict(inputs or {})
    if end_to_end:
        step = _end_to_end_step(ex, inputs)
    else:
        if inputs:
            ex.set_input(**inputs)
        step = ex.run
    step()  # untimed first call, as time_evaluator does
    return result_class()(time_repeats(
        step, number, repeat, 0 if min_repeat_ms is None else min_repeat_ms, clock,
        limit_zero_time_iterations=limit_zero_time_iterations,
        cooldown_interval_ms=cooldown_interval_ms, repeats_to_cooldown=repeats_to_cooldown))


def graph_module_benchmark(self: Runnable, device=None, func_name: str = "run",
                           repeat: int = 5, number: int = 5,
                           min_repeat_ms: float | None = None,
                           limit_zero_time_iterations: int = 100, end_to_end: bool = False,
                           cooldown_interval_ms: float = 0, repeats_to_cooldown: int = 1,
                           **kwargs):
    """GraphModule.benchmark, same signature and defaults: ``repeat`` results, each the mean
    run time (seconds) over ``number`` runs, after an untimed first run; returns TVM's
    ``BenchmarkResult`` (``.mean .median .max .min .std .results``). ``kwargs`` are inputs:
    set once, or with ``end_to_end`` copied in on every run with the outputs copied out (as
    TVM's ``run_from_inputs``). ``device`` may be omitted (the executor's own CPU). The
    DebugExecutor's ``benchmark`` method (runtime/debug.py), with the wall clock."""
    return benchmark(self, device, func_name, repeat=repeat, number=number,
                     min_repeat_ms=min_repeat_ms,
                     limit_zero_time_iterations=limit_zero_time_iterations,
                     end_to_end=end_to_end, cooldown_interval_ms=cooldown_interval_ms,
                     repeats_to_cooldown=repeats_to_cooldown, inputs=kwargs,
                     clock=time.perf_counter_ns)
