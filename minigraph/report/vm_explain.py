"""``explain`` for a Relax VM executable: the derived graph, the VM's own storage plan beside
minigraph's liveness planner on the same graph (analysis/vm_memory.py), and what became of
every VM builtin (returns text; only the CLI prints).
"""
from __future__ import annotations

from ..analysis.vm_memory import MemoryAgainstPlan, compare_memory
from ..artifacts.liveness import lifetimes
from ..runtime.relax_vm.builtins import ROLES
from ..runtime.relax_vm.derive import Derivation
from ..runtime.storage import plan_storage
from .explain import explain


def _b(nbytes: int) -> str:
    return f"{nbytes:,d} B"


def vm_storage_lines(d: Derivation) -> list[str]:
    """One line per storage the VM allocates: where, how big, which entries over which ops."""
    g = d.graph
    life, plan = lifetimes(g), plan_storage(g)
    lines = []
    for s in d.storages:
        if s.kind not in ("alloc_storage", "to_device"):
            continue
        users = ", ".join(f"e{e}[{life[e][0]}..{life[e][1]}]" for e in plan.entries_of(s.sid))
        size = _b(s.vm_nbytes) if s.vm_nbytes is not None else "(copy)"
        lines.append(f"sid {s.sid:3d}  {s.kind} at instruction {s.pc}: {size:>12}  {users}")
    return lines


def compare_lines(m: MemoryAgainstPlan) -> list[str]:
    """The VM's activation memory against the planner's, on the same derived graph."""
    ratio = f" ({m.planner_nbytes / m.vm_nbytes:.0%} of the VM's)" if m.vm_nbytes else ""
    return [f"  the VM (StaticPlanBlockMemory): {m.vm_storages} storages, {_b(m.vm_nbytes)}",
            f"  minigraph's planner:           {m.planner_storages} storage ids, "
            f"{_b(m.planner_nbytes)}{ratio}",
            f"  one buffer per op output:      {_b(m.naive_nbytes)}"]


def builtin_lines(d: Derivation) -> list[str]:
    counts = d.role_counts()
    return [f"  {role:<8} {counts[role]:>5}  {ROLES[role]}" for role in ROLES if role in counts]


def explain_vm(d: Derivation, source: str) -> str:
    """The whole view: the graph (storage ids are the VM's), the plan comparison, builtins."""
    kernels = sum(1 for n in d.graph.op_nodes() if not n.func_name.startswith("__"))
    out = [f"Relax VM executable {source}: function '{d.function}', {kernels} kernel calls, "
           f"{len(d.builtins)} builtin calls, {len(d.constants)} embedded constants "
           "(params c[k])", "", explain(d.graph), "",
           "the VM's storages (one per alloc_storage that holds a tensor):"]
    out += ["  " + line for line in vm_storage_lines(d)]
    out += ["", "activation memory, the VM's plan vs minigraph's liveness planner on this graph:"]
    out += compare_lines(compare_memory(d))
    out += ["", "VM builtins, by what they became:"] + builtin_lines(d)
    out += [f"note: {n}" for n in d.notes]
    return "\n".join(out)
