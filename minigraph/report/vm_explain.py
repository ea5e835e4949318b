"""``explain`` for a Relax VM executable: the derived graph, the VM's own storage plan beside
minigraph's liveness planner (build/planner.py) on the same graph, and what became of every
VM builtin (returns text; only the CLI prints).
"""
from __future__ import annotations

from ..artifacts.graph import Graph
from ..artifacts.liveness import lifetimes
from ..compiler.planner import MemoryPlan, plan_memory
from ..runtime.relax_vm.builtins import ROLES
from ..runtime.relax_vm.derive import Derivation
from ..runtime.storage import plan_storage
from .explain import explain


def _b(nbytes: int) -> str:
    return f"{nbytes:,d} B"


def _activation_sids(graph: Graph) -> set[int]:
    args = {graph.storage_ids[graph.eid(n)] for n in graph.arg_nodes}
    return {graph.storage_ids[e] for e in range(graph.num_entries)} - args


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


def compare_lines(d: Derivation, planned: MemoryPlan) -> list[str]:
    """The VM's activation memory against the planner's, on the same derived graph."""
    g = d.graph
    vm_sids = _activation_sids(g)
    pools = plan_storage(g).pool_nbytes
    vm_bytes = sum(s.vm_nbytes or pools[s.sid] for s in d.storages if s.sid in vm_sids)
    args = {planned.storage_ids[g.eid(n)] for n in g.arg_nodes}
    ours = set(planned.storage_ids) - args
    ratio = f" ({planned.activation_nbytes / vm_bytes:.0%} of the VM's)" if vm_bytes else ""
    return [f"  the VM (StaticPlanBlockMemory): {len(vm_sids)} storages, {_b(vm_bytes)}",
            f"  minigraph's planner:           {len(ours)} storage ids, "
            f"{_b(planned.activation_nbytes)}{ratio}",
            f"  one buffer per op output:      {_b(planned.naive_nbytes)}"]


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
    out += compare_lines(d, plan_memory(d.graph))
    out += ["", "VM builtins, by what they became:"] + builtin_lines(d)
    out += [f"note: {n}" for n in d.notes]
    return "\n".join(out)
