"""measure/clock.py ``sliced``: a long time_evaluator batch taken in native calls of about
SLICE_S each, so Ctrl-C and SIGTERM are taken between them (issue 49 item 4: one call of a
billion repeats ran 12 minutes, deaf to SIGTERM); an interrupt keeps the samples taken."""
from __future__ import annotations

import pytest

from minigraph.measure.clock import sliced


class FakeKernel:
    """take(k): k samples, each repeat costing ``repeat_s`` of a fake wall clock."""

    def __init__(self, repeat_s: float, stop_after: int | None = None) -> None:
        self.now, self.repeat_s, self.calls, self.stop_after = 0.0, repeat_s, [], stop_after

    def wall(self) -> float:
        return self.now

    def take(self, k: int) -> list[float]:
        if self.stop_after is not None and len(self.calls) == self.stop_after:
            raise KeyboardInterrupt("signal 15")
        self.calls.append(k)
        self.now += k * self.repeat_s
        return [self.repeat_s * 1e9] * k


def test_each_native_call_lasts_about_a_slice() -> None:
    kernel = FakeKernel(repeat_s=0.002)  # time_evaluator's min_repeat_ms: 2 ms a repeat
    out, per_call = sliced(kernel.take, 1000, first=1, slice_s=0.1, wall=kernel.wall)
    assert len(out) == 1000 and kernel.calls[0] == 1 and per_call == 50
    assert max(kernel.calls) * 0.002 <= 0.1 + 1e-9 and sum(kernel.calls) == 1000
    # the next batch starts at the rate learned; a short batch is one call, as before slicing
    kernel.calls.clear()
    out, _ = sliced(kernel.take, 7, first=per_call, slice_s=0.1, wall=kernel.wall)
    assert kernel.calls == [7] and len(out) == 7


def test_a_slow_kernel_is_called_one_repeat_at_a_time() -> None:
    kernel = FakeKernel(repeat_s=0.5)
    out, per_call = sliced(kernel.take, 4, first=1, slice_s=0.1, wall=kernel.wall)
    assert kernel.calls == [1, 1, 1, 1] and per_call == 1 and len(out) == 4


def test_an_interrupt_carries_the_samples_taken_before_it() -> None:
    kernel = FakeKernel(repeat_s=0.002, stop_after=3)
    with pytest.raises(KeyboardInterrupt) as info:
        sliced(kernel.take, 1000, first=1, slice_s=0.1, wall=kernel.wall)
    assert len(info.value.samples) == sum(kernel.calls) == 101  # 1 + 50 + 50
