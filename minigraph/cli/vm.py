"""``minigraph import``: a Relax VM executable -> graph.json + model.params + model.so, the
shell around compiler/vm_import.py."""
from __future__ import annotations

import argparse

from ..compiler.vm_import import import_executable
from .args import add_shape_arg, int_at_least, shapes
from .terminal import emit


def add_import_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="EXECUTABLE",
                   help="a Relax VM executable (tvm.compile(...).export_library)")
    p.add_argument("-o", "--out", required=True, metavar="DIR",
                   help="directory for graph.json, model.params, model.so, import.json: not "
                        "the executable's own, and files there an earlier import did not "
                        "write (another model's build) are replaced only with --force")
    p.add_argument("--params", default=None,
                   help="TVM param blob or numpy .npz with values for the function's parameters (weights "
                        "passed as arguments); written into model.params")
    p.add_argument("--function", default=None,
                   help="the Relax function to derive (default: main, or the only one)")
    p.add_argument("--no-verify", action="store_true",
                   help="skip the cross-check against a traced run of the VM")
    p.add_argument("--seed", type=int_at_least(0), default=0,
                   help="seed of the data the cross-check runs on")
    p.add_argument("--force", action="store_true",
                   help="replace files in DIR that no earlier import wrote (another model's "
                        "build: its build.json and model.vm.so go too); allocate even if the "
                        "storage plan looks too large for available memory")
    add_shape_arg(p)


def cmd_import(args: argparse.Namespace) -> int:
    r = import_executable(args.model, args.out, args.params, function=args.function,
                          verify=not args.no_verify, seed=args.seed, force=args.force,
                          symbols=shapes(args))
    g = r.derivation.graph
    sizes = ", ".join(f"{k}={v}" for k, v in r.derivation.sizes.items())
    emit(f"derived '{r.derivation.function}': {len(g.op_nodes())} ops, {len(g.nodes)} nodes, "
          f"{len(set(g.storage_ids))} storage ids" + (f"; at {sizes}" if sizes else ""))
    emit("cross-check: " + (r.verified or "skipped (--no-verify)"))
    for note in r.derivation.notes:
        emit(f"note: {note}")
    if r.unbound:
        emit(f"note: no values for {', '.join(r.unbound[:6])} in model.params (pass --params "
              "to include them); minigraph binds seeded data to them")
    if r.replaced:
        emit(f"note: --force: replaced {', '.join(r.replaced)} in {r.out_dir}, which no "
             "import wrote")
    emit("wrote " + ", ".join(str(p) for p in r.written))
    return 0
