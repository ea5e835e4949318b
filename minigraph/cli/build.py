"""``minigraph build``: the shell around build/compiler.py."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..artifacts.buildinfo import built_for_cpu
from .args import positive_int
from .llm import cmd_llm_build
from .terminal import emit


def add_arguments(b: argparse.ArgumentParser) -> None:
    b.add_argument("model", help="zoo name (resnet18, resnet50, mobilenet_v2, mlp, bert-block, "
                                 "tiny-cnn), a path to an .onnx file, or an LLM: llama-tiny, "
                                 "llama-100m (seeded weights) or a Hugging Face folder "
                                 "(config.json + *.safetensors; Llama, Qwen2)")
    b.add_argument("-o", "--out", required=True,
                   help="output directory; the files appear there together when the build "
                        "is complete (a failed or interrupted build leaves it as it was)")
    b.add_argument("--batch", type=positive_int, default=1, help="batch size (default 1)")
    b.add_argument("--dtype", default="float32", choices=["float32"],
                   help="element type (default float32)")
    b.add_argument("--target", default=None, help="LLVM CPU name (default: this machine's)")
    b.add_argument("--schedule", default="default", choices=["default", "none"],
                   help="default: tiled, vectorised, thread-pool parallel; none: TVM's serial "
                        "untuned loops")
    b.add_argument("--tune", action="store_true",
                   help="measure each conv's register tile among the candidates the schedule "
                        "ranks, on this machine at the executor's thread count (TVM_NUM_THREADS, "
                        "else every CPU); choices are cached in ~/.cache/minigraph/tiles.json")
    b.add_argument("--no-winograd", action="store_true",
                   help="every conv by the direct rule: no Winograd F(4x4,3x3)/F(2x2,3x3) for "
                        "the 3x3 stride-1 convs where it pays")
    b.add_argument("--no-vm", action="store_true", help="skip model.vm.so (the Relax VM build that "
                                                    "diagnose's protocols compare with)")


def cmd_build(args: argparse.Namespace) -> int:
    # lazy on purpose: llm/build.py imports TVM's Relax (seconds); only this command needs it
    from ..llm.build import is_llm_source
    if is_llm_source(args.model):  # a built-in LLM or a Hugging Face folder (cli/llm.py)
        return cmd_llm_build(args)
    # lazy on purpose: the compiler imports TVM's Relax (seconds); only this command needs it
    from ..compiler.compiler import ARTIFACTS, build
    try:
        res = build(args.model, args.out, batch=args.batch, dtype=args.dtype,
                    target=args.target, policy=args.schedule, vm=not args.no_vm,
                    tune=args.tune, winograd=not args.no_winograd)
    except KeyboardInterrupt:
        emit(f"error: interrupted; {args.out} was left as it was", file=sys.stderr)
        return 130
    b, mem = res.build_json, res.build_json["memory"]
    emit(f"built {args.model} for {_cpu(b['target'])} in {b['build_time_s']:.1f} s: "
          f"{len(res.graph.op_nodes())} ops, {len(res.kernels)} kernels, "
          f"{b['total_flops'] / 1e9:.2f} GFLOP" + _direct(b))
    emit(f"planned activation memory: {mem['planned_activation_nbytes'] / 2**20:.1f} MiB vs "
          f"{mem['one_buffer_per_entry_nbytes'] / 2**20:.1f} MiB one buffer per entry "
          f"({mem['ratio']:.0%})")
    if b.get("tuning"):
        t = b["tuning"]
        emit(f"tuned conv tiles at {t['threads']} threads in {t['seconds']:.1f} s: "
             f"{t['measured']} measured, {t['cached']} from the cache")
        a = t["algorithms"]
        if a["measured"] or a["cached"]:
            emit(f"chose 3x3 conv algorithms by measurement at {t['threads']} threads: "
                 f"{a['measured']} measured, {a['cached']} from the cache")
    serial = [k for k, v in b["kernels"].items() if any("serial" in s for s in v["schedule"])]
    if serial:
        emit(f"note: {len(serial)} kernels kept serial loops: {', '.join(serial[:5])}")
    # the build's own set only: the install removed the ARTIFACTS it did not write (no
    # model.vm.so with --no-vm), and the user's files beside them are not "wrote"
    names = sorted(n for n in ARTIFACTS if (Path(args.out) / n).is_file())
    emit(f"wrote {', '.join(names)} to {args.out}")
    return 0


def _direct(b: dict) -> str:
    """Where the conv algorithms changed what the kernels execute: the direct convs' count
    beside the executed one, and how many convs are Winograd's or padded."""
    algorithms = [c["algorithm"] for c in b["conv_algorithms"]]
    said = [f"{n} {what}" for n, what in (
        (sum(a.startswith("winograd") for a in algorithms), "convs by Winograd"),
        (sum("padded" in a for a in algorithms), "with output channels padded to whole vectors"))
        if n]
    if not said:
        return ""
    return f" ({b['direct_flops'] / 1e9:.2f} as direct convs; {'; '.join(said)})"


def _cpu(target: str) -> str:
    """'LLVM, CPU <mcpu>' from the target build.json records (the whole target stays there)."""
    mcpu = built_for_cpu({"target": target})
    return f"LLVM, CPU {mcpu}" if mcpu else target
