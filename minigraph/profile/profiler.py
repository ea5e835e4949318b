"""``measure``: one profiling run over every requested mode, in the registry's order.

Counterpart: ``GraphExecutorDebug::Profile`` / ``RunIndividual`` (TVM <= 0.19), which measured
one protocol each; here every mode of modes.py runs on the same bound ops, raw samples kept.
"""
from __future__ import annotations

import time
from typing import Callable

from ..errors import MinigraphError, last_line
from ..measure import contention
from ..measure.clock import Clock, Progress, no_progress
from ..runtime.executor import Executor
from ..runtime.opinfo import describe_ops
from .model import Profile, Settings
from .modes import MODES
from .samplers import SAMPLERS, Run


class MeasurementError(MinigraphError):
    """A mode failed part-way; ``profile`` holds what was measured before it (partial), so the
    caller can still save and show it before reporting the error."""

    def __init__(self, message: str, profile: Profile) -> None:
        super().__init__(message)
        self.profile = profile


def measure(ex: Executor, settings: Settings, *, clock: Clock = time.perf_counter_ns,
            reset: Callable[[], None] = lambda: None,
            progress: Progress = no_progress) -> Profile:
    """Runs every requested mode in the order that keeps first-run honest (it must be first).

    Ctrl-C stops between samples; what was measured so far is returned, marked partial. A mode
    that fails raises MeasurementError carrying the partial profile: nothing measured is lost.
    """
    prof = Profile(describe_ops(ex), settings.to_dict())
    run = Run(ex, settings, clock, reset, progress, prof)
    failed: tuple[str, Exception] | None = None
    with contention.recorded(prof.contention):
        for mode in (m.name for m in MODES if m.name in settings.modes):
            try:
                SAMPLERS[mode](run)
            except KeyboardInterrupt:
                prof.partial = True
                break
            except Exception as err:  # noqa: BLE001 - re-raised below, with what was measured
                prof.partial, failed = True, (mode, err)
                break
    if failed is not None:
        mode, err = failed
        prof.samples.pop(mode, None)  # a mode cut short is not a mode measured
        raise MeasurementError(f"{mode} mode failed: {last_line(err)}; the modes measured "
                               "before it are kept, marked partial", prof) from err
    return prof
