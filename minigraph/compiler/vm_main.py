"""graph.json's nodes -> the Relax ``main`` of model.vm.so (the inverse of relax_to_graph).

The Relax VM build must call the very kernels graph.json calls, with the very params
model.params holds. Once the schedules have repacked weights (packing.py), the fused module's
``main`` no longer matches either, so it is rewritten from the lowered graph: one parameter per
null node (inputs first, then params, in graph order, as TVM's ``main(inputs..., weights...)``)
and one ``R.call_tir`` per op node. Counterpart: the Relax function the graph executor codegen
consumed, seen from the other side.
"""
from __future__ import annotations

from tvm import relax


def rebuild_main(mod, lowered, input_names: list[str]):
    """A new module of ``mod``'s kernels whose ``main`` calls them on ``lowered``'s null nodes.
    The GlobalVars are made afresh: a GlobalVar keeps the signature of the function it was made
    for, and a repacked kernel has a new one."""
    bb = relax.BlockBuilder()
    gvs = {gv.name_hint: bb.add_func(mod[gv], gv.name_hint) for gv in mod.get_global_vars()
           if gv.name_hint != "main"}
    nodes = lowered.nodes
    eid_of, eid = {}, 0
    for node in nodes:
        eid_of[node.index] = eid
        eid += node.num_outputs if node.is_op else 1

    def tensor(e: int):
        return relax.TensorType(lowered.shapes[e], lowered.dltypes[e])

    nulls = [n for n in nodes if not n.is_op]
    order = ([n for n in nulls if n.name in input_names]
             + [n for n in nulls if n.name not in input_names])
    params = {n.index: relax.Var(n.name, tensor(eid_of[n.index])) for n in order}
    values: dict[tuple[int, int], object] = {(i, 0): v for i, v in params.items()}
    with bb.function("main", [params[n.index] for n in order]):
        with bb.dataflow():
            for node in nodes:
                if node.is_op:
                    _emit_call(bb, gvs[lowered.kernels[node.name].name_hint], node, values,
                               eid_of[node.index], tensor)
            heads = [values[(h.node_id, h.index)] for h in lowered.heads]
            out = bb.emit_output(heads[0] if len(heads) == 1 else relax.Tuple(heads))
        bb.emit_func_output(out)
    return bb.get()


def _emit_call(bb, gv, node, values, first_eid: int, tensor) -> None:
    args = [values[(e.node_id, e.index)] for e in node.inputs]
    outs = [tensor(first_eid + k) for k in range(node.num_outputs)]
    call = bb.emit(relax.call_tir(gv, args, outs if len(outs) > 1 else outs[0]))
    if len(outs) == 1:
        values[(node.index, 0)] = call
        return
    for k in range(len(outs)):
        values[(node.index, k)] = bb.emit(relax.TupleGetItem(call, k))
