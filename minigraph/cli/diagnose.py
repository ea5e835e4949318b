"""``minigraph diagnose``: the shell around diagnose/, protocols/ and report/diagnosis.py."""
from __future__ import annotations

import argparse
import sys
import time
from typing import Callable

from ..diagnose.estimate import Estimate
from ..diagnose.session import diagnose_files
from ..diagnose.spec import LIMITS, START_METHODS, DiagnoseSettings
from ..fileio import write_outputs
from ..fileio.jsontext import document_text
from ..measure.interrupt import interrupt_exit_code
from ..report.diagnosis import protocols_section, render, to_trace
from ..report.html import diagnose_page
from ..results.rungs import KEYS, help_table
from ..values.inputs import input_paths
from .args import (
    add_html_arg,
    add_model_args,
    add_threads_arg,
    bounded,
    model_files,
    number_within,
    positive_int,
    shapes,
    text_width,
    within,
)
from .llm_profile import add_llm_diagnose_arguments, cmd_llm_diagnose, is_llm_model
from .paths import add_overwrite_partial_arg, check_outputs, report_file, said_where
from .remote import add_rpc_arguments, diagnose_settings, run_remote, wants_remote
from .terminal import emit

# what --quick changes; anything given explicitly on the command line still wins
_DEFAULT = DiagnoseSettings()
FULL = {"processes": _DEFAULT.processes, "rungs": _DEFAULT.rungs,
        "gap_repeat": _DEFAULT.gap_repeat, "budget": 45.0}
QUICK = {"processes": 3, "rungs": ("a", "b", "f"), "gap_repeat": 1, "budget": 0.0}
HINT_AFTER_S = 60.0  # a full run projected longer than this prints the --quick hint
EPILOG = "The warm-up ladder (each rung adds one warm-up to the one before):\n" + help_table()


def _add_budget(d: argparse.ArgumentParser) -> None:
    d.add_argument("--budget", default=None, metavar="SECONDS", type=number_within(
        *LIMITS["budget_s"], f"a number of seconds from {within(LIMITS['budget_s'])}"),
                   help="adapt the rounds of processes to the intervals: stop after 4 or more once "
                        "the model's largest cause is resolved and tight, and the same, two "
                        "rounds in a row, else go on past "
                        "--processes, on the rungs with the widest intervals, while the rounds "
                        f"fit in SECONDS, {within(LIMITS['budget_s'])} (default "
                        f"{FULL['budget']:g}; 0, or --processes given alone: exactly "
                        "--processes; 0 with --quick)")


def _add_gap_args(d: argparse.ArgumentParser) -> None:
    """--steady-runs and the worker-sleep experiment's counts, bounded by diagnose/spec.py
    LIMITS (the help names the bounds; --gap-ms is its gap_s in ms)."""
    gap_ms = tuple(1000 * x for x in LIMITS["gap_s"])
    default_gap_ms = round(1000 * _DEFAULT.gap_s)
    d.add_argument("--steady-runs", type=bounded(LIMITS["steady_runs"]),
                   default=_DEFAULT.steady_runs,
                   help=f"full runs before rung f's timed iteration, "
                        f"{within(LIMITS['steady_runs'])} (default {_DEFAULT.steady_runs})")
    d.add_argument("--gap-ms", type=bounded(gap_ms), default=default_gap_ms,
                   help=f"idle gap of the worker-sleep experiment, {within(gap_ms)} (0: skip "
                        f"it; default {default_gap_ms})")
    d.add_argument("--gap-processes", type=bounded(LIMITS["gap_processes"]),
                   default=_DEFAULT.gap_processes,
                   help="rung-f processes that run the worker-sleep experiment (its "
                        "differences are paired within a process, so fewer suffice), "
                        f"{within(LIMITS['gap_processes'])} (default {_DEFAULT.gap_processes})")
    d.add_argument("--gap-repeat", type=bounded(LIMITS["gap_repeat"]), default=None,
                   help="(awake, idle gap) iteration pairs per rung-f process, "
                        f"{within(LIMITS['gap_repeat'])} (default {FULL['gap_repeat']}; "
                        f"{QUICK['gap_repeat']} with --quick)")


def add_arguments(d: argparse.ArgumentParser) -> None:
    add_model_args(d)
    d.add_argument("--processes", type=bounded(LIMITS["processes"]), default=None,
                   help=f"fresh processes per rung, {within(LIMITS['processes'])} (default "
                        f"{FULL['processes']}; "
                        f"{QUICK['processes']} with --quick)")
    d.add_argument("--rungs", default=None,
                   help=f"ladder rungs to measure, in order (default {','.join(KEYS)}; "
                        f"{','.join(QUICK['rungs'])} with --quick)")
    _add_budget(d)
    d.add_argument("--quick", action="store_true",
                   help=f"a first look: {QUICK['processes']} processes per rung, rungs "
                        f"{','.join(QUICK['rungs'])}, {QUICK['gap_repeat']} gap pair, no "
                        "protocols (options given explicitly still win)")
    _add_gap_args(d)
    add_threads_arg(d, "TVM_NUM_THREADS of every process")
    d.add_argument("--start", choices=START_METHODS, default=_DEFAULT.start,
                   help="how fresh processes start: forked from a zygote that has imported "
                        "Python and TVM and nothing else (fork, default: fast), or a new "
                        "interpreter each (spawn: pays the imports every time)")
    d.add_argument("--no-protocols", action="store_true",
                   help="skip TVM's protocols side by side")
    d.add_argument("--top", type=positive_int, default=10, help="ops shown per table")
    d.add_argument("--json", dest="json_out", metavar="FILE",
                   help="save the diagnosis (raw records, settings, provenance) as JSON; "
                        "schema: docs/diagnosis-schema.md")
    d.add_argument("--trace", metavar="FILE", help="save a Chrome / Perfetto trace of the ladder")
    add_html_arg(d, "the diagnosis")
    add_overwrite_partial_arg(d)
    d.add_argument("--quiet", action="store_true", help="no progress line")
    add_rpc_arguments(d)
    add_llm_diagnose_arguments(d)
    d.epilog = EPILOG
    d.formatter_class = argparse.RawDescriptionHelpFormatter


def _progress(enabled: bool, steps: int):
    """The progress line (on a terminal): where the ladder is, and its remaining time."""
    start, done = time.monotonic(), [0]

    def show(rung: str, p: int, n: int) -> None:
        done[0] += 1
        if enabled:
            per_step = (time.monotonic() - start) / max(done[0] - 1, 1)
            eta = per_step * (steps - done[0] + 1)
            print(f"\rprocess {p + 1}/{n} rung {rung}  step {done[0]}/{steps}  "
                  f"elapsed {time.monotonic() - start:5.1f} s  ETA {eta:5.1f} s   ",
                  end="", file=sys.stderr, flush=True)
    return show


def _hint(newline: bool, quick: bool) -> Callable[[Estimate], None]:
    """The time hint, once the ladder's first round has shown how long it all takes (with
    the --quick suggestion when that is more than HINT_AFTER_S)."""
    def tell(est: Estimate) -> None:
        ladder = (f"the ladder {est.ladder_s:.0f} s" if not est.budget_s else
                  f"the ladder up to its {est.budget_s:.0f} s budget, less once its intervals "
                  "are tight")
        line = (f"hint: this diagnosis will take about {est.total_s:.0f} s in all ("
                f"{est.before_s:.0f} s to start, {ladder}, then {est.after_s:.0f} s)")
        if not quick and est.total_s > HINT_AFTER_S:
            line += (f"; `--quick` gives a first look in about "
                     f"{quick_estimate_s(est):.0f} s")
        emit(("\n" if newline else "") + line, file=sys.stderr, flush=True)
    return tell


def quick_estimate_s(est: Estimate) -> float:
    """--quick's time from a full run's estimate: its share of the ladder's processes."""
    d = _DEFAULT
    share = QUICK["processes"] * len(QUICK["rungs"]) / (d.processes * len(d.rungs))
    return (est.ladder_s if est.planned_s is None else est.planned_s) * share


def _settings(args: argparse.Namespace):
    """DiagnoseSettings from the options: explicit values, else --quick's, else the full run's
    (threads not given: resolved where the diagnosis starts, here or on the device)."""
    base = QUICK if args.quick else FULL
    # an empty --rungs '' is refused by DiagnoseSettings, not taken for the default
    rungs = tuple(args.rungs.split(",")) if args.rungs is not None else tuple(base["rungs"])
    # an explicit --processes is a count to keep: adaptive only when --budget is also given
    budget = args.budget if args.budget is not None else 0.0 if args.processes else \
        base["budget"]
    return DiagnoseSettings(processes=args.processes or base["processes"], rungs=rungs,
                            budget_s=budget,
                            steady_runs=args.steady_runs, gap_s=args.gap_ms / 1e3,
                            gap_repeat=args.gap_repeat or base["gap_repeat"],
                            gap_processes=args.gap_processes, threads=args.threads,
                            force=args.force, start=args.start, fill=args.fill,
                            shapes=shapes(args))


def cmd_diagnose(args: argparse.Namespace) -> int:
    if wants_remote(args):  # on the devices behind an RPC tracker (cli/remote.py)
        return run_remote(args, "diagnose", **diagnose_settings(args, _settings(args)))
    check_outputs(args)
    if is_llm_model(args):  # an LLM: its first request's ladder (cli/llm_profile.py)
        return cmd_llm_diagnose(args)
    settings, files = _settings(args), model_files(args)
    tty = not args.quiet and sys.stderr.isatty()
    show = _progress(tty, settings.processes * len(settings.rungs))
    diag, att, results = diagnose_files(
        files, settings, protocols=not (args.no_protocols or args.quick), force=args.force,
        progress=show, debug=args.debug, inputs=_inputs(args),
        command=getattr(args, "command_line", ["minigraph", "diagnose"]),
        on_estimate=None if args.quiet else _hint(tty, args.quick))
    if not args.quiet and sys.stderr.isatty():
        emit(file=sys.stderr)
    width = text_width(args)
    protocols = protocols_section(diag, results, att, args.top, width) if results else ""
    errors = _write_outputs(diag, att, args)
    emit(render(diag, att, args.top, protocols, width), file=report_file(args))
    if errors:
        raise errors[0]
    return interrupt_exit_code() if diag.partial else 0


def _inputs(args: argparse.Namespace) -> dict[str, str]:
    """--input NAME=FILE.npy as name -> path: every fresh process reads the files, and the
    session reads them first (a bad file fails before any worker starts)."""
    return input_paths(args.input)


def _write_outputs(diag, att, args: argparse.Namespace) -> list:
    """Every export asked for; the errors come back (the report is printed before them). A
    partial diagnosis goes beside files already there (--overwrite-partial: over them)."""

    def doc() -> str:
        return document_text({**diag.to_dict(),
                              "attribution": att.to_dict() if att is not None else None},
                             indent=1)
    def page() -> str:
        return diagnose_page.render(diag, att, args.top)
    written = write_outputs([(args.json_out, doc),
                             (args.trace, lambda: document_text(to_trace(diag))),
                             (args.html, page)],
                            partial=diag.partial, overwrite=args.overwrite_partial)
    return said_where(written, "diagnosis")
