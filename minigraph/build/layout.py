"""conv2d NCHW/OIHW -> NHWC/HWIO with TVM's ``ConvertLayout``, guarded.

``relax.transform.ConvertLayout`` (TVM 0.27) kills the process with a segfault when an
elementwise binary op has a scalar (PrimExpr) operand, e.g. the ``add(var, 1e-5)`` that
``FoldBatchnormToConv2D`` leaves. minigraph folds such arithmetic in numpy first (fold.py), then
looks for leftovers before calling the pass: with none, it runs here; with some (or any other
doubt: a 0-d operand), it runs in a child process on the module's JSON, and a crash there only
means the convs stay NCHW, with the reason recorded in build.json.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass

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
    from tvm import relax
    for block in mod["main"].body.blocks:
        for b in block.bindings:
            if isinstance(b.value, relax.Call) and hasattr(b.value.op, "name"):
                yield b.var, b.value


def scalar_operands(mod) -> list[str]:
    """Bindings ConvertLayout may crash on: a binary op with a scalar or 0-d tensor operand."""
    import tvm
    from tvm import relax
    found = []
    for var, call in _calls(mod):
        if call.op.name not in BINARY_OPS:
            continue
        for arg in call.args:
            scalar = isinstance(arg, tvm.ir.expr.Constant) and not hasattr(arg.ty, "ndim")
            zero_d = isinstance(getattr(arg, "ty", None), relax.TensorType) and arg.ty.ndim == 0
            if scalar or zero_d:
                found.append(f"{var.name} = {call.op.name.removeprefix('relax.')}(..., scalar)")
                break
    return found


def nchw_convs(mod) -> int:
    return sum(1 for _, c in _calls(mod)
               if c.op.name == "relax.nn.conv2d" and str(c.attrs.data_layout) == "NCHW")


def convert_layout(mod, timeout_s: float = 300.0) -> LayoutResult:
    """NHWC/HWIO convs, in this process when it is safe, in a child process otherwise."""
    from tvm import relax
    count = nchw_convs(mod)
    if count == 0:
        return LayoutResult(mod, 0, "skipped", "no NCHW conv2d")
    leftovers = tuple(scalar_operands(mod))
    if not leftovers:
        return LayoutResult(relax.transform.ConvertLayout(DESIRED)(mod), count, "in process")
    reason = f"{len(leftovers)} scalar-operand ops left (ConvertLayout may segfault on them)"
    converted, error = _in_child(mod, timeout_s)
    if converted is None:
        return LayoutResult(mod, count, "skipped", f"{reason}; child process: {error}", leftovers)
    return LayoutResult(converted, count, "in a child process", reason, leftovers)


def _in_child(mod, timeout_s: float) -> tuple[object | None, str]:
    import tvm
    with tempfile.TemporaryDirectory(prefix="minigraph-layout-") as tmp:
        src, dst = os.path.join(tmp, "in.json"), os.path.join(tmp, "out.json")
        with open(src, "w") as fh:
            fh.write(tvm.ir.save_json(mod))
        try:
            proc = subprocess.run([sys.executable, "-c", _CHILD, src, dst], capture_output=True,
                                  text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None, f"timed out after {timeout_s:.0f} s"
        if proc.returncode != 0:
            how = (f"killed by signal {-proc.returncode}" if proc.returncode < 0
                   else f"exit {proc.returncode}")
            tail = (proc.stderr.strip().splitlines() or [""])[-1][:160]
            return None, f"{how} {tail}".strip()
        with open(dst) as fh:
            return tvm.ir.load_json(fh.read()), ""


_CHILD = """
import sys
import tvm
from tvm import relax
mod = tvm.ir.load_json(open(sys.argv[1]).read())
mod = relax.transform.ConvertLayout({"relax.nn.conv2d": ["NHWC", "HWIO"]})(mod)
open(sys.argv[2], "w").write(tvm.ir.save_json(mod))
"""
