"""The Relax VM's own numbers beside a profile of the same executable (returns text).

For a model that came in through the relax-vm door: ``time_evaluator`` on the VM function
against minigraph's e2e run, the cost of each side's measuring machinery per op (minigraph's
run loop with no-op kernels vs the VM's ``set_instrument`` callback), and per op the VM's
instrumented window beside minigraph's in-run and warm medians.
"""
from __future__ import annotations

from typing import Sequence

from ..measure.stats import Stats
from ..results.modes import ModeName
from ..results.profile import Profile
from ..results.protocols import ProtocolResult
from .units import format_table, us


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.3f}" if a and b else "-"


def _by_key(results: Sequence[ProtocolResult], key: str) -> ProtocolResult | None:
    return next((r for r in results if r.key == key and not r.skipped), None)


def vm_summary(prof: Profile, results: Sequence[ProtocolResult]) -> list[str]:
    """Two comparison lines: whole-run time and the measuring machinery's per-op cost."""
    e2e = Stats.of(prof.e2e_ns).median_ns if prof.e2e_ns else None
    te = _by_key(results, "relax_vm_e2e")
    vm_e2e = Stats.of(te.samples_ns).median_ns if te else None
    lines = [f"  e2e: minigraph run() median {us(e2e, 2)} us, VM time_evaluator median "
             f"{us(vm_e2e, 2)} us; minigraph/VM = {_ratio(e2e, vm_e2e)}"]
    over = prof.executor_overhead_ns()
    per_op = over / len(prof.ops) if over is not None and prof.ops else None
    inst = _by_key(results, "relax_vm_instrument")
    cb = inst.overhead_ns if inst else None
    lines.append(f"  per-op measuring cost: minigraph run loop {us(per_op, 2)} us per op "
                 f"(no-op kernels), VM set_instrument at least {us(cb, 2)} us per call "
                 f"instruction (one callback, calls skipped); minigraph/VM <= "
                 f"{_ratio(per_op, cb)}")
    return lines


def format_vm_section(prof: Profile, results: Sequence[ProtocolResult]) -> str:
    """The whole section: summary lines, per-op table, then each protocol's notes."""
    out = ["Relax VM on the same executable (TVM 0.27's own measurements):"]
    out += vm_summary(prof, results)
    inst = _by_key(results, "relax_vm_instrument")
    if inst is not None and inst.per_op_ns is not None:
        head = ["Name", "in-run (us)", "warm (us)", "VM instrument (us)"]
        body = [[op["name"], us(prof.median(ModeName.IN_RUN, i)), us(prof.median(ModeName.WARM, i)),
                 us(inst.per_op_ns[i] if i < len(inst.per_op_ns) else None)]
                for i, op in enumerate(prof.ops)]
        out += ["", format_table(head, body)]
    for r in results:
        out.append(f"  {r.key}: {r.description}")
        out += [f"    note: {n}" for n in r.notes]
    return "\n".join(out)
