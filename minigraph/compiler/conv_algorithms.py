"""Which algorithm computes each conv: direct (the conv rule, conv_schedule.py), direct over
output channels padded to whole vectors (channel_padding.py) or Winograd (winograd.py),
decided per conv before fusion, so FuseOps fuses the replacement's epilogue (bias, residual
add, relu) into it as it would a conv2d's.

The decision (``choose``) weighs the multiplies saved against the transformed weight's extra
bytes: F(4x4, 3x3) reads 36/9 = 4x the weight, once per run; on a conv whose output has few
tiles (ResNet's 7x7 and 14x14 stages) the weight is large and the multiplies few, and in the
model that weight comes from DRAM. What a byte costs in multiply-adds is the machine's own
rate (machine_rates.py: its FMA peak over its read bandwidth, measured), not a constant: the
same conv is Winograd's on one CPU and direct on another. Counterpart in TVM: the x86 strategy's choice between
``conv2d_NCHWc`` and ``conv2d_winograd`` implementations (``relay.op.strategy``), by shape.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import tvm
from tvm import relax
from tvm.s_tir.analysis import estimate_tir_flops

from .algorithm_tuning import AlgorithmTuner
from .channel_padding import pad_weight, padded_channels, padded_conv_func
from .conv_calls import static_nhwc_conv
from .conv_tiles import vector_part
from .machine_rates import MachineRates
from .winograd import F2, F4, ConvShape, Transform, conv_shape, winograd_func

# The cost model, in millions of multiply-adds (MMAC): fitted to the in-model times of
# ResNet-18's 3x3 convs (AVX-512, 2 threads, one Zen 5 guest; direct, F(4x4) and F(2x2) on
# each of the four stages), within 15% of each. A weight byte is read once per run, from DRAM
# (a VM's reported LLC is not trusted to hold the weights), at the machine's MAC-per-byte rate.
# The transforms and the round trips of their (m + 2)^2 intermediate planes through the
# caches: per element of the transformed input and of the products, in MAC equivalents.
TRANSFORM_MACS = 16


@dataclass(frozen=True)
class Choice:
    """One conv's algorithm and why (build.json ``conv_algorithms``)."""

    conv: str       # the Relax var the conv binds
    algorithm: str  # "winograd F(4x4,3x3)", "direct", "direct, 24 channels padded to 32"
    reason: str
    direct_flops: float  # 2 * N * Ho * Wo * Kh * Kw * C * K: what a direct conv executes
    flops: float         # what the chosen algorithm executes (TVM's estimate of its PrimFunc)

    def to_dict(self) -> dict:
        return {"conv": self.conv, "algorithm": self.algorithm, "reason": self.reason,
                "direct_flops": self.direct_flops, "flops": self.flops}


def cost_mmac(shape: ConvShape, tf: Transform | None, mac_per_byte: float) -> float:
    """The model's cost of computing the conv directly (``tf`` None) or by ``tf``, in MMAC,
    a weight byte costing ``mac_per_byte`` multiply-adds (machine_rates.py)."""
    taps = 9 if tf is None else tf.alpha ** 2  # weight elements per channel pair
    weight_nbytes = taps * shape.c * shape.k * 4
    weight = mac_per_byte * weight_nbytes / 1e6
    if tf is None:
        ho, wo = shape.out_hw
        return shape.n * ho * wo * 9 * shape.c * shape.k / 1e6 + weight
    n_h, n_w = shape.tiles(tf.m)
    planes = taps * shape.n * n_h * n_w
    products = planes * shape.c * shape.k
    return (products + TRANSFORM_MACS * planes * (shape.c + shape.k)) / 1e6 + weight


def choose(shape: ConvShape, lanes: int, rates: Callable[[], MachineRates],
           tuner: AlgorithmTuner | None = None) -> tuple[Transform | None, str]:
    """The cheapest of direct, F(4x4, 3x3) and F(2x2, 3x3) by ``cost_mmac`` at the machine's
    rate (asked for only when there is a choice to make), or with ``tuner`` (``--tune``) the
    fastest measured on this host; and why."""
    if shape.k % lanes:
        return None, f"{shape.k} output channels are not whole vectors of {lanes}"
    rate = rates()
    costs = {tf: cost_mmac(shape, tf, rate.mac_per_byte) for tf in (None, F4, F2)
             if tf is None or _tileable(shape, tf)}
    best = min(costs, key=costs.get)
    said = f"modelled cost in MMAC: {', '.join(f'{_name(tf)} {c:.1f}' for tf, c in costs.items())}"
    measured = tuner.choose(shape, list(costs), best) if tuner and len(costs) > 1 else None
    if measured is None:
        return best, f"{said}; {rate.said()}"
    return measured.tf, f"{said}; {rate.said()}; {measured.note(tuner.threads)}"


def _tileable(shape: ConvShape, tf: Transform) -> bool:
    """The products' register tile takes 4 to 16 rows of tiles that divide the tile count
    (winograd_schedule.py has no tail tile; one row at a time would be load-bound)."""
    n_h, n_w = shape.tiles(tf.m)
    return any(shape.n * n_h * n_w % rows == 0 for rows in range(4, 17))


def _name(tf: Transform | None) -> str:
    return "direct" if tf is None else f"F({tf.m}x{tf.m},3x3)"


def choose_algorithms(mod, params: dict[str, np.ndarray], lanes: int,
                      rates: Callable[[], MachineRates] | None,
                      tuner: AlgorithmTuner | None = None
                      ) -> tuple[object, dict[str, np.ndarray], list[Choice]]:
    """Rewrites ``main``'s convs whose algorithm is not the plain direct one as ``R.call_tir``
    of their PrimFunc on a weight made here, a new param: ``<weight>.winograd<m>`` for the 3x3
    stride-1 convs ``choose`` gives to Winograd (only with ``winograd``), ``<weight>.pad<K>``
    for those whose output channels ``padded_channels`` pads. The original weight stays a
    param only if something else reads it. ``rates`` None: no Winograd (``--no-winograd``);
    ``tuner``: measured choices (``--tune``).
    Returns (module, params, one Choice per 3x3
    stride-1 or padded conv)."""
    main = mod["main"]
    rw = _Rewrite(mod, params, lanes, rates, tuner)
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
    """One binding at a time: a conv given to Winograd or to padded channels becomes a call of
    its PrimFunc (added to the module) on its made weight (one per weight and kind)."""

    def __init__(self, mod, params: dict[str, np.ndarray], lanes: int,
                 rates: Callable[[], MachineRates] | None, tuner: AlgorithmTuner | None
                 ) -> None:
        self.bb = relax.BlockBuilder(mod.clone())
        self.params, self.lanes, self.rates, self.tuner = params, lanes, rates, tuner
        self.weights: dict[str, relax.Var] = {}
        self.values: dict[str, np.ndarray] = {}
        self.choices: list[Choice] = []

    def binding(self, b) -> relax.VarBinding:
        weight = _param_weight(b.value, self.params)
        if weight is None or static_nhwc_conv(b.value, weight) is None:
            return b
        shape = conv_shape(b.value, weight) if self.rates else None
        tf, why = choose(shape, self.lanes, self.rates, self.tuner) if shape else (None, "")
        if tf is not None:
            return self.winograd_call(b, shape, tf, why)
        k = int(weight.shape[3])
        k_pad = padded_channels(k, self.lanes)
        if k_pad is not None:
            return self.padded_call(b, k, k_pad)
        if shape:
            self.choices.append(Choice(b.var.name, "direct", why, shape.direct_flops,
                                       shape.direct_flops))
        return b

    def winograd_call(self, b, shape: ConvShape, tf: Transform, why: str) -> relax.VarBinding:
        func = winograd_func(shape, tf)
        self.choices.append(Choice(b.var.name, f"winograd {_name(tf)}", why, shape.direct_flops,
                                   _flops(func)))
        made = self.made(b.value.args[1].name, f"winograd{tf.m}", tf.weight)
        return self.call(b, func, "conv2d_winograd", made)

    def padded_call(self, b, k: int, k_pad: int) -> relax.VarBinding:
        func = padded_conv_func(b.value, k_pad)
        flops = _flops(func)  # the zero channels' multiply-adds are executed too
        narrow = vector_part(k, self.lanes) / self.lanes
        self.choices.append(Choice(
            b.var.name, f"direct, {k} channels padded to {k_pad}",
            f"{k} output channels are not whole vectors of {self.lanes}: {k_pad} keep "
            f"{k / k_pad:.0%} of the lanes useful, the widest vectors dividing {k} {narrow:.0%}",
            flops * k / k_pad, flops))
        made = self.made(b.value.args[1].name, f"pad{k_pad}", lambda w: pad_weight(w, k_pad))
        return self.call(b, func, "conv2d_padded", made)

    def call(self, b, func, name: str, weight: relax.Var) -> relax.VarBinding:
        gv = self.bb.add_func(func, name)
        return relax.VarBinding(b.var, relax.call_tir(gv, relax.Tuple([b.value.args[0], weight]),
                                                      b.var.ty))

    def made(self, name: str, kind: str, make) -> relax.Var:
        """The param ``<name>.<kind>``: ``make`` of weight ``name``, made once."""
        new = f"{name}.{kind}"
        if new not in self.weights:
            value = make(self.params[name])
            self.values[new] = value
            self.weights[new] = relax.Var(new, relax.TensorType(value.shape, str(value.dtype)))
        return self.weights[new]


def _flops(func) -> float:
    return float(estimate_tir_flops(tvm.IRModule({"main": func})))


def _param_weight(value, params: dict[str, np.ndarray]) -> np.ndarray | None:
    """The weight of a conv2d call whose weight is a param; None for anything else."""
    if not isinstance(value, relax.Call) or getattr(value.op, "name", "") != "relax.nn.conv2d":
        return None
    weight = value.args[1]
    if not isinstance(weight, relax.Var) or weight.name not in params:
        return None
    return params[weight.name]
