"""Test clocks: injected into the profiler and protocols so that timing tests are exact."""
from __future__ import annotations

import itertools


class StepClock:
    """Advances a fixed step per reading: every timed region between two readings is `step` ns."""

    def __init__(self, step: int = 1000) -> None:
        self.counter = itertools.count(0, step)

    def __call__(self) -> int:
        return next(self.counter)
