"""The relax-vm door: minigraph on a graph derived from a Relax VM executable vs that VM.

What it measures, on one executable in one process:
1. e2e: minigraph's ``Executor.run`` over the derived graph (the executable's own kernels,
   the VM's storage plan) against the VM's ``time_evaluator`` on the same function with its
   arguments bound by ``save_function``, same data. Goal (informational): within 2%.
2. per-op measuring cost: minigraph's run loop over the same bound arguments with every kernel
   replaced by ``testing.nop`` (what the profile's "executor overhead" is), per op, against the
   cost of one ``set_instrument`` callback pair per VM call instruction (fastest instrumented
   run minus fastest plain run, over the call instructions of one run). Goal: below it.

How: ``--warmup`` untimed runs of each, then ``--rounds`` rounds alternating which goes first;
per round one sample of each (seconds per call, mean of ``--number`` calls). The executable
is ``--exe`` (with ``--params`` for weights passed as arguments), or by default the
``model.vm.so`` + ``model.params`` of a zoo build (``--model``, default resnet50).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from _common import add_build_args, artifacts, context_line, verdict  # noqa: E402

from minigraph.protocols.relax_vm import callback_cost_ns, skipped_call_ns  # noqa: E402
from minigraph.runtime.doors import ModelFiles  # noqa: E402
from minigraph.runtime.relax_vm.door import open_vm  # noqa: E402
from minigraph.runtime.relax_vm.trace import main_args, max_rel_diff  # noqa: E402
from minigraph.values.inputs import random_inputs  # noqa: E402

TOLERANCE = 0.02


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_build_args(p)
    p.add_argument("--exe", type=Path, default=None, help="a Relax VM executable (default: "
                   "model.vm.so of the zoo build of --model)")
    p.add_argument("--params", type=Path, default=None, help="param blob for --exe")
    p.add_argument("--number", type=int, default=5, help="calls per sample (default 5)")
    p.add_argument("--rounds", type=int, default=20, help="samples of each (default 20)")
    p.add_argument("--warmup", type=int, default=3, help="untimed runs of each (default 3)")
    return p.parse_args(argv)


def e2e_rounds(ex, vm, saved: str, number: int, rounds: int, warmup: int
               ) -> tuple[list[float], list[float]]:
    import tvm
    timer = vm.time_evaluator(saved, tvm.cpu(), number=number, repeat=1)
    for _ in range(warmup):
        ex.run()
        vm[saved]()
    mg: list[float] = []
    vmt: list[float] = []
    for r in range(rounds):
        pair = [lambda: mg.append(ex.benchmark(number=number, repeat=1)[0]),
                lambda: vmt.append(timer().results[0])]
        for take in (pair if r % 2 == 0 else pair[::-1]):
            take()
    return mg, vmt


def loop_cost_per_op_ns(ex, number: int = 200, repeat: int = 15) -> float:
    """minigraph's run loop over the same bound arguments, kernels replaced by testing.nop."""
    import tvm
    nop = tvm.get_global_func("testing.nop")
    calls = tuple((nop, op.args) for op in ex.ops)
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter_ns()
        for _ in range(number):
            for fn, args in calls:
                fn(*args)
        samples.append((time.perf_counter_ns() - t0) / number)
    return min(samples) / len(ex.ops)


def instrument_cost_ns(lib: Path, function: str, args: list, passes: int = 15
                       ) -> tuple[float, float]:
    """The set_instrument callback's own cost per call instruction, two ways: (a) fastest
    instrumented run minus fastest plain run, over the calls of one run (both callbacks,
    kernels included: noisy when kernels are long); (b) a lower bound independent of the
    kernels (protocols/relax_vm.py ``skipped_call_ns``: every call skipped)."""
    import tvm
    from tvm import relax
    mod = tvm.runtime.load_module(str(lib))

    def new_vm():
        return relax.VirtualMachine(mod, tvm.cpu())
    vms = {"plain": new_vm(), "inst": new_vm()}
    calls = [0]

    def record(func, symbol, before_run, ret_value, *a) -> int:
        calls[0] += before_run
        return 0  # NO_OP
    vms["inst"].set_instrument(record)
    whole: dict[str, list[float]] = {k: [] for k in vms}
    for vm in vms.values():
        vm.save_function(function, "bench_bound", *args)
    for _ in range(passes):
        for k, vm in vms.items():
            t0 = time.perf_counter_ns()
            vm["bench_bound"]()
            whole[k].append(float(time.perf_counter_ns() - t0))
    n = calls[0] // passes
    floor = skipped_call_ns(new_vm, args, time.perf_counter_ns, function, passes)
    return callback_cost_ns(n, whole["inst"], whole["plain"]), floor


def run(lib: Path, params: Path | None, args: argparse.Namespace) -> int:
    import tvm
    from tvm import relax
    vm = open_vm(ModelFiles(lib, None, params))
    ex, d = vm.executor, vm.derivation
    ex.set_input(**random_inputs(ex, {}, args.seed))
    vm_args = main_args(ex, d)
    vm = relax.VirtualMachine(tvm.runtime.load_module(str(lib)), tvm.cpu())
    vm.save_function(d.function, "bench_bound", *vm_args)
    ex.run()
    out = vm["bench_bound"]()
    out = [out] if isinstance(out, tvm.runtime.Tensor) else list(out)
    diff = max_rel_diff([ex.get_output(i).numpy() for i in range(ex.get_num_outputs())],
                        [o.numpy() for o in out])
    print(f"{lib}: function '{d.function}', {len(ex.ops)} ops; outputs equal to the VM's "
          f"within {diff:.3g} relative; context at start: {context_line()}")
    mg, vmt = e2e_rounds(ex, vm, "bench_bound", args.number, args.rounds, args.warmup)
    loop_ns = loop_cost_per_op_ns(ex)
    inst_ns = instrument_cost_ns(lib, d.function, vm_args)
    print(f"context at end: {context_line()}")
    ratio = statistics.median(mg) / statistics.median(vmt)
    paired = statistics.median(a / b for a, b in zip(mg, vmt))
    print(f"e2e: minigraph median {statistics.median(mg) * 1e3:.3f} ms, VM time_evaluator "
          f"median {statistics.median(vmt) * 1e3:.3f} ms")
    print(f"ratio minigraph/VM: {ratio:.4f} (of medians), {paired:.4f} (median of per-round "
          "ratios)")
    print(verdict(abs(ratio - 1) <= TOLERANCE, f"within {TOLERANCE:.0%} of the VM",
                  f"{(ratio - 1) * 100:+.2f}%"))
    print(verdict(ratio <= 1 + TOLERANCE, f"not slower than the VM by more than "
                  f"{TOLERANCE:.0%} (the VM also allocates and frees its storages every run)",
                  f"{(ratio - 1) * 100:+.2f}%"))
    print(f"per-op measuring cost: minigraph run loop {loop_ns / 1e3:.3f} us per op; VM "
          f"set_instrument {inst_ns[0] / 1e3:.3f} us per call instruction (instrumented - "
          f"plain run), at least {inst_ns[1] / 1e3:.3f} us (one callback per call, calls "
          "skipped)")
    print(verdict(loop_ns < inst_ns[1], "minigraph's per-op cost below set_instrument's "
                  "(its lower bound)", f"{loop_ns / 1e3:.3f} us vs >= {inst_ns[1] / 1e3:.3f} us"))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.exe is not None:
        return run(args.exe, args.params, args)
    with artifacts(args.model, args.out, args.reuse) as out:
        return run(out / "model.vm.so", out / "model.params", args)


if __name__ == "__main__":
    sys.exit(main())
