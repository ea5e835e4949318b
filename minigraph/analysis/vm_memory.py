"""A Relax VM executable's activation memory against minigraph's liveness planner, on the same
derived graph: what ``explain`` says of the VM's storage plan.

The VM's plan is its bytecode's (TVM's ``StaticPlanBlockMemory``: one ``alloc_storage`` per
storage, derived by runtime/relax_vm/derive.py); the planner's is compiler/planner.py's
(TVM's ``GraphPlanMemory``) run on the derived graph. Counterpart: none in TVM (the two
planners never meet there: one belongs to Relax, the other to the graph executor).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..artifacts.graph import Graph
from ..compiler.planner import plan_memory
from ..runtime.relax_vm.derive import Derivation
from ..runtime.storage import plan_storage


@dataclass(frozen=True)
class MemoryAgainstPlan:
    """Activation storages (not inputs or params) and their bytes, by each plan."""

    vm_storages: int
    vm_nbytes: int
    planner_storages: int
    planner_nbytes: int
    naive_nbytes: int        # one buffer per op output


def _activation_sids(graph: Graph) -> set[int]:
    args = {graph.storage_ids[graph.eid(n)] for n in graph.arg_nodes}
    return {graph.storage_ids[e] for e in range(graph.num_entries)} - args


def compare_memory(d: Derivation) -> MemoryAgainstPlan:
    """The VM's activation memory against the planner's, on the same derived graph."""
    g = d.graph
    vm_sids = _activation_sids(g)
    pools = plan_storage(g).pool_nbytes
    vm_bytes = sum(s.vm_nbytes or pools[s.sid] for s in d.storages if s.sid in vm_sids)
    planned = plan_memory(g)
    args = {planned.storage_ids[g.eid(n)] for n in g.arg_nodes}
    return MemoryAgainstPlan(len(vm_sids), vm_bytes, len(set(planned.storage_ids) - args),
                            planned.activation_nbytes, planned.naive_nbytes)
