"""A teaching view of a graph: nodes, storage plan with lifetimes, inputs/params/outputs.

Returns text; only the CLI prints. Works on any valid graph.json, including Relay-era files.
"""
from __future__ import annotations

from ..artifacts.graph import Graph
from ..artifacts.liveness import check_storage_plan, lifetimes
from ..fileio.printable import one_line
from ..runtime.storage import StoragePlan, plan_storage
from .units import wrap


def _ty(graph: Graph, eid: int) -> str:
    return f"{graph.dltypes[eid]}{list(graph.shapes[eid])}"


def _mib(nbytes: int) -> str:
    return f"{nbytes / 2**20:.2f} MiB" if nbytes >= 2**16 else f"{nbytes} B"


def node_lines(graph: Graph) -> list[str]:
    lines = []
    for node in graph.nodes:
        eid = graph.eid(node.index)
        if not node.is_op:
            lines.append(f"%{node.index} = input '{node.name}' -> {_ty(graph, eid)}  "
                         f"sid={graph.storage_ids[eid]}")
            continue
        args = ", ".join(f"%{e.node_id}" + (f".{e.index}" if e.index else "") for e in node.inputs)
        outs = ", ".join(f"{_ty(graph, graph.eid(node.index, k))}  "
                         f"sid={graph.storage_ids[graph.eid(node.index, k)]}"
                         for k in range(node.num_outputs))
        lines.append(f"%{node.index} = {node.func_name}({args}) -> {outs}")
    return [one_line(line) for line in lines]  # names from graph.json: one line each


def storage_lines(graph: Graph, plan: StoragePlan) -> list[str]:
    life = lifetimes(graph)
    arg_sids = {graph.storage_ids[graph.eid(n)] for n in graph.arg_nodes}
    lines = []
    for sid, nbytes in enumerate(plan.pool_nbytes):
        if sid in arg_sids:
            continue
        users = ", ".join(f"e{e}[{life[e][0]}..{life[e][1]}]" for e in plan.entries_of(sid))
        lines.append(f"sid {sid:3d}  {nbytes:>12,d} B  {users}")
    return lines


def _listing(label: str, items: list[str], width: int | None, lines: int = 3) -> str:
    """'label: a, b, c': with a width, at most ``lines`` lines of it, then how many more."""
    text = f"{label}: " + ", ".join(items)
    if width is None or len(text) <= width * lines:
        return text
    budget, shown = width * lines - len(label) - 40, []
    for item in items:
        budget -= len(item) + 2
        if budget < 0:
            break
        shown.append(item)
    return (f"{label}: " + ", ".join(shown) + f", ... and {len(items) - len(shown)} more "
            "(--wide lists all)")


def explain(graph: Graph, width: int | None = None) -> str:
    """The whole teaching view as text; ``width``: long lines wrapped to it and long lists
    cut short (None: everything on one line each)."""
    plan = plan_storage(graph)
    ops = graph.op_nodes()
    arg_eids = {graph.eid(n) for n in graph.arg_nodes}
    act = [e for e in range(graph.num_entries) if e not in arg_eids]
    naive = sum(plan.entry_nbytes[e] for e in act)
    act_sids = {plan.entry_sid[e] for e in act} - {plan.entry_sid[e] for e in arg_eids}
    planned = sum(plan.pool_nbytes[s] for s in act_sids)
    param_bytes = sum(plan.entry_nbytes[e] for e in arg_eids)
    out = [f"graph: {len(graph.nodes)} nodes, {len(ops)} ops, {graph.num_entries} entries, "
           f"{len(plan.pool_nbytes)} storage ids", "", "nodes:"]
    out += ["  " + line for line in node_lines(graph)]
    out += ["", "storage plan (activations; entry[first op..last op]):"]
    out += ["  " + line for line in storage_lines(graph, plan)]
    out += ["", check_storage_plan(graph).describe()]
    ratio = f" ({planned / naive:.0%})" if naive else ""
    out += ["", f"planned activation memory: {_mib(planned)} vs one buffer per entry: "
                f"{_mib(naive)}{ratio}; inputs and params: {_mib(param_bytes)}", "",
            _listing("arg nodes (inputs and params)", list(graph.input_names()), width),
            _listing("outputs", [f"%{h.node_id}.{h.index} {_ty(graph, graph.entry_id(h))}"
                                 for h in graph.heads], width)]
    return wrap("\n".join(out), width, indent=6)
