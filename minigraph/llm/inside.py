"""Inside the attention builtin: the paged KV cache's own TIR kernels, timed on their real
arguments.

``attention_kv_cache_attention_with_fused_qkv`` is one call in the VM's bytecode, but the KV
cache (src/runtime/vm/paged_kv_cache.cc) calls the kernels it was created with from C++:
RoPE and the append of K and V (``tir_split_rotary``, ``kv_cache_transpose_append``), prefill
attention over the new tokens (ragged) and over the pages, decode attention, the merge of
partial states. ``set_instrument`` never sees them. Here a second cache is created by calling
``vm.builtin.paged_attention_kv_cache_create`` with the arguments the executable's own
creation function passed (recorded with set_instrument), each kernel wrapped in a timer that
calls the real kernel with the arguments the cache gives it. Counterpart: none in TVM or
MLC-LLM (their debug tools skip ``vm.builtin.*`` calls altogether).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Sequence

# lazy: TVM (~1.2 s to import) is imported where it is called
CREATE = "vm.builtin.paged_attention_kv_cache_create"
# the kernels' places in TVM 0.27's TIRPagedKVCache argument list (its llvm branch);
# an argument elsewhere that is a function is timed under its place ("kernel #i")
ROLES = {13: "kv_cache_transpose_append", 14: "kv_cache_transpose_append_mla",
         15: "attention_prefill_ragged", 16: "attention_prefill (paged)",
         17: "attention_decode", 18: "attention_prefill_sliding_window",
         19: "attention_decode_sliding_window", 20: "attention_prefill_with_tree_mask",
         21: "attention_prefill_with_tree_mask_paged", 22: "attention_prefill_mla",
         23: "attention_merge_state", 24: "split_rotary (RoPE)", 25: "copy_single_page",
         26: "debug_get_kv", 27: "compact_kv_copy"}


@dataclass
class Timers:
    """Per kernel: calls and ns since the last ``reset`` (filled by the wrapped kernels)."""

    ns: dict[str, int] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)

    def reset(self) -> None:
        self.ns.clear()
        self.calls.clear()

    def wrap(self, name: str, func):
        import tvm_ffi

        def timed(*args):
            t0 = time.perf_counter_ns()
            func(*args)
            self.ns[name] = self.ns.get(name, 0) + time.perf_counter_ns() - t0
            self.calls[name] = self.calls.get(name, 0) + 1
        return tvm_ffi.convert(timed)


def _wrapped(timers: Timers, i: int, arg):
    """The creation argument with every function in it wrapped (tuples: ("tirx", f))."""
    import tvm_ffi
    name = ROLES.get(i, f"kernel #{i}")
    if isinstance(arg, tvm_ffi.Function):
        return timers.wrap(name, arg)
    if isinstance(arg, tvm_ffi.Array):
        return [timers.wrap(name, a) if isinstance(a, tvm_ffi.Function) else a for a in arg]
    return arg


def timed_cache(vm, create: str, sizes: Sequence[int]) -> tuple[object, Timers]:
    """A KV cache like ``vm[create](*sizes)`` makes, whose kernels are timed."""
    import tvm
    from tvm.runtime import ShapeTuple
    seen: dict[str, tuple] = {}

    def instrument(func, name, before_run, ret, *args):
        if before_run and name == CREATE:
            seen["args"] = args
        return 0
    vm.set_instrument(instrument)
    try:
        vm[create](*(ShapeTuple([s]) for s in sizes))
    finally:
        vm.set_instrument(None)
    if "args" not in seen:
        raise RuntimeError(f"{create} did not call {CREATE}")
    timers = Timers()
    args = [_wrapped(timers, i, a) for i, a in enumerate(seen["args"])]
    return tvm.get_global_func(CREATE)(*args), timers
