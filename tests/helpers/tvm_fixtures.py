"""A ResNet-50-shaped pair of TVM reports (Relay VM profiler and debug executor), printed by
tests/helpers/tvm_printer.py from TVM's rules, with a disagreement planted in known kernels."""
from __future__ import annotations

import random

from tvm_printer import Cnt, Dur, as_table, profiled_run

# (relay op chain, input shape, weight shape, output shape, calls) of a ResNet-50's kernels
_STAGES = [(64, 56, 3), (128, 28, 4), (256, 14, 6), (512, 7, 3)]


def kernels() -> list[dict]:
    """Distinct fused kernels: each a hash, a base name, argument shapes and a call count."""
    out = [{"base": "fused_layout_transform", "shapes": "float32[1, 3, 224, 224], "
            "float32[1, 1, 224, 224, 3]", "calls": 1, "us": 90.0,
            "attrs": {"src_layout": "NCHW", "dst_layout": "NCHW3c"}},
           {"base": "fused_nn_contrib_conv2d_NCHWc_add_nn_relu", "shapes":
            "float32[1, 1, 224, 224, 3], float32[4, 1, 7, 7, 3, 16], float32[1, 4, 1, 1, 16], "
            "float32[1, 4, 112, 112, 16]", "calls": 1, "us": 2400.0,
            "attrs": {"data_layout": "NCHW3c", "kernel_layout": "OIHW3i16o", "out_layout": ""}},
           {"base": "fused_nn_max_pool2d", "shapes": "float32[1, 4, 112, 112, 16], "
            "float32[1, 4, 56, 56, 16]", "calls": 1, "us": 300.0,
            "attrs": {"layout": "NCHW16c", "out_layout": ""}}]
    for c, hw, blocks in _STAGES:
        for kind, k, calls in (("fused_nn_contrib_conv2d_NCHWc_add_nn_relu", 1, blocks),
                               ("fused_nn_contrib_conv2d_NCHWc_add_nn_relu", 3, blocks),
                               ("fused_nn_contrib_conv2d_NCHWc_add_add_nn_relu", 1, blocks)):
            shapes = (f"float32[1, {c // 16}, {hw}, {hw}, 16], float32[{c // 16}, {c // 16}, "
                      f"{k}, {k}, 16, 16], float32[1, {c // 16}, 1, 1, 16], "
                      f"float32[1, {c // 16}, {hw}, {hw}, 16]")
            out.append({"base": kind, "shapes": shapes, "calls": calls,
                        "us": 0.02 * c * c * k * k * hw * hw / 1e3 / 16,
                        "attrs": {"data_layout": "NCHW16c", "kernel_layout": "OIHW16i16o",
                                  "out_layout": ""}})
    out += [{"base": "fused_nn_global_avg_pool2d", "shapes": "float32[1, 128, 7, 7, 16], "
             "float32[1, 128, 1, 1, 16]", "calls": 1, "us": 40.0, "attrs": {"layout": "NCHW16c"}},
            {"base": "fused_nn_dense_add", "shapes": "float32[1, 2048], float32[1000, 2048], "
             "float32[1, 1000], float32[1, 1000]", "calls": 1, "us": 600.0, "attrs": {}}]
    rng = random.Random(50)
    for i, k in enumerate(out):
        k["hash"] = f"{rng.getrandbits(64):016x}"
        k["index"] = i
    return out


def _names(ks: list[dict], order: list[int], prefix: str) -> dict[int, str]:
    """TVM's GetUniqueName: the n-th function lowered with a base name gets suffix _n."""
    seen: dict[str, int] = {}
    names = {}
    for i in order:
        base = ks[i]["base"]
        n = seen.get(base, 0)
        seen[base] = n + 1
        names[i] = prefix + base + (f"_{n}" if n else "")
    return names


def reports(slow: dict[int, float], noise: float = 0.04, seed: int = 1) -> tuple[bytes, bytes]:
    """(VM profiler table, debug executor table) of the same model. The builds lower the
    kernels in different orders, so their numbered names differ; B's kernel ``i`` takes
    ``slow[i]`` times A's; every other kernel differs by at most ``noise``."""
    rng = random.Random(seed)
    ks = kernels()
    vm_names = _names(ks, list(range(len(ks))), "")
    ge_names = _names(ks, list(reversed(range(len(ks)))), "tvmgen_default_")
    vm_calls, ge_calls = [], []
    for k in ks:
        for _ in range(k["calls"]):
            base = {"Hash": k["hash"], "Argument Shapes": k["shapes"], **k["attrs"]}
            a = k["us"] * rng.uniform(1 - noise / 2, 1 + noise / 2)
            b = a * slow.get(k["index"], rng.uniform(1 - noise / 2, 1 + noise / 2))
            vm_calls.append({"Name": vm_names[k["index"]], "Duration (us)": Dur(a), **base})
            ge_calls.append({"Name": ge_names[k["index"]], "Duration (us)": Dur(b), **base})
    vm_calls += [{"Name": "VM::AllocStorage", "Duration (us)": Dur(3.5 + i % 3),
                  "VM::Argument Shapes": f"float32[{802816 * (1 + i % 4)}]"} for i in range(20)]
    vm_calls += [{"Name": "VM::AllocTensor", "Duration (us)": Dur(1.25),
                  "Argument Shapes": "float32[1, 4, 56, 56, 16]"} for _ in range(60)]
    a_sum = sum(c["Duration (us)"].us for c in vm_calls)
    b_sum = sum(c["Duration (us)"].us for c in ge_calls)
    vm = as_table(*profiled_run(vm_calls, a_sum * 1.04), {"Number of threads": Cnt(4),
                                                          "Executor": "VM"})
    ge = as_table(*profiled_run(ge_calls, b_sum * 1.01), {"Number of threads": Cnt(4),
                                                          "Executor": "Graph"})
    return vm, ge
