"""``minigraph profile``: the shell around profile/ and report/ (show and compare: saved.py)."""
from __future__ import annotations

import argparse
import os
import sys
import time

from ..errors import InputError
from ..fileio import write_outputs
from ..fileio.jsontext import document_text
from ..measure.interrupt import interrupt_exit_code
from ..profile.session import profile_files
from ..report import exports
from ..report.html import profile_page
from ..report.table import render
from ..results import files as saved
from ..results.modes import NAMES, help_text
from ..results.profile import Settings
from ..threadpool.config import ThreadRequest, parse_cpu_list
from .args import (
    add_html_arg,
    add_model_args,
    add_threads_arg,
    add_view_args,
    model_files,
    non_negative_int,
    positive_int,
    text_width,
)
from .paths import add_overwrite_partial_arg, check_outputs, said_where
from .remote import add_rpc_arguments, profile_settings, run_remote, wants_remote
from .terminal import emit


def add_profile_arguments(p: argparse.ArgumentParser) -> None:
    add_model_args(p)
    p.add_argument("--mode", action="append", choices=NAMES,
                   help=f"repeatable; default: all. {help_text()}")
    add_threads_arg(p, "TVM worker threads")
    p.add_argument("--affinity", choices=["big", "little", "one-per-core", "share-all"],
                   help="TVM's config_threadpool mode (creates the pool before first-run)")
    p.add_argument("--cpus", default=None, help="CPU list, e.g. 0-3,6")
    p.add_argument("--pin-main", type=int, default=None, help="pin the main thread to this CPU")
    p.add_argument("--warmups", type=non_negative_int, default=3, help="one-pass: full runs before its timed pass (default 3)")
    p.add_argument("--repeat", type=positive_int, default=7,
                   help="warm: time_evaluator repeats per batch (default 7)")
    p.add_argument("--cv", type=float, default=0.02,
                   help="warm: add batches until an op's CV is at most this (default 0.02)")
    p.add_argument("--budget-ms", type=positive_int, default=200,
                   help="warm: wall-time budget per op for reaching --cv (default 200)")
    p.add_argument("--inrun-passes", type=positive_int, default=10,
                   help="in-run: steady-state op-by-op passes (default 10)")
    p.add_argument("--flush", choices=["llc", "tvm"], default="llc",
                   help="cold: overwrite 2x the last-level cache (llc) or clflush every "
                        "argument but the first (tvm)")
    add_view_args(p)
    p.add_argument("--json", dest="json_out", metavar="FILE",
                   help="save the profile (raw samples, settings, provenance) as JSON; "
                        "'-' for stdout; schema: docs/profile-schema.md")
    p.add_argument("--csv", metavar="FILE", help="save per-op medians, IQRs and sample "
                                                 "counts as CSV")
    p.add_argument("--trace", metavar="FILE", help="save a Chrome / Perfetto trace")
    p.add_argument("--raw", metavar="FILE", help="save the profile (raw samples) as msgpack")
    add_html_arg(p, "the profile")
    add_overwrite_partial_arg(p)
    p.add_argument("--quiet", action="store_true", help="no progress line")
    p.add_argument("--no-vm", action="store_true",
                   help="Relax VM executable: skip the VM's own numbers beside the profile")

    add_rpc_arguments(p)

def _thread_request(args):
    cpus = parse_cpu_list(args.cpus) if args.cpus else None
    # >= 1 either way: argparse enforces it, and a process always has a CPU it may use
    threads = args.threads if args.threads is not None else len(os.sched_getaffinity(0))
    return ThreadRequest(threads=threads, affinity=args.affinity, cpus=cpus,
                         pin_main=args.pin_main)


def _progress(enabled: bool):
    start = time.monotonic()

    def show(mode: str, i: int, n: int) -> None:
        if not enabled:
            return
        done = (i + 1) / max(n, 1)
        eta = (time.monotonic() - start) * (1 - done) / done if done else 0
        print(f"\r{mode:<9} op {i + 1}/{n}  elapsed {time.monotonic() - start:5.1f} s  "
              f"mode ETA {eta:5.1f} s",
              end="", file=sys.stderr, flush=True)
    return show


def _settings(args: argparse.Namespace):
    """Settings from the options; the cold flush is sized on the machine that measures."""
    if not 0 < args.cv < 1:
        raise InputError(f"--cv must be between 0 and 1 (e.g. 0.02), got {args.cv}")
    return Settings(modes=tuple(args.mode or NAMES), warmups=args.warmups,
                    warm_repeat=args.repeat, warm_target_cv=args.cv,
                    warm_budget_ms=args.budget_ms, inrun_passes=args.inrun_passes,
                    flush=args.flush, flush_nbytes=None, relax_vm=not args.no_vm)


def cmd_profile(args: argparse.Namespace) -> int:
    if wants_remote(args):  # on the devices behind an RPC tracker (cli/remote.py)
        return run_remote(args, "profile", **profile_settings(args, _settings(args)))
    check_outputs(args)
    files, settings = model_files(args), _settings(args)
    prof, _, failure = profile_files(
        files, settings, _thread_request(args), force=args.force, fill=args.fill,
        progress=_progress(not args.quiet and sys.stderr.isatty()),
        command=getattr(args, "command_line", ["minigraph", "profile"]))
    if not args.quiet and sys.stderr.isatty():
        emit(file=sys.stderr)
    errors = [failure] if failure else []
    errors += write_profile_outputs(prof, args, measured=True)
    emit(render(prof, args.order, args.aggregate, text_width(args), args.wide))
    if errors:
        raise errors[0]
    return interrupt_exit_code() if prof.partial else 0


def write_profile_outputs(prof, args, measured: bool = False) -> list:
    """Every export asked for; the errors come back (the report is printed before them).
    ``measured``: just measured here, so a partial profile goes beside existing files."""
    written = write_outputs([(args.json_out, lambda: saved.to_json(prof)),
                             (args.csv, lambda: exports.to_csv(prof)),
                             (getattr(args, "trace", None),
                              lambda: document_text(exports.to_trace(prof))),
                             (getattr(args, "raw", None), lambda: saved.to_msgpack(prof)),
                             (getattr(args, "html", None), lambda: _profile_page(prof, args))],
                            partial=measured and prof.partial,
                            overwrite=getattr(args, "overwrite_partial", False))
    return said_where(written, "profile")


def _profile_page(prof, args) -> str:
    return profile_page.render(prof, args.order)
