"""``minigraph run``, ``explain`` and ``env``: the shell around runtime/ and the reports."""
from __future__ import annotations

import argparse

from .args import add_model_args, add_wide_arg, int_at_least, model_files, text_width
from .remote import add_rpc_arguments, wants_remote

_seed = int_at_least(0, "a non-negative integer seed")


def add_run_arguments(r: argparse.ArgumentParser) -> None:
    add_model_args(r)  # lib, graph, --params, --force: as profile and diagnose take them
    r.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                   help="an input from a .npy file (repeatable); others get seeded random data")
    r.add_argument("--out", default=None, help="save outputs as .npy in this directory")
    r.add_argument("--seed", type=_seed, default=0, help="seed for inputs not given")
    r.add_argument("--json", dest="json_out", default=None,
                   help="with --rpc-tracker: save every device's outputs as one JSON file")
    add_rpc_arguments(r)


def cmd_run(args: argparse.Namespace) -> int:
    if wants_remote(args):  # on the devices behind an RPC tracker (cli/remote.py)
        from .remote import run_remote
        return run_remote(args, "run", seed=args.seed)
    if args.json_out:
        from ..errors import InputError
        raise InputError("--json is for --rpc-tracker runs (the devices' outputs)")
    from ..data.inputs import run_once
    for line in run_once(model_files(args), args.input, args.out, args.seed, force=args.force):
        print(line)
    return 0


def add_explain_arguments(e: argparse.ArgumentParser) -> None:
    e.add_argument("graph", help="graph.json (TVM graph-executor format); a Relax VM executable "
                                 "(.so): its derived graph and the VM's storage plan; or another "
                                 "model library: its era, ABI, kernels and what minigraph can run")
    e.add_argument("--params", default=None,
                   help="executable only: a param blob giving parameters' shapes")
    add_wide_arg(e)


def cmd_explain(args: argparse.Namespace) -> int:
    from ..report.library import explain_library
    from .vm import explain_executable, is_library
    text = explain_library(args.graph)  # None unless a library (other than a Relax VM one)
    if text is not None:
        print(text)
        return 0
    if is_library(args.graph) or args.graph.endswith(".so"):  # (a missing .so: say so)
        print(explain_executable(args.graph, args.params))
        return 0
    from ..artifacts.graph_json import in_file, load_graph
    from ..report.explain import explain
    graph = load_graph(args.graph)
    with in_file(args.graph):  # storage-plan errors name the file as parse errors do
        text = explain(graph, text_width(args))
    print(text)
    return 0


def add_env_arguments(v: argparse.ArgumentParser) -> None:
    v.add_argument("lib", nargs="?", default=None,
                   help="also say what this model library is: era, ABI, kernels, support")


def cmd_env(args: argparse.Namespace) -> int:
    from ..measure.environment import capture_env
    from ..report.environment import format_env
    if args.lib is not None:  # read first: a bad file fails before the slow capture
        from ..report.library import describe_library
        library = describe_library(args.lib)
    print(format_env(capture_env()))  # ends with the warnings section
    if args.lib is not None:
        print()
        print(library)
    return 0
