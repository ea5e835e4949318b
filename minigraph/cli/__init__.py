"""The minigraph CLI: the only place that prints or exits.

    python -m minigraph build MODEL -o DIR      compile a zoo model or an .onnx file
    python -m minigraph run model.so graph.json  run once, print outputs
    python -m minigraph explain graph.json       nodes, storage plan, inputs and outputs
    python -m minigraph env                      the machine, OS and TVM as a profile sees them
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Callable, Sequence

from .cliargs import add_model_args, int_at_least, positive_int
from .errors import MinigraphError


_seed = int_at_least(0, "a non-negative integer seed")


def cmd_build(args: argparse.Namespace) -> int:
    from .build.compiler import build
    res = build(args.model, args.out, batch=args.batch, dtype=args.dtype, target=args.target,
                policy=args.schedule, vm=not args.no_vm)
    b, mem = res.build_json, res.build_json["memory"]
    print(f"built {args.model} for {b['target']} in {b['build_time_s']:.1f} s: "
          f"{len(res.graph.op_nodes())} ops, {len(res.kernels)} kernels, "
          f"{b['total_flops'] / 1e9:.2f} GFLOP")
    print(f"planned activation memory: {mem['planned_activation_nbytes'] / 2**20:.1f} MiB vs "
          f"{mem['one_buffer_per_entry_nbytes'] / 2**20:.1f} MiB one buffer per entry "
          f"({mem['ratio']:.0%})")
    serial = [k for k, v in b["kernels"].items() if any("serial" in s for s in v["schedule"])]
    if serial:
        print(f"note: {len(serial)} kernels kept serial loops: {', '.join(serial[:5])}")
    print(f"wrote {', '.join(sorted(p.name for p in Path(args.out).iterdir() if not p.name.startswith('.')))} to {args.out}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from .runner import run_once
    for line in run_once(args.lib, args.graph, args.params, args.input, args.out, args.seed,
                         force=args.force):
        print(line)
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    from .explain import explain
    from .graph import in_file, load_graph
    graph = load_graph(args.graph)
    with in_file(args.graph):  # storage-plan errors name the file as parse errors do
        text = explain(graph)
    print(text)
    return 0


def cmd_env(args: argparse.Namespace) -> int:
    from .envinfo import capture_env
    from .report.environment import format_env
    env = capture_env()
    print(format_env(env))  # ends with the warnings section
    return 0


class _Parser(argparse.ArgumentParser):
    """Usage errors in the project's one-line form, ``error: ...``, still exit code 2.
    Subcommand parsers (also those registered by profile_cli/diagnose_cli) inherit it."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"error: {self.prog}: {message} (see `{self.prog} --help`)\n")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="minigraph", description=__doc__.split("\n\n")[0])
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="compile a model into model.so + graph.json + model.params")
    b.add_argument("model", help="zoo name (resnet18, resnet50, mobilenet_v2, mlp, bert-block, "
                                 "tiny-cnn) or a path to an .onnx file")
    b.add_argument("-o", "--out", required=True, help="output directory")
    b.add_argument("--batch", type=positive_int, default=1)
    b.add_argument("--dtype", default="float32", choices=["float32"])
    b.add_argument("--target", default=None, help="LLVM CPU name (default: this machine's)")
    b.add_argument("--schedule", default="default", choices=["default", "none"],
                   help="default: tiled, vectorised, thread-pool parallel; none: TVM's serial "
                        "untuned loops")
    b.add_argument("--no-vm", action="store_true", help="skip model.vm.so")
    b.set_defaults(func=cmd_build)
    r = sub.add_parser("run", help="run once and print each output's shape and checksum")
    add_model_args(r)  # lib, graph, --params, --force: as profile and diagnose take them
    r.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy")
    r.add_argument("--out", default=None, help="save outputs as .npy in this directory")
    r.add_argument("--seed", type=_seed, default=0, help="seed for inputs not given")
    r.set_defaults(func=cmd_run)
    e = sub.add_parser("explain", help="teaching view of graph.json")
    e.add_argument("graph")
    e.set_defaults(func=cmd_explain)
    v = sub.add_parser("env", help="CPU, OS, TVM and thread-pool environment")
    v.set_defaults(func=cmd_env)
    _add_later_commands(sub)
    return p


def _add_later_commands(sub) -> None:
    """Commands whose modules register their own arguments (profile, show, ...)."""
    for name in ("profile_cli", "diagnose_cli"):
        try:
            module = __import__(f"minigraph.{name}", fromlist=["register"])
        except ImportError:
            continue
        module.register(sub)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except MinigraphError as err:
        if args.debug:
            raise
        print(f"error: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `minigraph explain g.json | head`: not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except MemoryError:
        if args.debug:
            raise
        print("error: out of memory; check the shapes in graph.json (`minigraph explain`)",
              file=sys.stderr)
        return 1
    except Exception as err:  # noqa: BLE001 - the CLI never shows a traceback without --debug
        if args.debug:
            raise
        print(f"error: internal error: {type(err).__name__}: {err} "
              "(run with --debug for the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
