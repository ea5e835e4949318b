"""Which algorithm computes each conv: direct (the conv rule, conv_schedule.py) or Winograd
(winograd.py), decided per conv before fusion, so FuseOps fuses a Winograd conv's epilogue
(bias, residual add, relu) into it as it would a conv2d's.

The decision (``choose``) weighs the multiplies saved against the transformed weight's extra
bytes: F(4x4, 3x3) reads 36/9 = 4x the weight, once per run; on a conv whose output has few
tiles (ResNet's 7x7 and 14x14 stages) the weight is large and the multiplies few, and in the
model that weight comes from DRAM. Counterpart in TVM: the x86 strategy's choice between
``conv2d_NCHWc`` and ``conv2d_winograd`` implementations (``relay.op.strategy``), by shape.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import tvm
from tvm import relax
from tvm.s_tir.analysis import estimate_tir_flops

from .winograd import F2, F4, ConvShape, Transform, conv_shape, winograd_func

# The cost model, in millions of multiply-adds (MMAC): fitted to the in-model times of
# ResNet-18's 3x3 convs (AVX-512, 2 threads, one Zen 5 guest; direct, F(4x4) and F(2x2) on
# each of the four stages), within 15% of each. A weight byte is read once per run, from DRAM
# when the model's weights exceed the last-level cache: 3.9 MMAC per MB at 16 lanes, and a
# vector unit half as wide makes the multiply-adds, not the bytes, twice as dear.
MMAC_PER_MB_PER_LANE = 3.9 / 16
# The transforms and the round trips of their (m + 2)^2 intermediate planes through the
# caches: per element of the transformed input and of the products, in MAC equivalents.
TRANSFORM_MACS = 16


@dataclass(frozen=True)
class Choice:
    """One conv's algorithm and why (build.json ``conv_algorithms``)."""

    conv: str       # the Relax var the conv binds
    algorithm: str  # "winograd F(4x4,3x3)", "direct"
    reason: str
    direct_flops: float  # 2 * N * Ho * Wo * 9 * C * K: what a direct conv executes
    flops: float         # what the chosen algorithm executes (TVM's estimate of its PrimFunc)

    def to_dict(self) -> dict:
        return {"conv": self.conv, "algorithm": self.algorithm, "reason": self.reason,
                "direct_flops": self.direct_flops, "flops": self.flops}


def cost_mmac(shape: ConvShape, tf: Transform | None, lanes: int) -> float:
    """The model's cost of computing the conv directly (``tf`` None) or by ``tf``, in MMAC."""
    taps = 9 if tf is None else tf.alpha ** 2  # weight elements per channel pair
    weight_nbytes = taps * shape.c * shape.k * 4
    weight = MMAC_PER_MB_PER_LANE * lanes * weight_nbytes / 2**20
    if tf is None:
        ho, wo = shape.out_hw
        return shape.n * ho * wo * 9 * shape.c * shape.k / 1e6 + weight
    n_h, n_w = shape.tiles(tf.m)
    planes = taps * shape.n * n_h * n_w
    products = planes * shape.c * shape.k
    return (products + TRANSFORM_MACS * planes * (shape.c + shape.k)) / 1e6 + weight


def choose(shape: ConvShape, lanes: int) -> tuple[Transform | None, str]:
    """The cheapest of direct, F(4x4, 3x3) and F(2x2, 3x3) by ``cost_mmac``, and why."""
    if shape.k % lanes:
        return None, f"{shape.k} output channels are not whole vectors of {lanes}"
    costs = {tf: cost_mmac(shape, tf, lanes) for tf in (None, F4, F2)
             if tf is None or _tileable(shape, tf)}
    best = min(costs, key=costs.get)
    said = ", ".join(f"{_name(tf)} {c:.1f}" for tf, c in costs.items())
    return best, f"modelled cost in MMAC: {said}"


def _tileable(shape: ConvShape, tf: Transform) -> bool:
    """The products' register tile takes 4 to 16 rows of tiles that divide the tile count
    (winograd_schedule.py has no tail tile; one row at a time would be load-bound)."""
    n_h, n_w = shape.tiles(tf.m)
    return any(shape.n * n_h * n_w % rows == 0 for rows in range(4, 17))


def _name(tf: Transform | None) -> str:
    return "direct" if tf is None else f"F({tf.m}x{tf.m},3x3)"


def use_winograd(mod, params: dict[str, np.ndarray], lanes: int
                 ) -> tuple[object, dict[str, np.ndarray], list[Choice]]:
    """Rewrites ``main``'s 3x3 stride-1 convs that ``choose`` picks as ``R.call_tir`` of their
    Winograd PrimFunc on the transformed weight, a new param ``<weight>.winograd<m>`` (the
    original weight stays a param only if something else reads it). Returns (module, params,
    one Choice per 3x3 stride-1 conv)."""
    main = mod["main"]
    rw = _Rewrite(mod, params, lanes)
    blocks = [type(block)([rw.binding(b) for b in block.bindings]) for block in main.body.blocks]
    if not rw.weights:
        return mod, params, rw.choices
    read = {v.name for b in (b for blk in blocks for b in blk.bindings)
            for v in relax.analysis.free_vars(b.value)}
    kept = [p for p in main.params if p.name not in params or p.name in read]
    new_params = {n: v for n, v in params.items() if n in read or n not in
                  {p.name for p in main.params}} | rw.values
    new_mod = rw.bb.get()
    new_mod["main"] = relax.Function(kept + list(rw.weights.values()),
                                     relax.SeqExpr(blocks, main.body.body), main.ret_ty,
                                     main.is_pure, main.attrs)
    return relax.transform.Normalize()(new_mod), new_params, rw.choices


class _Rewrite:
    """One binding at a time: a conv ``choose`` gives to Winograd becomes a call of its
    PrimFunc (added to the module) on its transformed weight (one per weight and m)."""

    def __init__(self, mod, params: dict[str, np.ndarray], lanes: int) -> None:
        self.bb = relax.BlockBuilder(mod.clone())
        self.params, self.lanes = params, lanes
        self.weights: dict[tuple[str, int], relax.Var] = {}
        self.values: dict[str, np.ndarray] = {}
        self.choices: list[Choice] = []

    def binding(self, b) -> relax.VarBinding:
        shape = _candidate(b.value, self.params)
        if shape is None:
            return b
        tf, why = choose(shape, self.lanes)
        func = winograd_func(shape, tf) if tf else None
        self.choices.append(Choice(b.var.name, f"winograd {_name(tf)}" if tf else "direct",
                                   why, shape.direct_flops,
                                   _flops(func) if func else shape.direct_flops))
        if func is None:
            return b
        gv = self.bb.add_func(func, "conv2d_winograd")
        data, weight = b.value.args[0], self.transformed(b.value.args[1].name, shape, tf)
        return relax.VarBinding(b.var, relax.call_tir(gv, relax.Tuple([data, weight]), b.var.ty))

    def transformed(self, name: str, shape: ConvShape, tf: Transform) -> relax.Var:
        if (name, tf.m) not in self.weights:
            var = relax.Var(f"{name}.winograd{tf.m}", relax.TensorType(
                (tf.alpha, tf.alpha, shape.c, shape.k), shape.dtype))
            self.values[var.name] = tf.weight(self.params[name])
            self.weights[(name, tf.m)] = var
        return self.weights[(name, tf.m)]


def _flops(func) -> float:
    return float(estimate_tir_flops(tvm.IRModule({"main": func})))


def _candidate(value, params: dict[str, np.ndarray]) -> ConvShape | None:
    """A conv2d whose weight is a param: its shape, if Winograd could compute it."""
    if not isinstance(value, relax.Call) or getattr(value.op, "name", "") != "relax.nn.conv2d":
        return None
    weight = value.args[1]
    if not isinstance(weight, relax.Var) or weight.name not in params:
        return None
    return conv_shape(value, params[weight.name])
