"""One model, one set of kernels, every measuring protocol TVM ever shipped, side by side.

TVM's profilers disagree because each measures something different. This runs each historical
protocol on minigraph's bound ops (graph_era.py) and, where there is one, on TVM 0.27's own
Relax VM over ``model.vm.so`` (relax_vm.py), and returns per-op and total numbers, so a report
(report/protocols.py, report/diagnosis.py) can show *why*.
"""
from __future__ import annotations

import time
from typing import Callable, Sequence

from ..errors import InputError
from ..measure.clock import Clock
from ..results.protocols import KEYS, NO_PARAMS, VM_KEYS, ProtocolResult, skipped
from ..runtime.debug import DebugExecutor
from ..runtime.opened import VmReference
from .graph_era import (
    benchmark_e2e,
    debug_profile,
    debug_profile_no_params,
    pool_reset,
    run_individual,
    vm_profiler,
)
from .relax_vm import measure_vm
from .settings import ProtocolSettings


def measure_protocols(ex: DebugExecutor, *, vm: VmReference, threads: int,
                      keys: Sequence[str] = KEYS, clock: Clock = time.perf_counter_ns,
                      reset: Callable[[], None] | None = None,
                      settings: ProtocolSettings = ProtocolSettings(),
                      weights: Sequence[str] | None = None) -> tuple[ProtocolResult, ...]:
    """Runs the requested protocols in ``KEYS`` order on ``ex`` (inputs already set).

    ``reset`` defaults to ``pool_reset(threads)``; ``vm``: what TVM's own Relax VM protocols
    run on (runtime/opened.py: skipped, with a note, when its executable is None or missing);
    ``weights``: the arg nodes that are weights, for the debug executor that never got them
    (default: those bound from params; skipped if none)."""
    unknown = [k for k in keys if k not in KEYS]
    if unknown:
        raise InputError(f"unknown protocol(s) {unknown}; expected some of {list(KEYS)}")
    reset = reset if reset is not None else pool_reset(threads)
    if weights is None:
        weights = [n for n, s in ex.sources.items() if s.kind == "params"]
    local = {KEYS[0]: lambda: debug_profile(ex, settings, clock, reset),
             KEYS[1]: lambda: vm_profiler(ex, settings, clock, reset),
             KEYS[2]: lambda: run_individual(ex, settings, clock),
             KEYS[3]: lambda: benchmark_e2e(ex, settings, clock),
             NO_PARAMS: lambda: debug_profile_no_params(ex, settings, clock, reset, weights)
             if weights else skipped(NO_PARAMS, "the model has no weights to leave unset")}
    vm_keys = [k for k in VM_KEYS if k in keys]
    out: list[ProtocolResult] = []
    for k in (k for k in KEYS if k in keys):  # in KEYS order: the VM's pair after the graph's
        if k in local:
            out.append(local[k]())
        elif k == vm_keys[0]:
            out += measure_vm(ex, vm, vm_keys, settings, clock)
    return tuple(out)


