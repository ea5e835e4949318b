"""The LLM's linear layers as kernels a user would call realistic: a packed weight layout, and
one schedule for prefill (GEMM) and decode (GEMV).

``y[b, s, n] = sum_k x[b, s, k] * W[n, k]`` with W (Hugging Face's ``[out, in]``) packed at
build time to ``[ceil(N / P), K, P]``: block ``n // P`` is one contiguous stream, so a decode
step reads every weight byte once, in order (decode is bound by the weights' bytes: 2 FLOPs per
4-byte weight), and prefill broadcasts one activation against P weights per FMA. P is the
vector width in float32 lanes (16 on AVX-512, 8 on AVX2); output columns past N in the last
block are zeros in the packed weight and never written.

Schedule (one rule, ``schedule_linear``): tasks are (column block x row tile), parallel on
TVM's thread pool; each task keeps a ``rows x (blocks * P)`` tile of accumulators in vector
registers around the reduction, fused with the elementwise epilogue (bias, residual add)
FuseOps put after it. The prompt length is symbolic: the row tile's tail is split off by
TVM's LoopPartition (``pragma_loop_partition_hint``), so full tiles run without a bounds test.
Counterpart: TOPI's x86 ``dense_pack`` and MLC-LLM's dlight GEMV/matmul rules (GPU-only); TVM
0.27's default CPU pipeline leaves ``matmul`` a serial loop over a transposed weight.
"""
from __future__ import annotations

import numpy as np

# lazy: TVM (~1.2 s to import) is imported where it is called; pack_weight is numpy only
LINEAR = "mg_linear"  # the TE compute's block name: how the schedule pass finds a linear layer
# the PrimFunc attribute of minigraph's hand-written kernels (llm/attention_common.py sets it,
# with what the kernel is): they are written scheduled and reported as they are
KERNEL_ATTR = "minigraph.kernel"
# the PassContext setting that makes LoopPartition split symbolic loops carrying the hint
LOOP_PARTITION = {"s_tir.LoopPartition": {"partition_const_loop": True}}


def pack_weight(w: np.ndarray, lanes: int) -> np.ndarray:
    """[N, K] (Hugging Face's Linear.weight) -> [ceil(N / lanes), K, lanes], zero-padded."""
    n, k = w.shape
    blocks = -(-n // lanes)
    padded = np.zeros((blocks * lanes, k), dtype=np.float32)
    padded[:n] = w
    return np.ascontiguousarray(padded.reshape(blocks, lanes, k).transpose(0, 2, 1))


def linear_te(x, w, out_features: int):
    """The TE compute of one linear layer over a packed weight (x: [b, s, K], w: [B, K, P])."""
    from tvm import te
    b, s, k_dim = x.shape
    lanes = int(w.shape[2])
    k = te.reduce_axis((0, k_dim), name="k")
    return te.compute((b, s, out_features),
                      lambda i, m, n: te.sum(x[i, m, k] * w[n // lanes, k, n % lanes], axis=k),
                      name=LINEAR)


def _tile(rows_static: int | None, out_features: int, lanes: int, registers: int) -> tuple[int, int]:
    """(rows, column blocks) of the register tile. Decode (one row): four blocks, so four
    independent accumulators hide the FMA latency while four weight streams are read. Prefill:
    two blocks and as many rows as leave registers for the weight loads and a broadcast."""
    blocks = -(-out_features // lanes)
    if rows_static == 1:
        return 1, min(4, blocks)
    cols = min(2, blocks)
    rows = max(1, min(8, (registers - cols - 2) // cols))
    return rows, cols


def _epilogue(sch, block):
    """The elementwise blocks after the linear are inlined into the output block, which becomes
    the write-back; a ``local`` stage is made when the linear writes the output itself."""
    root = sch.get_sblock("root")
    outputs = [sch.get(b).name_hint for b in sch.get_output_blocks(root)]
    name = sch.get(block).name_hint
    if name in outputs:
        return sch.cache_write(block, 0, "local")
    names = [sch.get(b).name_hint for b in sch.get_child_blocks(root)]
    for later in names[names.index(name) + 1:]:
        if later not in outputs:
            sch.compute_inline(sch.get_sblock(later))
    out = sch.get_sblock(outputs[0])
    sch.set_scope(block, 0, "local")
    return out


def _depth(sch, block, loop) -> int:
    loops = sch.get_loops(block)
    return [sch.get(lp).same_as(sch.get(loop)) for lp in loops].index(True) + 1


def schedule_linear(sch, lanes: int, registers: int) -> str:
    """Schedules the PrimFunc's linear block with its epilogue; returns what was done."""
    block = sch.get_sblock(LINEAR)
    out_features = int(sch.get(block).writes[0].source.shape[-1])
    rows_dim = sch.get(block).writes[0].source.shape[1]
    rows_static = int(rows_dim) if hasattr(rows_dim, "value") else None
    rows, blocks = _tile(rows_static, out_features, lanes, registers)
    out = _epilogue(sch, block)
    b, m, n = sch.get_loops(out)[-3:]
    no, ni = sch.split(n, [None, blocks * lanes])
    if rows > 1:
        mo, mi = sch.split(m, [None, rows])
        sch.reorder(no, mo, mi, ni)
        sch.annotate(mo, "pragma_loop_partition_hint", 1)
    else:
        sch.reorder(no, m, ni)
        mo = m
    task = sch.fuse(b, no)
    sch.compute_at(block, mo)
    inner = sch.get_loops(block)[_depth(sch, block, mo):]
    bm, bn, bk = inner if len(inner) == 3 else (None, *inner)
    nb, nv = sch.split(bn, [None, lanes])
    sch.reorder(bk, *([bm] if bm is not None else []), nb, nv)
    sch.vectorize(nv)
    sch.unroll(nb)
    if bm is not None:
        sch.unroll(bm)
    sch.parallel(task)
    init = sch.decompose_reduction(block, bk)
    sch.vectorize(sch.split(sch.get_loops(init)[-1], [None, lanes])[1])
    sch.vectorize(sch.split(sch.get_loops(out)[-1], [None, lanes])[1])
    shape = "GEMV" if rows_static == 1 else "GEMM"
    return f"{shape} tile {rows}x{blocks * lanes} in registers, weight packed NK{lanes}n, parallel"


def _cost(sch) -> dict[str, int]:
    """Per output row (token): FLOPs (2 per multiply-add) and the packed weight's bytes."""
    block = sch.get(sch.get_sblock(LINEAR))
    k_dim = int(block.reads[0].source.shape[-1])
    n = int(block.writes[0].source.shape[-1])
    w = block.reads[1].source
    nbytes = 4 * int(np.prod([int(d) for d in w.shape]))
    return {"flops_per_token": 2 * k_dim * n, "weight_bytes": nbytes, "in_features": k_dim,
            "out_features": n}


def schedule_module(mod, lanes: int, registers: int) -> tuple[object, dict[str, dict]]:
    """Every PrimFunc holding a linear block scheduled; minigraph's hand-written kernels (the
    KV cache's attention, marked with the ``KERNEL_ATTR`` attribute) and TVM's others left as
    they are. Returns the module and, per kernel, its schedule and costs (build.json)."""
    from tvm import tirx
    from tvm.s_tir import Schedule
    info: dict[str, dict] = {}
    for gv, func in list(mod.functions.items()):
        if not isinstance(func, tirx.PrimFunc):
            continue
        if func.attrs is not None and KERNEL_ATTR in func.attrs:
            info[gv.name_hint] = {"schedule": f"minigraph's {func.attrs[KERNEL_ATTR]}"}
            continue
        sch = Schedule(func)
        names = {sch.get(b).name_hint for b in sch.get_child_blocks(sch.get_sblock("root"))}
        if LINEAR in names:
            cost = _cost(sch)
            info[gv.name_hint] = {"schedule": schedule_linear(sch, lanes, registers), **cost}
            mod[gv] = sch.mod["main"]
        else:
            info[gv.name_hint] = {"schedule": "TVM's default (serial loops)"}
    return mod, info
