"""A traced run of the Relax VM, and its cross-check with a derived graph (derive.py).

The second way to learn a VM executable's graph: ``VirtualMachine.set_instrument`` sees every
call instruction with its arguments (src/runtime/vm/vm.cc ``RunInstrCall``). One run records,
per call, the callee and each tensor argument's data pointer, shape and dtype. ``check_trace``
then holds the bytecode derivation to it: the same kernels in the same order with the same
argument shapes, every input read at the address its producer wrote (dataflow), and every
entry of one storage id at one address (the VM's storage identity). The derivation is the
method used (exact, no run needed); the trace is its independent witness.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from ..debug import DebugExecutor
from ..executor import Executor
from ..kernels import tvm_path
from .builtins import is_builtin
from .derive import Derivation

# lazy: TVM (~1.2 s to import) is imported where it is called; TVM-free commands load this module


@dataclass(frozen=True)
class TracedArg:
    ptr: int | None              # data pointer for a tensor, None otherwise
    shape: tuple[int, ...] | None
    dtype: str | None


@dataclass(frozen=True)
class TracedCall:
    symbol: str
    args: tuple[TracedArg, ...]


def _arg(a) -> TracedArg:
    import tvm
    if isinstance(a, tvm.runtime.Tensor):
        return TracedArg(int(a.data_ptr()), tuple(int(d) for d in a.shape), str(a.dtype))
    return TracedArg(None, None, None)


def trace_vm(lib: str | Path, function: str, args: Sequence) -> tuple[list[TracedCall], object]:
    """Runs ``function`` once under ``set_instrument``; (every call in order, its result)."""
    import tvm
    import tvm_ffi
    from tvm import relax
    vm = relax.VirtualMachine(tvm_ffi.load_module(tvm_path(lib)), tvm.cpu(0))
    calls: list[TracedCall] = []

    def record(func, symbol, before_run, ret_value, *call_args) -> int:
        if before_run:
            calls.append(TracedCall(str(symbol), tuple(_arg(a) for a in call_args)))
        return 0  # VMInstrumentReturnKind.NO_OP
    vm.set_instrument(record)
    out = vm[function](*args)
    return calls, out


def main_args(ex: Executor, d: Derivation) -> list:
    """The derived function's arguments, copied from the executor's arg-node entries."""
    params = [ex.graph.nodes[n].name for n in ex.graph.arg_nodes]
    return [ex.get_input(name).copyto(ex.device) for name in params
            if name not in d.constants]


def check_trace(d: Derivation, calls: Sequence[TracedCall]) -> list[str]:
    """What disagrees between the derived graph and a traced run (empty: they agree)."""
    g = d.graph
    functions = {d.function} | {b.name for b in d.builtins if b.role == "inline"}
    shape_funcs = {b.name for b in d.builtins if b.role == "shape"}  # the library's, folded
    kernels = [c for c in calls if not is_builtin(c.symbol) and c.symbol not in functions
               and c.symbol not in shape_funcs]
    ops = [n for n in g.op_nodes() if not n.func_name.startswith("__")]
    problems = []
    if [c.symbol for c in kernels] != [n.func_name for n in ops]:
        problems.append(f"kernel order differs: derived {[n.func_name for n in ops][:8]}..., "
                        f"traced {[c.symbol for c in kernels][:8]}...")
        return problems
    written: dict[int, int] = {}   # entry id -> address the trace saw it at
    sid_ptr: dict[int, int] = {}
    for node, call in zip(ops, kernels):
        ins, outs = g.op_eids(node)
        if len(call.args) != len(ins) + len(outs):
            problems.append(f"node {node.index} '{node.name}': {len(ins) + len(outs)} "
                            f"arguments derived, {len(call.args)} traced")
            continue
        for k, (eid, a) in enumerate(zip(ins + outs, call.args)):
            where = f"node {node.index} '{node.name}' argument {k}"
            if (a.shape, a.dtype) != (g.shapes[eid], g.dltypes[eid]):
                problems.append(f"{where}: derived {g.dltypes[eid]}{list(g.shapes[eid])}, "
                                f"traced {a.dtype}{list(a.shape or ())}")
            _follow(g, eid, a.ptr, k < len(ins), written, sid_ptr, where, problems)
    return problems


def _follow(g, eid: int, ptr: int | None, is_input: bool, written: dict, sid_ptr: dict,
            where: str, problems: list) -> None:
    """Dataflow (an input is read where it was written) and storage identity (one address
    per storage id) for one argument."""
    if ptr is None:
        problems.append(f"{where}: traced argument is not a tensor")
        return
    if is_input and eid in written and written[eid] != ptr:
        problems.append(f"{where}: reads entry {eid} at {ptr:#x}, written at {written[eid]:#x}")
    written.setdefault(eid, ptr)
    sid = g.storage_ids[eid]
    if sid_ptr.setdefault(sid, ptr) != ptr:
        problems.append(f"{where}: storage id {sid} seen at {ptr:#x} and {sid_ptr[sid]:#x}")


def _flatten(value) -> list:
    import tvm
    if isinstance(value, tvm.runtime.Tensor):
        return [value.numpy()]
    return [x for v in value for x in _flatten(v)]


def max_rel_diff(ours: Sequence, theirs: Sequence) -> float:
    """Largest |a - b| / max(|b|, tiny) over every element of every output pair."""
    worst = 0.0
    for a, b in zip(ours, theirs):
        a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
        if a64.size:
            den = np.maximum(np.abs(b64), np.finfo(np.float64).tiny)
            worst = max(worst, float(np.max(np.abs(a64 - b64) / den)))
    return worst


def verify(ex: DebugExecutor, d: Derivation, lib: str | Path, rtol: float = 1e-5
           ) -> tuple[list[str], str]:
    """Runs the executor (inputs already set) and the VM under the instrument on the same
    arguments: (problems, a one-line summary). Outputs must agree within ``rtol``."""
    ex.run_checked()
    ours = [ex.get_output(i).numpy() for i in range(ex.get_num_outputs())]
    calls, out = trace_vm(lib, d.function, main_args(ex, d))
    problems = check_trace(d, calls)
    theirs = _flatten(out)
    if [a.shape for a in ours] != [b.shape for b in theirs]:
        problems.append(f"output shapes differ: {[a.shape for a in ours]} vs "
                        f"{[b.shape for b in theirs]}")
        return problems, "outputs differ"
    diff = max_rel_diff(ours, theirs)
    if diff > rtol:
        problems.append(f"outputs differ from the VM's: max relative difference {diff:.3g}")
    kernels = sum(1 for n in d.graph.op_nodes() if not n.func_name.startswith("__"))
    return problems, (f"{kernels} kernel calls agree with a traced VM run (order, shapes, "
                      f"dataflow, storage); outputs within {diff:.3g} relative of the VM's")
