"""Per-op dispatch cost: minigraph's Python run loop vs the Relax VM's interpreter.

What it measures: the cost of dispatching one operator whose kernel does almost nothing
(``C = A + B`` on float32[4]), in each executor, in the same process.

How: the script compiles that kernel with TVM (``te.create_prim_func`` + ``tvm.compile`` ->
``add4.so``), writes a graph.json that chains ``--ops`` calls of it (``y_k = add4(y_{k-1}, b)``,
built from minigraph.artifacts.graph dataclasses + ``dump_graph``, two ping-pong storage ids) and runs it
with minigraph's Executor; it also builds the same chain as a Relax function calling the same
PrimFunc ``--ops`` times through ``R.call_tir``, compiled with ``relax_pipeline="default_build"``
and run by the Relax VM. Rounds alternate the two: per round, minigraph's ``ex.benchmark(number,
1)`` and the VM's ``time_evaluator("main", number=number, repeat=1)`` each give one sample of
seconds per full chain; per-op cost = median sample / ops (whole-chain fixed costs are amortized
over the ops). Calibration rows: a bare packed call from Python (``testing.nop``, no args), the
kernel called directly from Python with bound args, and the kernel in time_evaluator's C++ loop.
Goal (informational): minigraph per-op cost <= 1.5x the VM's.
"""
from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from _common import context_line, verdict  # noqa: E402

from minigraph.artifacts.graph import Graph, Node, NodeEntry  # noqa: E402
from minigraph.artifacts.graph_json import dump_graph, load_graph  # noqa: E402
from minigraph.runtime.debug import DebugExecutor  # noqa: E402
from minigraph.runtime.kernels import load_library, resolve  # noqa: E402

if TYPE_CHECKING:
    import tvm

RATIO_GOAL = 1.5
SHAPE, DTYPE, KERNEL = (4,), "float32", "add4"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ops", type=int, default=500, help="ops in the chain (default 500)")
    p.add_argument("--number", type=int, default=20, help="chain runs per sample (default 20)")
    p.add_argument("--rounds", type=int, default=50, help="samples of each executor (default 50)")
    p.add_argument("--calls", type=int, default=20000, help="calls per calibration sample")
    p.add_argument("--out", type=Path, default=None, help="directory for add4.so and "
                   "chain.graph.json (default: a temp dir; rebuilt every run, it takes < 1 s)")
    return p.parse_args(argv)


def build_kernel(out: Path) -> "tvm.tir.PrimFunc":
    """The tiny PrimFunc, exported as add4.so; returns the PrimFunc for the Relax module."""
    import tvm
    from tvm import te
    a = te.placeholder(SHAPE, DTYPE, name="A")
    b = te.placeholder(SHAPE, DTYPE, name="B")
    c = te.compute(SHAPE, lambda i: a[i] + b[i], name="C")
    prim = te.create_prim_func([a, b, c]).with_attr("global_symbol", KERNEL)
    tvm.compile(tvm.IRModule({KERNEL: prim}), target="llvm").export_library(str(out / "add4.so"))
    return prim


def chain_graph(ops: int) -> Graph:
    """Nodes x, b (inputs) then ``ops`` tvm_op nodes, each adding b to the previous output."""
    attrs = (("flatten_data", "0"), ("func_name", KERNEL), ("num_inputs", "2"),
             ("num_outputs", "1"))
    nodes = [Node(0, "null", "x", (), ()), Node(1, "null", "b", (), ())]
    for k in range(ops):
        prev = NodeEntry(k + 1 if k else 0, 0)
        nodes.append(Node(k + 2, "tvm_op", f"{KERNEL}_{k}", (prev, NodeEntry(1, 0)), attrs))
    n = len(nodes)
    sids = (0, 1) + tuple(2 + k % 2 for k in range(ops))
    return Graph(tuple(nodes), (0, 1), (NodeEntry(n - 1, 0),), tuple(range(n + 1)),
                 (SHAPE,) * n, (DTYPE,) * n, sids)


def relax_chain(prim: "tvm.tir.PrimFunc", ops: int) -> "tvm.IRModule":
    """main(x, b): the same chain as call_tir of the same PrimFunc, ``ops`` times."""
    from tvm import relax
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType(SHAPE, DTYPE))
    b = relax.Var("b", relax.TensorType(SHAPE, DTYPE))
    with bb.function("main", [x, b]):
        with bb.dataflow():
            gv = bb.add_func(prim, KERNEL)
            cur = x
            for _ in range(ops):
                cur = bb.emit(relax.call_tir(gv, [cur, b], relax.TensorType(SHAPE, DTYPE)))
            out = bb.emit_output(cur)
        bb.emit_func_output(out)
    return bb.get()


def load_executors(out: Path, ops: int, x: np.ndarray, b: np.ndarray) -> tuple[
        DebugExecutor, "tvm.runtime.vm.VirtualMachine", "tvm.runtime.Module"]:
    """minigraph Executor on add4.so + chain.graph.json, and the Relax VM of the same chain."""
    import tvm
    prim = build_kernel(out)
    (out / "chain.graph.json").write_text(dump_graph(chain_graph(ops)))
    graph = load_graph(out / "chain.graph.json")
    module = load_library(out / "add4.so")
    ex = DebugExecutor(graph, resolve(module, [KERNEL], out / "add4.so"), module=module)
    ex.set_input(x=x, b=b)
    exe = tvm.compile(relax_chain(prim, ops), target="llvm", relax_pipeline="default_build")
    vm = tvm.relax.VirtualMachine(exe, tvm.cpu())
    return ex, vm, module


def check_outputs(ex: DebugExecutor, vm, vm_args: list, expected: np.ndarray) -> str:
    ex.run()
    mg_ok = np.allclose(ex.get_output(0).numpy(), expected)
    vm_ok = np.allclose(vm["main"](*vm_args).numpy(), expected)
    if not (mg_ok and vm_ok):
        raise RuntimeError(f"wrong chain result: minigraph ok={mg_ok}, VM ok={vm_ok}")
    return "both outputs equal x + ops*b"


def interleaved(ex: DebugExecutor, vm, vm_args: list, number: int, rounds: int
                ) -> tuple[list[float], list[float]]:
    """Seconds per chain run, one sample of each executor per round, alternating first."""
    import tvm
    ftimer = vm.time_evaluator("main", tvm.cpu(), number=number, repeat=1)
    mg, vmt = [], []
    for r in range(rounds):
        pair = [lambda: mg.append(ex.benchmark(number=number, repeat=1)[0]),
                lambda: vmt.append(ftimer(*vm_args).results[0])]
        for take in (pair if r % 2 == 0 else pair[::-1]):
            take()
    return mg, vmt


def per_call_s(fn: Callable[..., object], args: tuple, calls: int, rounds: int = 11) -> float:
    """Median over rounds of (time of ``calls`` calls ``fn(*args)``) / calls, from Python."""
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            fn(*args)
        samples.append((time.perf_counter_ns() - t0) / calls / 1e9)
    return float(np.median(samples))


def calibration(ex: DebugExecutor, module, calls: int) -> list[tuple[str, float]]:
    import tvm
    nop = tvm.get_global_func("testing.nop", allow_missing=True)
    fn, args = ex.ops[0].fn, ex.ops[0].args
    rows = [] if nop is None else [("bare packed call from Python (testing.nop)",
                                    per_call_s(nop, (), calls))]
    rows.append(("add4 called directly from Python", per_call_s(fn, args, calls)))
    te_s = module.time_evaluator(KERNEL, tvm.cpu(), number=calls, repeat=11)(*args).results
    rows.append(("add4 in time_evaluator's C++ loop", float(np.median(te_s))))
    return rows


def report(mg: list[float], vmt: list[float], ops: int, calib: list[tuple[str, float]]) -> None:
    mg_op, vm_op = np.median(mg) / ops * 1e6, np.median(vmt) / ops * 1e6
    print(f"{'per-op cost':<45} {'median us':>10} {'IQR us':>16}")
    for name, val, xs in (("minigraph Executor.run", mg_op, mg), ("Relax VM main", vm_op, vmt)):
        lo, hi = np.percentile(np.asarray(xs) / ops * 1e6, [25, 75])
        print(f"{name:<45} {val:>10.3f} {lo:>7.3f}..{hi:<7.3f}")
    for name, s in calib:
        print(f"{name:<45} {s * 1e6:>10.3f}")
    ratio = mg_op / vm_op
    print(f"ratio minigraph/VM per-op: {ratio:.2f}x")
    print(verdict(ratio <= RATIO_GOAL, f"minigraph per-op <= {RATIO_GOAL}x VM",
                  f"{ratio:.2f}x ({mg_op:.3f} us vs {vm_op:.3f} us)"))


def main(argv: list[str] | None = None) -> int:
    import tvm
    args = parse_args(argv)
    x = np.arange(4, dtype=DTYPE)
    b = np.full(SHAPE, 0.5, dtype=DTYPE)
    with contextlib.ExitStack() as stack:
        out = args.out or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mg-disp-")))
        out.mkdir(parents=True, exist_ok=True)
        ex, vm, module = load_executors(out, args.ops, x, b)
        vm_args = [tvm.runtime.tensor(x), tvm.runtime.tensor(b)]
        print(f"chain of {args.ops} x {KERNEL} (float32[4]); {args.rounds} rounds x "
              f"{args.number} runs each; {check_outputs(ex, vm, vm_args, x + args.ops * b)}")
        print(f"context at start: {context_line()}")
        mg, vmt = interleaved(ex, vm, vm_args, args.number, args.rounds)
        calib = calibration(ex, module, args.calls)
    report(mg, vmt, args.ops, calib)
    return 0


if __name__ == "__main__":
    sys.exit(main())
