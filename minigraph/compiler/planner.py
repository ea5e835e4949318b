"""Liveness-based storage planning: Graph -> storage_id per entry (mirrors TVM's GraphPlanMemory).

Walks the ops in execution order with a reference count per entry. An op's outputs take a free
storage block (best fit by bytes, growing a block when none is big enough); an entry's block is
released when its last reader has run. Graph inputs, params and outputs are never shared, and an
op's inputs are released only after its outputs are assigned, so no kernel reads and writes the
same memory. A ``__nop`` (a view) shares its input's storage instead of taking a block.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..artifacts.dlpack import entry_nbytes
from ..artifacts.graph import Graph

_MATCH_RANGE = 16  # TVM's StorageAllocator reuses a block within a 16x size range


@dataclass(frozen=True)
class MemoryPlan:
    storage_ids: tuple[int, ...]   # per entry id
    pool_nbytes: tuple[int, ...]   # per storage id: the largest entry it holds
    activation_nbytes: int         # planned bytes of the pools that hold op outputs
    naive_nbytes: int              # one buffer per op output entry

    @property
    def saving(self) -> float:
        """Planned activation memory as a fraction of one-buffer-per-entry."""
        return self.activation_nbytes / self.naive_nbytes if self.naive_nbytes else 1.0


class _Allocator:
    def __init__(self) -> None:
        self.sizes: list[int] = []
        self.free: set[int] = set()

    def new(self, nbytes: int) -> int:
        self.sizes.append(nbytes)
        return len(self.sizes) - 1

    def request(self, nbytes: int) -> int:
        fits = [s for s in self.free if self.sizes[s] >= nbytes]
        if fits:
            sid = min(fits, key=lambda s: (self.sizes[s], s))
        else:
            near = [s for s in self.free if self.sizes[s] * _MATCH_RANGE >= nbytes]
            if not near:
                return self.new(nbytes)
            sid = max(near, key=lambda s: (self.sizes[s], -s))
            self.sizes[sid] = nbytes  # grow: the pool is sized by its largest entry
        self.free.discard(sid)
        return sid


def _ref_counts(graph: Graph) -> list[int]:
    refs = [0] * graph.num_entries
    for node in graph.op_nodes():
        for e in node.inputs:
            refs[graph.entry_id(e)] += 1
    for eid in graph.output_entries():
        refs[eid] += 1  # outputs stay live after the run
    return refs


def plan_memory(graph: Graph) -> MemoryPlan:
    """Assigns storage ids; pure, deterministic, and independent of the ids already in graph."""
    nbytes = [entry_nbytes(s, t) for s, t in zip(graph.shapes, graph.dltypes)]
    refs, alloc = _ref_counts(graph), _Allocator()
    sids = [-1] * graph.num_entries
    for nid in graph.arg_nodes:
        sids[graph.eid(nid)] = alloc.new(nbytes[graph.eid(nid)])
    activation: set[int] = set()
    root = list(range(graph.num_entries))  # a __nop view's entry counts against its source's
    for node in graph.op_nodes():
        outs = [graph.eid(node.index, i) for i in range(node.num_outputs)]
        if node.func_name == "__nop" and len(node.inputs) == 1 and len(outs) == 1:
            # a view shares its input's storage (TVM's GraphPlanMemory does the same for
            # reshape-only kernels): its readers keep that storage alive
            src = root[graph.entry_id(node.inputs[0])]
            root[outs[0]], sids[outs[0]] = src, sids[src]
            refs[src] += refs[outs[0]]
            outs = []
        for eid in outs:
            sids[eid] = alloc.request(nbytes[eid])
            activation.add(sids[eid])
        for e in node.inputs:
            eid = root[graph.entry_id(e)]
            refs[eid] -= 1
            if refs[eid] == 0 and sids[eid] in activation:
                alloc.free.add(sids[eid])
        alloc.free.update(sids[eid] for eid in outs if refs[eid] == 0)
    naive = sum(nbytes[graph.eid(n.index, i)] for n in graph.op_nodes()
                for i in range(n.num_outputs))
    return MemoryPlan(tuple(sids), tuple(alloc.sizes),
                      sum(alloc.sizes[s] for s in activation), naive)
