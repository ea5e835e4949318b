"""Entry lifetimes, and the storage plan's one rule: entries that share a storage_id are never
live at the same time.

TVM's planners guarantee it (Relay's ``GraphPlanMemory``, src/relay/backend/graph_plan_memory.cc,
and Relax's ``StaticPlanBlockMemory``): storage is reused only between entries whose lifetimes
do not overlap, an op's outputs get their storage before its inputs release theirs (no kernel
writes over what it reads), and inputs and params keep storage of their own. A ``__nop`` (a
reshape-only view) shares its input's storage by design: it is the same value, its lifetime
merged with its source's. ``GraphExecutor::SetupStorage`` trusts the ids; a graph.json edited
by hand or damaged can break the rule, and a kernel then writes over a weight, its own input or
the model's input: wrong answers with exit 0. ``check_storage_plan`` refuses such a plan when
graph.json is parsed (graph_json.py), naming both entries and their nodes.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import GraphError
from .graph import Graph
from .graph_checks import entry_owner


def lifetimes(graph: Graph) -> dict[int, tuple[int, int]]:
    """Per entry: (op index that writes it, op index of its last reader); -1 = before the run,
    len(ops) = after it (graph inputs are live from the start, outputs until the end)."""
    ops = graph.op_nodes()
    # every 'null' node, listed in arg_nodes or not (TVM accepts both), is live from the start
    life = {graph.eid(n.index): (-1, -1) for n in graph.nodes if not n.is_op}
    for i, node in enumerate(ops):
        for k in range(node.num_outputs):
            life[graph.eid(node.index, k)] = (i, i)
        for e in node.inputs:
            eid = graph.entry_id(e)
            life[eid] = (life[eid][0], i)
    for eid in graph.output_entries():
        life[eid] = (life[eid][0], len(ops))
    return life


@dataclass(frozen=True)
class PlanCheck:
    """What ``check_storage_plan`` found in a plan it accepted (``explain`` says it)."""

    storage_ids: int   # distinct storage ids
    reused: int        # of them, held by more than one value (lifetimes one after another)
    views: int         # __nop outputs sharing their input's storage (the same value)

    def describe(self) -> str:
        return (f"storage plan checked: {self.storage_ids} storage ids ({self.reused} reused, "
                f"{self.views} __nop views); no entries live at the same time share one, and no "
                "op output shares an input's or a param's")


def _values(graph: Graph) -> tuple[list[int], int]:
    """Per entry, the entry whose value it is: itself, or for a ``__nop`` output that shares
    its input's storage id, that input's (transitively); and how many such views there are."""
    root, views = list(range(graph.num_entries)), 0
    for node in graph.op_nodes():
        if node.func_name == "__nop" and len(node.inputs) == 1 and node.num_outputs == 1:
            src, out = root[graph.entry_id(node.inputs[0])], graph.eid(node.index)
            if graph.storage_ids[out] == graph.storage_ids[src]:
                root[out], views = src, views + 1
    return root, views


def _spans(graph: Graph, root: list[int]) -> dict[int, list[int]]:
    """Per value (its root entry): [first op, last op] it is live over, views included. Inputs
    and params (every null node) are live through every run, and between runs."""
    end = len(graph.op_nodes())
    spans: dict[int, list[int]] = {}
    for eid, (first, last) in lifetimes(graph).items():
        if first < 0:
            last = end
        span = spans.setdefault(root[eid], [first, last])
        span[0], span[1] = min(span[0], first), max(span[1], last)
    return spans


def check_storage_plan(graph: Graph) -> PlanCheck:
    """GraphError when two values live at the same time share a storage id (an op's output
    over a param, an input, its own input or any entry still to be read); else what was
    checked. Values are sorted by the op that writes them, per storage id: each must start
    after every earlier one sharing its id was last read."""
    root, views = _values(graph)
    spans = _spans(graph, root)
    by_sid: dict[int, list[tuple[int, int, int]]] = {}
    for value, (first, last) in spans.items():
        by_sid.setdefault(graph.storage_ids[value], []).append((first, last, value))
    for sid, values in by_sid.items():
        values.sort()
        held = values[0]  # of the values seen so far, the one live the longest
        for first, last, value in values[1:]:
            if first <= held[1]:
                raise _overlap(graph, sid, (first, last, value), held, root)
            if last > held[1]:
                held = (first, last, value)
    return PlanCheck(len(by_sid), sum(1 for v in by_sid.values() if len(v) > 1), views)


def _entry_text(graph: Graph, eid: int, first: int, last: int) -> str:
    nid = entry_owner(graph.node_row_ptr, eid)
    node = graph.nodes[nid]
    if not node.is_op:
        return (f"entry {eid} (node {nid} '{node.name}', an input or param: live through every "
                "run and between runs)")
    until = "the end of the run (a graph output)" if last >= len(graph.op_nodes()) else \
        f"op {last}"
    return (f"entry {eid} (output {eid - graph.node_row_ptr[nid]} of node {nid} '{node.name}', "
            f"live from op {first} to {until})")


def _overlap(graph: Graph, sid: int, later: tuple[int, int, int],
             earlier: tuple[int, int, int], root: list[int]) -> GraphError:
    """The refusal: the later-written value would overwrite the earlier one while it is live."""
    first, _, eid = later
    nid = entry_owner(graph.node_row_ptr, eid)
    if first < 0:  # two inputs or params: setting one sets the other
        harm = "setting one input or param would overwrite the other"
    else:
        own = any(root[graph.entry_id(e)] == earlier[2] for e in graph.nodes[nid].inputs)
        harm = (f"op {first} would write over " + ("its own input" if own else
                "an input or param" if earlier[0] < 0 else "a value still to be read") +
                ", and the model would compute on clobbered data")
    return GraphError(
        f"storage_id {sid} is shared by {_entry_text(graph, eid, *later[:2])} and "
        f"{_entry_text(graph, earlier[2], *earlier[:2])}: {harm}. Entries may share a storage "
        "id only when their lifetimes do not overlap (TVM's planners never share otherwise); "
        f"give entry {eid} a storage id of its own, or rebuild graph.json",
        node_index=nid, node_name=graph.nodes[nid].name, field=f"attrs.storage_id[{eid}]")
