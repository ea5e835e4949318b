"""``measure``: one profiling run over every requested mode, in the registry's order.

Counterpart: ``GraphExecutorDebug::Profile`` / ``RunIndividual`` (TVM <= 0.19), which measured
one protocol each; here every mode of modes.py runs on the same bound ops, raw samples kept.
"""
from __future__ import annotations

import time
from dataclasses import fields
from typing import Any, Callable, Sequence

from ..errors import InputError, MinigraphError, last_line
from ..measure import contention, speed
from ..measure.clock import Clock, Progress, no_progress
from ..measure.environment import capture_env, llc_bytes
from ..measure.inflight import FLIGHT
from ..results.modes import MODES, NAMES, ModeName
from ..results.profile import Profile, Settings
from ..runtime.debug import DebugExecutor
from ..runtime.opinfo import describe_ops
from ..threadpool.config import place_threads, pool_reset
from ..threadpool.request import ThreadRequest
from .samplers import SAMPLERS, Run


class MeasurementError(MinigraphError):
    """A mode failed part-way; ``profile`` holds what was measured before it (partial), so the
    caller can still save and show it before reporting the error."""

    def __init__(self, message: str, profile: Profile) -> None:
        super().__init__(message)
        self.profile = profile


def measure(ex: DebugExecutor, settings: Settings, *, clock: Clock = time.perf_counter_ns,
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
        for mode in _first_of_each_sampler(settings.modes):
            FLIGHT.phase(f"the {mode} mode")  # what a crash report says was running
            try:
                if mode != ModeName.FIRST_RUN:  # first-run must find the process as it started
                    speed.record(prof.speed, f"before {mode}")
                SAMPLERS[mode](run)
            except KeyboardInterrupt:
                prof.partial = True
                break
            except Exception as err:  # noqa: BLE001 - re-raised below, with what was measured
                prof.partial, failed = True, (mode, err)
                break
        if not prof.partial:
            speed.record(prof.speed, "end")
    if failed is not None:
        mode, err = failed
        prof.samples.pop(mode, None)  # a mode cut short is not a mode measured
        raise MeasurementError(f"{mode} mode failed: {last_line(err)}; the modes measured "
                               "before it are kept, marked partial", prof) from err
    return prof


def _first_of_each_sampler(modes: Sequence[str]) -> list[str]:
    """The requested modes in measuring order, one per sampler: modes measured together
    (in-run and e2e, interleaved) are sampled once, at the first of them."""
    out, seen = [], set()
    for mode in (m.name for m in MODES if m.name in modes):
        if SAMPLERS[mode] not in seen:
            seen.add(SAMPLERS[mode])
            out.append(mode)
    return out


def profile(ex: DebugExecutor, modes: Sequence[str] | None = None, *, threads: int | None = None,
            progress: Progress = no_progress, clock: Clock = time.perf_counter_ns,
            **settings: Any) -> Profile:
    """``minigraph profile`` from Python (notebooks, scripts): every requested mode on ``ex``
    (inputs as set), with the environment and the thread pool's real placement recorded.

    ``settings`` are ``Settings`` fields (``warmups``, ``warm_repeat``, ``warm_precision``,
    ``warm_budget_ms``, ``inrun_passes``, ``cold_repeat``, ``flush``, ``e2e_repeat``, ...).
    ``threads`` (default: threadpool/request.py ``resolved``, as the CLI's) sets
    TVM_NUM_THREADS, which TVM reads once, when the pool is created: if the
    model already ran a parallel kernel in this process, the existing pool stays as it is (the
    profile's ``threads`` report says what TVM really used). Likewise first-run is a first run
    only if nothing ran this model's kernels before in this process.
    Counterpart: ``debug_executor.create(...).profile()`` returning a ``Report``."""
    _check_options(modes, settings)
    req = ThreadRequest(threads=threads).resolved()
    placed = place_threads(req)
    env = capture_env()
    s = Settings(modes=tuple(modes or NAMES), **{"flush_nbytes": 2 * llc_bytes(env), **settings})
    prof = measure(ex, s, clock=clock, reset=pool_reset(req.threads), progress=progress)
    prof.env, prof.threads = env, placed()
    return prof


def _check_options(modes: Sequence[str] | None, settings: dict) -> None:
    """InputError naming every unknown mode or setting, and the valid ones."""
    names = [f.name for f in fields(Settings) if f.name not in ("modes", "flush_nbytes")]
    wrong = [f"setting {k!r}" for k in settings if k not in names + ["flush_nbytes"]]
    wrong += [f"mode {m!r}" for m in modes or () if m not in NAMES]
    if wrong:
        raise InputError(f"profile: unknown {', '.join(wrong)}; modes: {', '.join(NAMES)}; "
                         f"settings: {', '.join(names)}")
