"""Graph -> StoragePlan -> pools and per-entry views (mirrors GraphExecutor::SetupStorage).

One pool per storage_id, sized as the largest byte size of the entries that share it (TVM's
rule), allocated on the device (TVM's CPU allocator aligns to 64 bytes); every entry is a view
of its pool at offset 0 with the entry's own shape and dtype. The plan is checked against the
memory the machine has *before* anything is allocated, so an absurd graph.json is refused
instead of taking the machine down.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..artifacts.dlpack import entry_nbytes
from ..artifacts.graph import Graph
from ..artifacts.graph_checks import entry_owner
from ..errors import GraphError, InputError, KernelError, last_line

# lazy: TVM (~1.2 s to import) and psutil (~40 ms) are imported where they are called;
# TVM-free commands load this module

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


def _owner(graph: Graph, eid: int) -> tuple[int, str]:
    nid = entry_owner(graph.node_row_ptr, eid)
    return nid, graph.nodes[nid].name


def plan_storage(graph: Graph) -> StoragePlan:
    """Sizes one pool per storage_id from graph.json's own storage ids (pure)."""
    sizes: dict[int, int] = {}
    nbytes = tuple(entry_nbytes(s, t) for s, t in zip(graph.shapes, graph.dltypes))
    for eid, sid in enumerate(graph.storage_ids):
        sizes[sid] = max(sizes.get(sid, 0), nbytes[eid])
    if sizes and max(sizes) != len(sizes) - 1:
        # ids may be up to 2**31-1: name the first id past the end, never build range(max)
        eid = next(e for e, s in enumerate(graph.storage_ids) if s >= len(sizes))
        nid, name = _owner(graph, eid)
        raise GraphError(f"storage_id {graph.storage_ids[eid]} leaves gaps: the graph uses "
                         f"{len(sizes)} distinct storage ids, so they must be 0..{len(sizes) - 1}",
                         node_index=nid, node_name=name, field=f"attrs.storage_id[{eid}]")
    return StoragePlan(tuple(sizes[s] for s in range(len(sizes))), graph.storage_ids, nbytes)


def available_nbytes() -> int:
    """Memory the kernel says can be given to this process now without swapping (psutil)."""
    import psutil
    return int(psutil.virtual_memory().available)


def check_fits(plan: StoragePlan, available_nbytes: int, force: bool = False) -> None:
    """Refuses a plan larger than available memory before anything is allocated."""
    if plan.total_nbytes > available_nbytes and not force:
        raise InputError(f"the storage plan needs {plan.total_nbytes / 2**20:,.1f} MiB but only "
                         f"{available_nbytes / 2**20:,.1f} MiB are available; check the shapes in "
                         "graph.json (`minigraph explain` lists them) or pass --force")


def allocate(graph: Graph, plan: StoragePlan, device) -> tuple[tuple, tuple]:
    """Allocates the pools on device and returns (pools, views): one view per entry."""
    import tvm
    pools = []
    for sid, n in enumerate(plan.pool_nbytes):
        try:
            pools.append(tvm.runtime.empty((max(n, 1),), "uint8", device))
        except Exception as err:  # TVM turns std::bad_alloc and size overflow into its errors
            raise KernelError(f"cannot allocate storage_id {sid} ({n / 2**20:,.1f} MiB of a "
                              f"{plan.total_nbytes / 2**20:,.1f} MiB plan): {last_line(err)}; "
                              "check the shapes in graph.json") from None
    views = tuple(pools[sid]._create_view(shape, dtype)
                  for sid, shape, dtype in zip(plan.entry_sid, graph.shapes, graph.dltypes))
    return tuple(pools), views
