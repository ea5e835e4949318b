"""TVM 0.27's own Relax VM over ``model.vm.so`` (the same scheduled kernels as model.so).

- ``relax_vm_e2e``: ``VirtualMachine.time_evaluator`` on ``main`` with its arguments bound once by
  ``save_function`` (``python/tvm/runtime/vm.py``): untimed first call, number x repeat, no flush.
- ``relax_vm_instrument``: ``VirtualMachine.set_instrument(f)``; per ``src/runtime/vm/vm.cc``
  (``RunInstrCall``) ``f(func, func_symbol, before_run, ret_value, *args)`` is called before and
  after every Call instruction (builtins included); returning ``VMInstrumentReturnKind.SKIP_RUN``
  (1) from the "before" call skips the call. Each call's window is clock() in the before
  callback to clock() in the after callback, so it contains the kernel plus the VM's and the
  Python FFI's cost between the two callbacks (arguments are converted to Python objects each
  time); that cost is measured and stated in the notes.

VM kernel names are the Relax PrimFunc names (``fused_conv2d1_add1_relu1``, ``max_pool2d``);
graph.json's are ``tvmgen_default_fused_*`` with structurally identical kernels deduplicated
into one symbol (``build/compiler.py``), so names are mapped with build.json's ``vm_names``,
then by occurrence order per symbol. Calls or ops that cannot be mapped are reported, not guessed.
"""
from __future__ import annotations

import math
import statistics
from collections import deque
from pathlib import Path
from typing import Callable, Mapping, Sequence

from ..artifacts.buildinfo import check_digest, read_build
from ..errors import last_line
from ..measure.clock import Clock
from ..results.protocols import ProtocolResult, skipped
from ..runtime.executor import Executor
from ..runtime.kernels import tvm_path
from ..runtime.opened import VmReference
from ..runtime.relax_vm.builtins import is_builtin
from .settings import ProtocolSettings

# lazy: TVM (~1.2 s to import) is imported where it is called; TVM-free commands load this module

SAVED = "minigraph_protocols_main"


def load_vm_names(vm_lib: Path) -> dict[str, str]:
    """VM kernel name -> graph func_name, from build.json beside model.vm.so ({} if absent)."""
    return vm_names_of(read_build(vm_lib))  # size-capped, format-checked, {} if absent


def vm_names_of(build: dict) -> dict[str, str]:
    """build.json's (``build``, as read_build returned it) VM kernel name -> func_name."""
    names = build.get("vm_names")
    return dict(names) if isinstance(names, dict) else {}


def graph_symbol(vm_name: str, vm_names: Mapping[str, str]) -> str:
    """build.json's mapping, else the compiler's naming rule (exact unless deduplicated, and a
    deduplicated kernel's rule-derived name matches no op, so it is reported as unmapped)."""
    if vm_name in vm_names:
        return vm_names[vm_name]
    return "tvmgen_default_" + (vm_name if vm_name.startswith("fused_") else f"fused_{vm_name}")


def is_kernel_call(func_symbol: str) -> bool:
    """VM builtins (alloc_storage, match_shape, null_value, ...) are named ``vm.*``; a few
    runtime functions the VM's lowering calls (views) are builtins too."""
    return not is_builtin(func_symbol)


def map_calls(calls: Sequence[str], op_funcs: Sequence[str], vm_names: Mapping[str, str]
              ) -> tuple[tuple[int | None, ...], tuple[int, ...], tuple[str, ...]]:
    """Kernel calls (in VM order) -> op index by symbol and occurrence order.

    Returns (op index or None per call, op indices left unmapped, call names left unmapped)."""
    queues: dict[str, deque[int]] = {}
    for i, func in enumerate(op_funcs):
        queues.setdefault(func, deque()).append(i)
    mapped: list[int | None] = []
    for name in calls:
        q = queues.get(graph_symbol(name, vm_names))
        mapped.append(q.popleft() if q else None)
    left_ops = tuple(sorted(i for q in queues.values() for i in q))
    left_calls = tuple(c for c, m in zip(calls, mapped) if m is None)
    return tuple(mapped), left_ops, left_calls


class Recorder:
    """The instrument callback: one (func_symbol, window ns) per Call instruction."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.stack: list[int] = []
        self.windows: list[tuple[str, float]] = []

    def __call__(self, func, func_symbol, before_run, ret_value, *args) -> int:
        t = self.clock()
        if before_run:
            self.stack.append(t)
        else:
            self.windows.append((str(func_symbol), float(t - self.stack.pop())))
        return 0  # VMInstrumentReturnKind.NO_OP


def _open_vm(ex: Executor, vm_lib: Path, function: str, build: dict
             ) -> tuple[Callable[[], object], list]:
    """A VM factory for model.vm.so and ``function``'s arguments (inputs + weights), copied
    from the executor's arg-node entries by VM parameter name (``build``: the build.json
    beside ``vm_lib``)."""
    import tvm
    import tvm_ffi
    check_digest(vm_lib, build)  # a damaged model.vm.so is refused before dlopen, as model.so
    mod = tvm_ffi.load_module(tvm_path(vm_lib))

    def new_vm():
        return tvm.relax.VirtualMachine(mod, ex.device)
    vm = new_vm()
    names = [vm._get_function_param_name(function, i)
             for i in range(vm._get_function_arity(function))]
    known = set(ex.input_names())
    missing = [n for n in names if n not in known]
    if missing:
        raise LookupError(f"VM main parameters not among graph inputs/params: {missing[:5]}")
    # copies of the entries made on the device in one step (no round trip through numpy)
    return new_vm, [ex.get_input(n).copyto(ex.device) for n in names]


def relax_vm_e2e(new_vm: Callable[[], object], args: list, ex: Executor,
                 s: ProtocolSettings, function: str = "main") -> ProtocolResult:
    """``vm.time_evaluator`` on main with arguments bound by ``save_function``."""
    vm = new_vm()
    vm.save_function(function, SAVED, *args)
    te = vm.time_evaluator(SAVED, ex.device, number=s.vm_number, repeat=s.vm_repeat,
                           min_repeat_ms=0)
    samples = tuple(r * 1e9 for r in te().results)
    desc = (f"TVM 0.27 relax.VirtualMachine.time_evaluator('{function}', args bound by "
            "save_function):"
            f" untimed 1st call, number={s.vm_number} x repeat={s.vm_repeat}, no flush; mean")
    return ProtocolResult("relax_vm_e2e", desc, None, math.fsum(samples) / len(samples), samples,
                          ("timed by TVM's C++ timer, not the injected clock",))


def _passes(new_vm: Callable[[], object], args: list, s: ProtocolSettings, clock: Clock,
            function: str = "main"
            ) -> tuple[list[list[tuple[str, float]]], list[float], list[float]]:
    """Warm-ups, then ``vm_passes`` rounds of (instrumented main, plain main), both timed whole."""
    rec, vm_i, vm_p = Recorder(clock), new_vm(), new_vm()
    vm_i.set_instrument(rec)
    for vm in (vm_i, vm_p):
        vm.save_function(function, SAVED, *args)
    f_i, f_p = vm_i[SAVED], vm_p[SAVED]
    for _ in range(s.vm_warmups):
        f_i(), f_p()
    windows, whole_i, whole_p = [], [], []
    for _ in range(s.vm_passes):
        rec.windows = []
        t0 = clock()
        f_i()
        whole_i.append(float(clock() - t0))
        windows.append(rec.windows)
        t0 = clock()
        f_p()
        whole_p.append(float(clock() - t0))
    return windows, whole_i, whole_p


def callback_cost_ns(n_calls: int, whole_i: list[float], whole_p: list[float]) -> float:
    """The instrument's own cost per call instruction: fastest instrumented minus fastest
    plain run, over the calls of one run."""
    return (min(whole_i) - min(whole_p)) / max(n_calls, 1)


def skipped_call_ns(new_vm: Callable[[], object], args: list, clock: Clock,
                    function: str = "main", passes: int = 5) -> float:
    """A lower bound of the instrument's cost per call instruction that no kernel time can
    blur: every "before" callback returns SKIP_RUN, so a run is the VM's dispatch plus one
    Python callback per call instruction, and nothing is executed."""
    vm, calls = new_vm(), [0]

    def skip(func, func_symbol, before_run, ret_value, *args) -> int:
        calls[0] += 1
        return 1  # VMInstrumentReturnKind.SKIP_RUN; "after" is then never called
    vm.set_instrument(skip)
    vm.save_function(function, SAVED, *args)
    f = vm[SAVED]
    f()
    n, best = calls[0], math.inf
    for _ in range(passes):
        t0 = clock()
        f()
        best = min(best, float(clock() - t0))
    return best / max(n, 1)


def _cost_notes(windows: list[tuple[str, float]], whole_i: list[float], whole_p: list[float]
                ) -> list[str]:
    """The instrument's own cost: fastest instrumented minus fastest plain run, per call
    instruction, and the window of a no-op builtin (the cost inside every per-op window)."""
    n, fast_i, fast_p = len(windows), min(whole_i), min(whole_p)
    per_call = callback_cost_ns(n, whole_i, whole_p)
    notes = [f"callback cost: fastest instrumented main {fast_i / 1e6:.3f} ms vs plain "
             f"{fast_p / 1e6:.3f} ms over {n} call instructions = {per_call / 1e3:.2f} us per "
             "call (two Python callbacks each)"
             + (" -- below run-to-run noise here" if per_call <= 0 else "")]
    noop = [w for name, w in windows if name == "vm.builtin.null_value"]
    if noop:
        notes.append(f"window of the no-op builtin vm.builtin.null_value (median of {len(noop)}):"
                     f" {statistics.median(noop) / 1e3:.2f} us; every per-op window includes "
                     "about this much callback/FFI cost")
    return notes


def relax_vm_instrument(new_vm: Callable[[], object], args: list, ex: Executor,
                        s: ProtocolSettings, clock: Clock, vm_names: Mapping[str, str],
                        function: str = "main") -> ProtocolResult:
    """Per-call windows from ``set_instrument``, mapped onto ``ex.ops``; median over passes."""
    windows, whole_i, whole_p = _passes(new_vm, args, s, clock, function)
    kernels = [[w for w in ws if is_kernel_call(w[0])] for ws in windows]
    calls = [name for name, _ in kernels[0]]
    mapped, left_ops, left_calls = map_calls(calls, [op.func_name for op in ex.ops], vm_names)
    per_op: list[float | None] = [None] * len(ex.ops)
    for c, i in enumerate(mapped):
        if i is not None:
            per_op[i] = statistics.median(ks[c][1] for ks in kernels)
    samples = tuple(math.fsum(ks[c][1] for c, i in enumerate(mapped) if i is not None)
                    for ks in kernels)
    notes = _cost_notes(windows[0], whole_i, whole_p)
    floor = skipped_call_ns(new_vm, args, clock, function)
    notes.append(f"callback cost with every call skipped (SKIP_RUN, one callback per call, no "
                 f"kernel runs): {floor / 1e3:.2f} us per call instruction, a lower bound")
    if left_ops:
        notes.append(f"ops without a VM call: {[ex.ops[i].name for i in left_ops]}")
    if left_calls:
        notes.append(f"VM kernel calls not mapped to an op: {list(left_calls)}")
    order = [i for i in mapped if i is not None]
    if order != sorted(order):
        notes.append("VM call order differs from graph.json's op order")
    desc = (f"TVM 0.27 VirtualMachine.set_instrument: {s.vm_warmups} warm-up(s), {s.vm_passes} "
            "instrumented pass(es), per call clock() before->after callback; per op median, "
            "total = sum of mapped kernels")
    total = math.fsum(v for v in per_op if v is not None)
    return ProtocolResult("relax_vm_instrument", desc, tuple(per_op), total, samples,
                          tuple(notes), floor)


def measure_vm(ex: Executor, vm: VmReference, keys: Sequence[str], s: ProtocolSettings,
               clock: Clock) -> list[ProtocolResult]:
    """The requested Relax VM protocols on ``vm``, or one skip note each if its executable
    cannot be used."""
    if vm.lib is None or not Path(vm.lib).is_file():
        return [skipped(k, f"no Relax VM library ({vm.lib or 'vm_lib=None'})") for k in keys]
    try:
        new_vm, args = _open_vm(ex, Path(vm.lib), vm.function, vm.build)
    except Exception as err:  # a stale or foreign model.vm.so must not stop the other protocols
        return [skipped(k, f"cannot use {vm.lib}: {last_line(err)}") for k in keys]
    names = vm_names_of(vm.build) if vm.names is None else vm.names
    out = []
    if "relax_vm_e2e" in keys:
        out.append(relax_vm_e2e(new_vm, args, ex, s, vm.function))
    if "relax_vm_instrument" in keys:
        out.append(relax_vm_instrument(new_vm, args, ex, s, clock, names, vm.function))
    return out
