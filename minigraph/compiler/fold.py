"""Inference folding on a Relax ``main`` whose weights are parameters, in numpy.

One pass over the dataflow bindings (the counterpart of TVM's ``FoldBatchnormToConv2D`` +
``FoldScaleAxis`` + ``FoldConstant``, without binding the weights into the module):

* an op whose tensor arguments are all known at build time (params, constants, scalars) is
  evaluated in numpy (numpy_ops.py) and its value becomes a new named param;
* a conv2d with a constant weight followed by per-output-channel affine ops (the bias add, an
  inference ``batch_norm``, a Mul/Add pair an exporter left) is rewritten as one conv2d with
  scaled weights plus one bias add: ``conv(x, W) * s + t == conv(x, W * s) + t``;
* a ``batch_norm`` that does not follow a conv becomes ``x * s + t`` with s, t folded.
Values are materialised lazily: a folded value that nothing at run time reads is never emitted.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import tvm
from tvm import relax

from .affine import Affine as _Affine, extend as _extend, per_channel as _per_channel
from .numpy_ops import BINARY, evaluate

SCALAR_SENSITIVE = tuple(BINARY)


@dataclass
class FoldStats:
    folded_ops: int = 0           # ops evaluated in numpy
    affine_into_conv: int = 0     # affine ops (bias, bn, mul/add) folded into a conv
    batch_norms_folded: int = 0   # batch_norm ops folded (into a conv or into x*s+t)
    new_params: dict[str, str] = field(default_factory=dict)  # name -> how it was made


class _Folder:
    def __init__(self, params: dict[str, np.ndarray]) -> None:
        self.tvm, self.relax = tvm, relax
        self.params_in = params
        self.params: dict[str, np.ndarray] = {}
        self.const: dict[object, np.ndarray] = {}
        self.names: dict[object, str] = {}
        self.affine: dict[object, _Affine] = {}
        self.env: dict[object, object] = {}
        self.uses: dict[object, int] = {}
        self.stats = FoldStats()
        self.bn_stats: dict[object, tuple] = {}  # batch_norm var -> (output, mean, var)
        self.bb = relax.BlockBuilder()
        self.param_vars: list = []

    # ---- values known at build time -------------------------------------------------------
    def known(self, expr) -> np.ndarray | None:
        relax = self.relax
        if isinstance(expr, relax.Var):
            return self.const.get(expr)
        if isinstance(expr, self.tvm.ir.expr.Constant):
            value = getattr(expr, "value", None)
            if hasattr(value, "numpy"):
                return value.numpy()
            if isinstance(value, (int, float)):
                return np.asarray(value, dtype=str(expr.ty.dtype))
        return None

    def new_param(self, name: str, value: np.ndarray, how: str):
        base, k = name, 1
        while name in self.params or (how and name in self.params_in):  # never shadow an input
            name, k = f"{base}.{k}", k + 1
        var = self.relax.Var(name, self.relax.TensorType(value.shape, str(value.dtype)))
        self.params[name] = np.ascontiguousarray(value)
        self.param_vars.append(var)
        if how:
            self.stats.new_params[name] = how
        return var

    # ---- materialising ----------------------------------------------------------------------
    def get(self, expr):
        relax = self.relax
        if isinstance(expr, relax.Var):
            if expr in self.env:
                return self.env[expr]
            if expr in self.affine:
                self.env[expr] = self.emit_affine(self.affine[expr])
                return self.env[expr]
            if expr in self.const:
                self.env[expr] = self.new_param(self.names[expr], self.const[expr],
                                                 "" if self.names[expr] in self.params_in
                                                 else "folded in numpy")
                return self.env[expr]
        if isinstance(expr, relax.Tuple):
            return relax.Tuple([self.get(f) for f in expr.fields])
        return expr

    def emit_affine(self, a: _Affine):
        R = self.relax.op
        kernel_o = str(a.call.attrs.kernel_layout).index("O")
        shape = [1] * a.weight.ndim
        shape[kernel_o] = -1
        weight = (a.weight * a.scale.reshape(shape)).astype(a.weight.dtype)
        same = bool(np.all(a.scale == 1))
        name = a.weight_name if same else f"{a.weight_name}.folded"
        w = self.new_param(name, weight, "" if name in self.params_in else
                           "folded in numpy" if same else "affine ops folded into the conv weight")
        y = self.bb.emit(self.relax.Call(a.call.op, [a.data, w], a.call.attrs))
        if a.shift is None:
            return y
        bshape = [1] * len(a.out_ty.shape)
        bshape[a.channel_axis] = -1
        bias = a.shift.reshape(bshape).astype(weight.dtype)
        if a.shift_name:
            b = self.new_param(a.shift_name, bias, "" if a.shift_name in self.params_in
                               else "folded in numpy")
        else:
            b = self.new_param(f"{a.weight_name}.bias", bias, "conv bias and affine ops folded")
        return self.bb.emit(R.add(y, b))

    # ---- one binding --------------------------------------------------------------------------
    def binding(self, var, value) -> None:
        relax = self.relax
        if isinstance(value, relax.TupleGetItem) and value.tuple_value in self.bn_stats:
            out, mean, variance = self.bn_stats[value.tuple_value]
            if value.index == 0:  # the normalised output; 1, 2: the moving statistics
                self.env.pop(var, None)
                (self.affine if isinstance(out, _Affine) else self.env)[var] = out
            else:
                self.const[var] = (mean, variance)[value.index - 1]
                self.names[var] = f"{self.names.get(var, 'batch_norm')}.stat{value.index}"
            return
        if not isinstance(value, relax.Call) or not hasattr(value.op, "name"):
            self.env[var] = self.rebuild(value)
            return
        op = value.op.name
        args = list(value.args)
        known = [self.known(a) for a in args]
        tensor_args = [a for a in args if not isinstance(a, relax.ShapeExpr)]
        if all(self.known(a) is not None for a in tensor_args):
            folded = evaluate(op, known, value.attrs, args)
            if folded is not None:
                self.const[var] = folded
                self.names[var] = self.derived_name(args, op, value.attrs)
                self.stats.folded_ops += 1
                return
        if self.fold_into_affine(var, op, value, args, known):
            return
        if op == "relax.call_tir" and self.clip_bound(var, args):
            return
        new_args = [self.get(a) for a in args]
        if op in SCALAR_SENSITIVE:  # ConvertLayout segfaults on a PrimExpr operand here
            new_args = [relax.const(k) if not isinstance(a, relax.Var) and k is not None
                        and k.ndim == 0 else a for a, k in zip(new_args, known)]
        self.env[var] = self.bb.emit(relax.Call(value.op, new_args, value.attrs, value.ty_args))

    def clip_bound(self, var, args) -> bool:
        """TVM's ONNX ``Clip`` with tensor bounds calls TOPI ``maximum``/``minimum`` PrimFuncs
        through call_tir, which no layout pass or fusion can see through; with a bound known at
        build time it becomes the Relax op (elementwise, fused into the conv before it)."""
        import re
        kernel, inner = args[0], args[1]
        m = re.fullmatch(r"(maximum|minimum)\d*", getattr(kernel, "name_hint", ""))
        fields = list(getattr(inner, "fields", []))
        if not m or len(fields) != 2 or self.known(fields[1]) is None \
                or self.known(fields[0]) is not None or self.known(fields[1]).ndim != 0:
            return False
        bound = self.relax.const(self.known(fields[1]))
        op = self.relax.op.maximum if m.group(1) == "maximum" else self.relax.op.minimum
        self.env[var] = self.bb.emit(op(self.get(fields[0]), bound))
        return True

    def rebuild(self, value):
        relax = self.relax
        if isinstance(value, relax.TupleGetItem):
            return self.bb.emit(relax.TupleGetItem(self.get(value.tuple_value), value.index))
        return self.bb.emit(self.get(value)) if isinstance(value, relax.Tuple) else self.get(value)

    def derived_name(self, args, op: str, attrs=None) -> str:
        srcs = [self.names.get(a, "") for a in args if isinstance(a, self.relax.Var)]
        base = next((s for s in srcs if s), "const")
        tag = op.rsplit(".", 1)[-1]
        if op == "relax.permute_dims":  # the layout it produces, for a weight
            axes = [int(a) for a in attrs.axes] if attrs.axes is not None else []
            tag = {(2, 3, 1, 0): "HWIO", (1, 0): "T"}.get(tuple(axes), tag)
        return f"{base}.{tag}"

    def fold_into_affine(self, var, op: str, call, args, known) -> bool:
        """conv2d with a constant weight starts an affine chain; per-channel add/sub/mul/div
        and inference batch_norm extend it. Returns True if ``var`` is now pending."""
        if op == "relax.nn.conv2d" and known[1] is not None and known[0] is None:
            cout = known[1].shape[str(call.attrs.kernel_layout).index("O")]
            name = self.names.get(args[1]) or f"{var.name}.weight"  # a Constant node's weight
            self.affine[var] = _Affine(self.get(args[0]), known[1], name, call,
                                       var.ty, np.ones(cout, known[1].dtype))
            return True
        if op == "relax.nn.batch_norm" and all(k is not None for k in known[1:5]) \
                and not bool(call.attrs.training) and known[0] is None:
            return self.fold_batch_norm(var, call, args, known)
        if op not in ("relax.add", "relax.subtract", "relax.multiply", "relax.divide"):
            return False
        for i in (0, 1):
            if args[i] in self.affine and self.uses[args[i]] == 1 and known[1 - i] is not None:
                a = self.affine[args[i]]
                per = _per_channel(known[1 - i], a.out_ty, a.channel_axis)
                if per is None or (i == 1 and op in ("relax.subtract", "relax.divide")):
                    return False
                extended = _extend(a, op, per)
                if op == "relax.add" and a.shift is None and np.all(a.scale == 1) \
                        and isinstance(args[1 - i], self.relax.Var):
                    extended.shift_name = self.names.get(args[1 - i], "")
                self.affine[var] = extended
                self.stats.affine_into_conv += 1
                return True
        return False


    def fold_batch_norm(self, var, call, args, known) -> bool:
        """Inference batch_norm: y = x * s + t with s = gamma / sqrt(var + eps), t = beta -
        mean * s; into the conv before it if there is one, else as a multiply and an add."""
        gamma, beta, mean, variance = known[1:5]
        s = (gamma / np.sqrt(variance + float(call.attrs.epsilon))).astype(gamma.dtype)
        t = (beta - mean * s).astype(gamma.dtype)
        a = self.affine.get(args[0])
        if a is not None and self.uses[args[0]] == 1 \
                and int(call.attrs.axis) % len(a.out_ty.shape) == a.channel_axis:
            shift = (a.shift if a.shift is not None else 0) * s + t
            out = _Affine(a.data, a.weight, a.weight_name, a.call, a.out_ty, a.scale * s,
                          shift.astype(a.weight.dtype))
        else:
            R = self.relax.op
            ndim = len(args[0].ty.shape)
            shape = [1] * ndim
            shape[int(call.attrs.axis) % ndim] = -1
            stem = self.names.get(args[1], "batch_norm")
            x = self.get(args[0])
            y = self.bb.emit(R.multiply(x, self.new_param(f"{stem}.scale", s.reshape(shape),
                                                          "batch_norm scale folded")))
            out = self.bb.emit(R.add(y, self.new_param(f"{stem}.shift", t.reshape(shape),
                                                       "batch_norm shift folded")))
        self.bn_stats[var] = (out, mean, variance)
        self.stats.batch_norms_folded += 1
        return True


def fold_for_inference(mod, params: dict[str, np.ndarray]):
    """Returns (module, params, FoldStats): ``main``'s params are the inputs then the params
    that are still read (original ones unchanged, derived ones named after their source)."""
    main = mod["main"]
    f = _Folder(params)
    inputs = [p for p in main.params if p.name not in params]
    for p in main.params:
        if p.name in params:
            f.const[p] = params[p.name]
            f.names[p] = p.name
    for block in main.body.blocks:
        for b in block.bindings:
            for v in _vars_in(b.value, relax):
                f.uses[v] = f.uses.get(v, 0) + 1
    f.uses[main.body.body] = f.uses.get(main.body.body, 0) + 1
    with f.bb.function("main"):
        with f.bb.dataflow():
            for block in main.body.blocks:
                for b in block.bindings:
                    f.binding(b.var, b.value)
            out = f.bb.emit_output(f.get(main.body.body))
        f.bb.emit_func_output(out, params=inputs + f.param_vars)
    new = mod.clone()
    new["main"] = f.bb.get()["main"]
    return new, f.params, f.stats


def _vars_in(expr, relax) -> list:
    if isinstance(expr, relax.Var):
        return [expr]
    if isinstance(expr, relax.Call):
        return [v for a in expr.args for v in _vars_in(a, relax)]
    if isinstance(expr, relax.Tuple):
        return [v for a in expr.fields for v in _vars_in(a, relax)]
    if isinstance(expr, relax.TupleGetItem):
        return _vars_in(expr.tuple_value, relax)
    return []
