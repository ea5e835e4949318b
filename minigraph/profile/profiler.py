"""``measure``: one profiling run over every requested mode, in the registry's order.

Counterpart: ``GraphExecutorDebug::Profile`` / ``RunIndividual`` (TVM <= 0.19), which measured
one protocol each; here every mode of modes.py runs on the same bound ops, raw samples kept.
"""
from __future__ import annotations

import time
from typing import Callable

from ..measure import contention
from ..measure.clock import Clock, Progress, no_progress
from ..runtime.executor import Executor
from ..runtime.opinfo import describe_ops
from .model import Profile, Settings
from .modes import MODES
from .samplers import SAMPLERS, Run


def measure(ex: Executor, settings: Settings, *, clock: Clock = time.perf_counter_ns,
            reset: Callable[[], None] = lambda: None,
            progress: Progress = no_progress) -> Profile:
    """Runs every requested mode in the order that keeps first-run honest (it must be first).

    Ctrl-C stops between samples; what was measured so far is returned, marked partial.
    """
    prof = Profile(describe_ops(ex), settings.to_dict())
    run = Run(ex, settings, clock, reset, progress, prof)
    with contention.recorded(prof.contention):
        try:
            for mode in MODES:
                if mode.name in settings.modes:
                    SAMPLERS[mode.name](run)
        except KeyboardInterrupt:
            prof.partial = True
    return prof
