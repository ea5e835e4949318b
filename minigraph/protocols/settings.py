"""The protocols' knobs, defaulting to the values TVM's own entry points used."""
from __future__ import annotations

from dataclasses import dataclass


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
