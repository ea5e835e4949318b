"""``minigraph diagnose``: the shell around diagnose/, protocols/ and report/diagnosis.py."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from ..diagnose.rungs import KEYS, help_table
from .args import (
    add_html_arg,
    add_model_args,
    add_threads_arg,
    check_outputs,
    int_at_least,
    model_files,
    positive_int,
)

EPILOG = "The warm-up ladder (each rung adds one warm-up to the one before):\n" + help_table()


def add_arguments(d: argparse.ArgumentParser) -> None:
    add_model_args(d)
    d.add_argument("--processes", type=positive_int, default=10,
                   help="fresh processes per rung (default 10)")
    d.add_argument("--rungs", default=",".join(KEYS),
                   help=f"ladder rungs to measure, in order (default {','.join(KEYS)})")
    d.add_argument("--steady-runs", type=int_at_least(0), default=3,
                   help="full runs before rung f's timed iteration (default 3)")
    d.add_argument("--gap-ms", type=int_at_least(0), default=500,
                   help="idle gap of the worker-sleep experiment (0: skip it)")
    d.add_argument("--gap-repeat", type=positive_int, default=3,
                   help="(awake, idle gap) iteration pairs per rung-f process (default 3)")
    add_threads_arg(d, "TVM_NUM_THREADS of every process")
    d.add_argument("--no-protocols", action="store_true",
                   help="skip TVM's protocols side by side")
    d.add_argument("--top", type=positive_int, default=10, help="ops shown per table")
    d.add_argument("--json", dest="json_out", help="save the diagnosis (raw records) as JSON")
    d.add_argument("--trace", help="save a Chrome / Perfetto trace of the ladder")
    add_html_arg(d, "the diagnosis")
    d.add_argument("--quiet", action="store_true", help="no progress line")
    d.epilog = EPILOG
    d.formatter_class = argparse.RawDescriptionHelpFormatter


def _progress(enabled: bool, steps: int):
    start, done = time.monotonic(), [0]

    def show(rung: str, p: int, n: int) -> None:
        done[0] += 1
        if enabled:
            eta = (time.monotonic() - start) / max(done[0] - 1, 1) * (steps - done[0] + 1)
            print(f"\rprocess {p + 1}/{n} rung {rung}  step {done[0]}/{steps}  "
                  f"elapsed {time.monotonic() - start:5.1f} s  ETA {eta:5.1f} s   ",
                  end="", file=sys.stderr, flush=True)
    return show


def cmd_diagnose(args: argparse.Namespace) -> int:
    check_outputs(args)
    threads = args.threads or len(os.sched_getaffinity(0))
    os.environ["TVM_NUM_THREADS"] = str(threads)  # this process's protocols use the same pool
    from ..diagnose.ladder import run_ladder
    from ..diagnose.model import Diagnosis
    from ..diagnose.spec import DiagnoseSettings
    from ..measure.environment import capture_env
    from ..measure.interrupt import terminate_as_interrupt
    from ..report.diagnosis import render
    from ..runtime.doors import open_executor
    from ..runtime.opinfo import describe_ops
    settings = DiagnoseSettings(processes=args.processes, rungs=tuple(args.rungs.split(",")),
                                steady_runs=args.steady_runs, gap_s=args.gap_ms / 1e3,
                                gap_repeat=args.gap_repeat, threads=threads, force=args.force)
    files = model_files(args)
    ex = open_executor(files, force=args.force)  # validates before any worker starts
    diag = Diagnosis(describe_ops(ex), settings.to_dict())
    show = _progress(not args.quiet and sys.stderr.isatty(),
                     settings.processes * len(settings.rungs))
    with terminate_as_interrupt():
        run_ladder(diag, files, settings, progress=show, debug=args.debug)
        if not args.quiet and sys.stderr.isatty():
            print(file=sys.stderr)
        att = diag.attribution()
        protocols = "" if args.no_protocols or diag.partial else \
            _protocols(diag, att, ex, files, args, threads)
    diag.env = capture_env()
    _write_outputs(diag, att, args)
    print(render(diag, att, args.top, protocols))
    return 130 if diag.partial else 0


def _protocols(diag, att, ex, files, args: argparse.Namespace, threads: int) -> str:
    from ..protocols.measure import measure_protocols
    from ..report.diagnosis import protocols_section
    from ..runtime.runner import random_inputs
    ex.set_input(**random_inputs(ex, {}, seed=0))
    try:
        results = measure_protocols(ex, vm_lib=files.lib.with_name("model.vm.so"),
                                    threads=threads)
    except KeyboardInterrupt:
        diag.partial = True
        return ""
    diag.protocols = [r.to_dict() for r in results]
    return protocols_section(diag, results, att, args.top)


def _write_outputs(diag, att, args: argparse.Namespace) -> None:
    from ..fileio import write_output
    from ..report.diagnosis import to_trace
    if args.json_out:
        doc = {**diag.to_dict(), "attribution": att.to_dict() if att is not None else None}
        write_output(args.json_out, json.dumps(doc, indent=1))
    if args.trace:
        write_output(args.trace, json.dumps(to_trace(diag)))
    if args.html:
        from ..report.html import diagnose_page
        write_output(args.html, diagnose_page.render(diag, att, args.top))
