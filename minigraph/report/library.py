"""What a model library is, as text: era, ABI variant, kernels, runtime needs, what cannot run.

Shown by ``minigraph env LIB`` and ``minigraph explain LIB`` (the facts come from
artifacts/library.py ``classify``, read from the file without loading it).
"""
from __future__ import annotations

from ..artifacts.graph_json import in_file, parse_graph
from ..artifacts.library import Abi, LibraryFacts
from ..runtime.legacy.packed import missing
from .explain import explain

_MAX_LISTED = 40
_SERVED_BY = {"TVMAPISetLastError": "minigraph's callback: the kernel's assert text becomes the "
                                    "op's error",
              "TVMBackendParallelLaunch": "TVM 0.27's thread pool",
              "TVMBackendParallelBarrier": "TVM 0.27's thread pool",
              "TVMBackendAllocWorkspace": "TVM 0.27's workspace pool",
              "TVMBackendFreeWorkspace": "TVM 0.27's workspace pool",
              "TVMBackendRegisterSystemLibSymbol": "neutralised: minigraph finds the kernels "
                                                   "by their exported names",
              "TVMBackendGetFuncFromEnv": "TVM 0.27's global functions, where it has them",
              "TVMFuncCall": "TVM 0.27's global functions, where it has them"}


def _kernels(facts: LibraryFacts) -> list[str]:
    arity = dict(facts.arity)
    shown = [f"    {k}" + (f"  ({arity[k]} args)" if k in arity else "")
             for k in facts.kernels[:_MAX_LISTED]]
    more = len(facts.kernels) - _MAX_LISTED
    return shown + ([f"    ... and {more} more"] if more > 0 else [])


def _missing(facts: LibraryFacts) -> tuple[str, ...]:
    return missing(facts.packed)


def _verdict(facts: LibraryFacts) -> str:
    absent = _missing(facts)
    if facts.unsupported or absent:
        return "no: " + "; ".join(list(facts.unsupported) + [
            f"TVM 0.27 lacks the packed functions {', '.join(absent)}"] * bool(absent))
    if facts.legacy:
        graph = "its embedded graph" if facts.factory else "its graph.json"
        return (f"yes, through the legacy door with {graph} "
                "(`minigraph run|profile|diagnose LIB [GRAPH.json]`)")
    if facts.abi is Abi.TVM_FFI:
        return "yes, through the graph door with its graph.json"
    if facts.abi is Abi.RELAX_VM:
        return "as a Relax VM executable"
    return "no: it exports no TVM kernels"


def format_facts(facts: LibraryFacts) -> str:
    lines = [f"library: {facts.path}", f"  era: {facts.era}", f"  ABI: {facts.variant}",
             f"  kernels: {len(facts.kernels)}"
             + (f", argument counts read for {len(facts.arity)}" if facts.legacy else "")]
    lines += _kernels(facts)
    if facts.legacy:
        uses = [f"    {u}: {_SERVED_BY.get(u, 'served')}" for u in facts.uses]
        lines += ["  runtime functions its kernels call:"] + (uses or ["    none"])
        absent = _missing(facts)
        lines += [f"  packed function {n}: " + ("TVM 0.27 lacks it" if n in absent else
                                                "served by TVM 0.27") for n in facts.packed]
    if facts.modules:
        lines.append(f"  modules in __tvm_dev_mblob: {', '.join(facts.modules)}")
    if facts.factory is not None:
        lines.append(f"  embedded by export_library: graph.json ({len(facts.factory.graph_json)} "
                     f"bytes) and params ({len(facts.factory.params_blob)} bytes), module "
                     f"'{facts.factory.module_name}'")
    lines.append("  unsupported: " + ("; ".join(facts.unsupported) or "nothing found"))
    lines.append(f"  minigraph can run it: {_verdict(facts)}")
    return "\n".join(lines)


def explain_library(facts: LibraryFacts) -> str:
    """``explain`` on a library that is not a Relax VM executable (that one is explained from
    its executable): its facts, and the teaching view of the graph it embeds, if any."""
    text = format_facts(facts)
    if facts.factory is not None:
        with in_file(f"{facts.path} (embedded graph)"):
            text += "\n\nembedded graph:\n" + explain(parse_graph(facts.factory.graph_json))
    return text
