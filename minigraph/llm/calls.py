"""A request phase as a list of calls, and minigraph's executor that runs it.

A phase (prefill of the prompt, or one decode step) is what the engine does for one model call:
``embed`` (a VM function), ``kv_state_begin_forward``, the model function (``prefill`` or
``decode``), ``kv_state_end_forward``. Each VM function is run once under
``VirtualMachine.set_instrument``, which sees every call instruction with its real arguments
(src/runtime/vm/vm.cc ``RunInstrCall``): the kernels of the executable's library, the KV-cache
builtins (``attention_kv_cache_attention_with_fused_qkv`` and friends: opaque ops, their
function TVM's global function) and the VM's bookkeeping (allocation, shapes, views), which is
the VM's own work and not replayed. The phase's calls then run in minigraph's loop, op by op,
on the same tensors (the VM's storage, kept alive by the recorded arguments), so the dataflow
is the VM's own; ``kv_state_popn`` takes the phase's tokens back out of the cache afterwards,
so a phase can run again on the same cache depth. Counterpart: the graph executor's op-by-op
``Run`` over bound arguments, and the removed ``vm.profile()``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Sequence

# lazy: TVM (~1.2 s to import) is imported where it is called
BOOKKEEPING = ("vm.builtin.alloc", "vm.builtin.make_", "vm.builtin.match_", "vm.builtin.check_",
               "vm.builtin.null_value", "vm.builtin.tuple_", "vm.builtin.copy",
               "vm.builtin.reshape", "vm.builtin.shape_of", "vm.builtin.ensure_zero_offset",
               "runtime.TVMTensorCreateView")
KV_PREFIX = ("vm.builtin.attention_kv_cache", "vm.builtin.kv_state", "vm.builtin.kv_cache",
             "vm.builtin.paged_attention")


def kind_of(name: str) -> str:
    """kernel (a PrimFunc of the library), kv (a KV-cache builtin), or vm (bookkeeping)."""
    if name.startswith(BOOKKEEPING):
        return "vm"
    if name.startswith(KV_PREFIX):
        return "kv"
    return "builtin" if name.startswith("vm.") else "kernel"


@dataclass(frozen=True)
class Call:
    """One op of a phase: who is called, with what (the real objects), and in which function."""

    name: str
    kind: str        # kernel | kv | builtin
    function: str    # the VM function (or "engine") it belongs to
    func: object     # the packed function called
    args: tuple


@dataclass(frozen=True)
class Recorded:
    """A VM function's calls, and the VM's own time between them (ns, set_instrument's view:
    it includes the instrument's callback, a Python call per instruction)."""

    calls: tuple[Call, ...]
    vm_between_ns: int
    wall_ns: int
    first_ns: tuple[int, ...]   # each call's time in this (recorded) run


def record(vm, function: str, args: Sequence) -> tuple[object, Recorded]:
    """Runs ``vm[function](*args)`` once under set_instrument; returns its result and calls."""
    calls: list[Call] = []
    times: list[int] = []
    marks: list[int] = []

    def instrument(func, name, before_run, ret, *a):
        now = time.perf_counter_ns()
        marks.append(now)
        if before_run and kind_of(name) != "vm":
            calls.append(Call(name, kind_of(name), function, func, tuple(a)))
        elif not before_run and kind_of(name) != "vm":
            times.append(now - marks[-2])
        return 0  # run the call as usual

    vm.set_instrument(instrument)
    t0 = time.perf_counter_ns()
    try:
        out = vm[function](*args)
    finally:
        vm.set_instrument(None)
    wall = time.perf_counter_ns() - t0
    return out, Recorded(tuple(calls), wall - sum(times), wall, tuple(times))


def engine_call(name: str, func, args: tuple) -> Call:
    """A call the engine makes around the model function (begin/end_forward)."""
    return Call(name, kind_of(name), "engine", func, args)


def run_timed(calls: Sequence[Call], clock: Callable[[], int] = time.perf_counter_ns
              ) -> list[int]:
    """minigraph's run loop, each call timed on its own (ns)."""
    out = []
    for c in calls:
        t0 = clock()
        c.func(*c.args)
        out.append(clock() - t0)
    return out


def run_nop(calls: Sequence[Call], nop, clock: Callable[[], int] = time.perf_counter_ns) -> int:
    """The same loop over the same arguments with a no-op packed function (ns in all): the
    executor's own cost, measured rather than inferred."""
    t0 = clock()
    for c in calls:
        t1 = clock()
        nop(*c.args)
        _ = clock() - t1
    return clock() - t0
