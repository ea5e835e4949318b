"""conv2d NCHW/OIHW -> NHWC/HWIO with TVM's ``ConvertLayout``, guarded.

``relax.transform.ConvertLayout`` (TVM 0.27) kills the process with a segfault when an
elementwise binary op has a scalar (PrimExpr) operand, e.g. the ``add(var, 1e-5)`` that
``FoldBatchnormToConv2D`` leaves. minigraph folds such arithmetic in numpy first (fold.py), then
looks for leftovers before calling the pass: with none, it runs here; with some, they are
repaired (folded, or made 0-d tensors, which the pass handles) and the pass is first tried in a
forked probe process (the module cannot go through JSON: ``save_json`` crashes on it too). A
probe that dies only means the convs stay NCHW, with the reason recorded in build.json.
"""
from __future__ import annotations

from dataclasses import dataclass

import tvm
from tvm import relax

from ..errors import MinigraphError
from ..measure.child import describe_death, run_forked
from .fold import fold_for_inference

BINARY_OPS = ("relax.add", "relax.subtract", "relax.multiply", "relax.divide", "relax.power",
              "relax.maximum", "relax.minimum", "relax.floor_divide", "relax.mod")
DESIRED = {"relax.nn.conv2d": ["NHWC", "HWIO"]}


@dataclass(frozen=True)
class LayoutResult:
    mod: object
    converted: int       # NCHW conv2d calls before the pass
    how: str             # "in process", "in a child process", "skipped"
    reason: str = ""     # why it ran in a child or was skipped
    leftovers: tuple[str, ...] = ()


def _calls(mod):
    for block in mod["main"].body.blocks:
        for b in block.bindings:
            if isinstance(b.value, relax.Call) and hasattr(b.value.op, "name"):
                yield b.var, b.value


def scalar_operands(mod, binary: bool = True) -> list[str]:
    """Bindings ConvertLayout crashes on: a binary op with a scalar (PrimExpr) operand, such
    as ``R.add(v, T.float32(1e-05))`` (a 0-d *tensor* operand is handled by the pass); with
    ``binary=False``, the other ops with a scalar argument (e.g. ``clip``): not known to crash,
    not known to be safe."""
    found = []
    for var, call in _calls(mod):
        if (call.op.name in BINARY_OPS) != binary:
            continue
        for arg in call.args:
            if isinstance(arg, tvm.ir.expr.Constant) and not isinstance(arg.ty, relax.TensorType):
                found.append(f"{var.name} = {call.op.name.removeprefix('relax.')}(..., scalar)")
                break
    return found


def nchw_convs(mod) -> int:
    return sum(1 for _, c in _calls(mod)
               if c.op.name == "relax.nn.conv2d" and str(c.attrs.data_layout) == "NCHW")


def convert_layout(mod, timeout_s: float = 300.0) -> LayoutResult:
    """NHWC/HWIO convs. With scalar-operand leftovers, they are first folded in numpy or made
    0-d tensors (fold.py), and the pass is tried in a forked probe process before it runs here:
    if the probe dies, the convs stay NCHW and the reason is recorded."""
    count = nchw_convs(mod)
    if count == 0:
        return LayoutResult(mod, 0, "skipped", "no NCHW conv2d")
    leftovers = tuple(scalar_operands(mod))
    doubts = scalar_operands(mod, binary=False)
    if not leftovers and not doubts:
        return LayoutResult(relax.transform.ConvertLayout(DESIRED)(mod), count, "in process")
    repaired, reason = mod, f"{len(doubts)} other ops with scalar arguments"
    if leftovers:
        repaired = fold_for_inference(mod, {})[0]
        reason = (f"{len(leftovers)} scalar-operand ops (ConvertLayout segfaults on them) "
                  f"folded or made 0-d tensors first; {len(scalar_operands(repaired))} left"
                  + (f"; {reason}" if doubts else ""))
    ok, why = survives(lambda: relax.transform.ConvertLayout(DESIRED)(repaired), timeout_s)
    if not ok:
        return LayoutResult(mod, count, "skipped", f"{reason}; probe process {why}", leftovers)
    return LayoutResult(relax.transform.ConvertLayout(DESIRED)(repaired), count,
                        "in process after a probe", reason, leftovers)


def survives(fn, timeout_s: float) -> tuple[bool, str]:
    """Runs ``fn`` in a forked child (measure/child.py); (True, "") if it returned, else (False,
    how it died). Deterministic IR passes behave the same in the child, so a survivor is safe
    to repeat."""
    try:
        done = run_forked(fn, timeout_s)
    except MinigraphError as err:  # timed out, or no fork here
        return False, str(err)
    if done.ok:
        return True, ""
    return False, "failed (exit 3)" if done.returncode == 3 else describe_death(done.returncode)
