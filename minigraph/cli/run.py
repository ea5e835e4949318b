"""``minigraph run``, ``explain`` and ``env``: the shell around runtime/, data/ and the reports."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..artifacts.graph_json import in_file, load_graph
from ..artifacts.library import Abi, classify, is_binary, is_export
from ..artifacts.model_files import ModelFiles, locate
from ..artifacts.params import load_params_file
from ..artifacts.read_once import read_artifacts
from ..errors import InputError
from ..llm.opened import is_llm
from ..measure.environment import capture_env
from ..report.data import data_section
from ..report.environment import format_env
from ..report.explain import explain
from ..report.library import explain_library, format_facts
from ..report.vm_explain import explain_vm
from ..runtime.kernels import check_library_path
from ..runtime.link import link_export
from ..runtime.relax_vm.door import LibraryHost, derive_artifacts
from ..values.run import run_once
from .args import (
    add_model_args,
    add_shape_arg,
    add_wide_arg,
    int_at_least,
    model_files,
    shapes,
    text_width,
)
from .llm import add_llm_run_arguments, cmd_llm_run, refuse_llm_options
from .paths import check_out_dir
from .remote import add_rpc_arguments, run_remote, wants_remote
from .terminal import emit

_seed = int_at_least(0, "a non-negative integer seed")


def add_run_arguments(r: argparse.ArgumentParser) -> None:
    add_model_args(r)  # lib, graph, --params, --force, --fill, --input, --shape: as all take
    r.add_argument("--out", default=None,
                   help="save outputs as output_<i>.npy in this directory (ones already "
                        "there are replaced only with --force)")
    r.add_argument("--seed", type=_seed, default=0, help="seed for inputs not given")
    r.add_argument("--json", dest="json_out", default=None,
                   help="with --rpc-tracker: save every device's outputs as one JSON file")
    add_rpc_arguments(r)
    add_llm_run_arguments(r)


def cmd_run(args: argparse.Namespace) -> int:
    if is_llm(args.model):  # an LLM build or executable: prefill + decode (cli/llm.py)
        return cmd_llm_run(args)
    refuse_llm_options(args)
    if wants_remote(args):  # on the devices behind an RPC tracker (cli/remote.py)
        return run_remote(args, "run", seed=args.seed)
    if args.json_out:
        raise InputError("--json is for --rpc-tracker runs (the devices' outputs)")
    check_out_dir(args)  # no output_<i>.npy over an --input file, nor over one unasked
    done = run_once(model_files(args), args.input, args.out, args.seed, force=args.force,
                    fill=args.fill, symbols=shapes(args))
    emit("\n".join(done.lines))
    data = data_section(done.data)
    if data:
        emit(data)
    return 0


def add_explain_arguments(e: argparse.ArgumentParser) -> None:
    e.add_argument("graph", help="graph.json (TVM graph-executor format); a Relax VM executable "
                                 "(.so): its derived graph and the VM's storage plan; another "
                                 "model library: its era, ABI, kernels and what minigraph can "
                                 "run; or a build directory (its graph.json)")
    e.add_argument("--params", default=None,
                   help="executable only: a param blob giving parameters' shapes")
    add_shape_arg(e)
    add_wide_arg(e)


def _explain_library(path: str, params: str | None, symbols: dict[str, int]) -> str:
    """A library (or a .tar/.o export, linked): a Relax VM executable's derived graph, or what
    any other library is."""
    lib = link_export(path)
    art = read_artifacts(ModelFiles(lib, None, None))
    if art.facts.abi is not Abi.RELAX_VM:
        return explain_library(art.facts)
    d, _ = derive_artifacts(art, LibraryHost(lib, art.facts, art.lib_build),
                            load_params_file(params) if params else None, symbols=symbols)
    return explain_vm(d, str(lib))


def _explain_graph(path: str, width: int | None) -> str:
    graph = load_graph(path)
    with in_file(path):  # storage-plan errors name the file as parse errors do
        return explain(graph, width)


def cmd_explain(args: argparse.Namespace) -> int:
    target = args.graph
    if Path(target).is_dir():  # a build directory: its graph.json, else its library
        files = locate(target)
        target = str(files.graph or files.lib)
    if is_binary(target) or is_export(target):
        emit(_explain_library(target, args.params, shapes(args)))
    elif target.endswith(".so"):
        check_library_path(target)  # a missing library: say so, not "no such graph.json"
        emit(_explain_library(target, args.params, shapes(args)))
    else:
        emit(_explain_graph(target, text_width(args)))
    return 0


def add_env_arguments(v: argparse.ArgumentParser) -> None:
    v.add_argument("lib", nargs="?", default=None,
                   help="also say what this model library is: era, ABI, kernels, support")


def cmd_env(args: argparse.Namespace) -> int:
    # the library is read first: a bad file fails before the slow capture
    library = format_facts(classify(link_export(args.lib))) if args.lib is not None else None
    emit(format_env(capture_env()))  # ends with the warnings section
    if library is not None:
        emit()
        emit(library)
    return 0
