"""The protocols' knobs, defaulting to the values TVM's own entry points used."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class ProtocolSettings:
    """Knobs, defaulting to the values TVM's own entry points used."""

    profile_warmups: int = 3        # GraphExecutorDebug::Profile
    vm_profiler_warmups: int = 1    # VirtualMachineProfiler "profile"
    ri_number: int = 10             # debug_executor.run() -> run_individual
    ri_repeat: int = 1
    ri_min_repeat_ms: int = 1
    bench_number: int = 5           # GraphModule.benchmark
    bench_repeat: int = 5
    vm_number: int = 5              # vm.time_evaluator on main (same budget as benchmark)
    vm_repeat: int = 5
    vm_warmups: int = 1             # relax_vm_instrument
    vm_passes: int = 3

    def full_runs(self) -> int:
        """Full runs of the model all the protocols take, warm-ups and untimed first calls
        included (diagnose's time hint multiplies it by the model's steady time)."""
        return ((self.profile_warmups + 1) * 2          # debug_executor.profile, no params
                + self.vm_profiler_warmups + 1 + 1      # vm_profiler; run_individual's run
                + self.bench_number * self.bench_repeat + 1
                + self.vm_number * self.vm_repeat + 1
                + self.vm_warmups + self.vm_passes)

    def individual_ns(self, op_ns: Sequence[float]) -> float:
        """What run_individual's time_evaluator takes over ops of these steady times: per op
        an untimed call, then per repeat ``ri_number`` calls, timed again with ``number``
        grown past min_repeat_ms when they were shorter (TVM's WrapTimeEvaluator)."""
        floor_ns = self.ri_min_repeat_ms * 1e6
        return sum(t + self.ri_repeat * (self.ri_number * t + (
            floor_ns + t if self.ri_number * t < floor_ns else 0.0)) for t in op_ns)
