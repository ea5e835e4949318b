"""Graph -> StoragePlan -> pools and per-entry views (mirrors GraphExecutor::SetupStorage).

One pool per storage_id, sized as the largest byte size of the entries that share it (TVM's
rule), allocated on the device (TVM's CPU allocator aligns to 64 bytes); every entry is a view
of its pool at offset 0 with the entry's own shape and dtype.
"""
from __future__ import annotations

from dataclasses import dataclass

from .dtypes import entry_nbytes
from .errors import GraphError, InputError
from .graph import Graph

ALIGNMENT = 64  # bytes; TVM's kAllocAlignment on CPU


@dataclass(frozen=True)
class StoragePlan:
    pool_nbytes: tuple[int, ...]     # per storage_id
    entry_sid: tuple[int, ...]       # per entry id
    entry_nbytes: tuple[int, ...]    # per entry id

    @property
    def total_nbytes(self) -> int:
        return sum(self.pool_nbytes)

    def entries_of(self, sid: int) -> tuple[int, ...]:
        return tuple(e for e, s in enumerate(self.entry_sid) if s == sid)


def plan_storage(graph: Graph) -> StoragePlan:
    """Sizes one pool per storage_id from graph.json's own storage ids (pure)."""
    sizes: dict[int, int] = {}
    nbytes = tuple(entry_nbytes(s, t) for s, t in zip(graph.shapes, graph.dltypes))
    for eid, sid in enumerate(graph.storage_ids):
        sizes[sid] = max(sizes.get(sid, 0), nbytes[eid])
    if sizes and sorted(sizes) != list(range(len(sizes))):
        missing = sorted(set(range(max(sizes) + 1)) - set(sizes))
        raise GraphError(f"storage ids must be 0..{len(sizes) - 1} without gaps; "
                         f"missing {missing[:5]}", field="attrs.storage_id")
    return StoragePlan(tuple(sizes[s] for s in range(len(sizes))), graph.storage_ids, nbytes)


def check_fits(plan: StoragePlan, available_nbytes: int, force: bool = False) -> None:
    """Refuses a plan larger than available memory before anything is allocated."""
    if plan.total_nbytes > available_nbytes and not force:
        raise InputError(f"the storage plan needs {plan.total_nbytes / 2**20:.1f} MiB but only "
                         f"{available_nbytes / 2**20:.1f} MiB are available; check the shapes in "
                         "graph.json or pass --force")


def allocate(graph: Graph, plan: StoragePlan, device) -> tuple[tuple, tuple]:
    """Allocates the pools on device and returns (pools, views): one view per entry."""
    import tvm
    pools = tuple(tvm.runtime.empty((max(n, 1),), "uint8", device) for n in plan.pool_nbytes)
    views = tuple(pools[sid]._create_view(shape, dtype)
                  for sid, shape, dtype in zip(plan.entry_sid, graph.shapes, graph.dltypes))
    return pools, views
