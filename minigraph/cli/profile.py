"""``minigraph profile``: the shell around profile/ and report/ (show and compare: saved.py)."""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace

from ..errors import InputError
from ..fileio import write_outputs
from ..fileio.jsontext import document_text
from ..measure.interrupt import interrupt_exit_code
from ..profile.session import profile_files
from ..profile.sweep import STEADY_MODES, sweep_files
from ..report import exports
from ..report.html import profile_page, sweep_page
from ..report.sweep import render_sweep
from ..report.table import render
from ..results import files as saved
from ..results.modes import NAMES, help_text
from ..results.profile import LIMITS, PRECISION, Settings
from ..runtime.relax_vm.shapes import Size
from ..threadpool.config import MODES, ThreadRequest, parse_cpu_list
from ..values.inputs import parse_input_args, read_inputs
from .args import (
    add_html_arg,
    add_model_args,
    add_threads_arg,
    add_view_args,
    bounded,
    model_files,
    non_negative_int,
    number_within,
    shapes,
    size_value,
    text_width,
    within,
)
from .llm_profile import add_llm_profile_arguments, cmd_llm_profile, is_llm_model
from .paths import add_overwrite_partial_arg, check_outputs, report_file, said_where
from .remote import add_rpc_arguments, profile_settings, run_remote, wants_remote
from .terminal import emit

_DEFAULT = Settings()  # every default below is the dataclass's (results/profile.py)


def add_profile_arguments(p: argparse.ArgumentParser) -> None:
    add_model_args(p)
    p.add_argument("--mode", action="append", choices=NAMES,
                   help=f"repeatable; default: all. {help_text()}")
    _add_placement_args(p)
    _add_count_args(p)
    p.add_argument("--flush", choices=["llc", "tvm"], default=_DEFAULT.flush,
                   help="cold: overwrite 2x the last-level cache (llc) or clflush every "
                        "argument but the first (tvm)")
    add_view_args(p)
    p.add_argument("--json", dest="json_out", metavar="FILE",
                   help="save the profile (raw samples, settings, provenance) as JSON; "
                        "'-' for stdout (the report then on stderr); schema: "
                        "docs/profile-schema.md")
    p.add_argument("--csv", metavar="FILE", help="save per-op medians, IQRs and sample "
                                                 "counts as CSV")
    p.add_argument("--trace", metavar="FILE", help="save a Chrome / Perfetto trace")
    p.add_argument("--raw", metavar="FILE", help="save the profile (raw samples) as msgpack")
    add_html_arg(p, "the profile")
    add_overwrite_partial_arg(p)
    p.add_argument("--quiet", action="store_true", help="no progress line")
    p.add_argument("--sweep", type=sweep_item, default=None, metavar="NAME=V1,V2,...",
                   help="profile a Relax VM function at each size of its symbolic dimension "
                        "NAME (one derivation and one fresh executor per size) and report how "
                        "each op's time grows; default modes then warm, in-run, e2e")
    p.add_argument("--no-vm", action="store_true",
                   help="Relax VM executable: skip the VM's own numbers beside the profile")

    add_rpc_arguments(p)
    add_llm_profile_arguments(p)


def _add_placement_args(p: argparse.ArgumentParser) -> None:
    """--threads, --affinity, --cpus, --pin-main: what is asked of TVM's pool."""
    add_threads_arg(p, "TVM worker threads")
    p.add_argument("--affinity", choices=list(MODES),
                   help="TVM's config_threadpool mode (creates the pool before first-run)")
    p.add_argument("--cpus", default=None,
                   help="CPU list, e.g. 0-3,6 (and --threads defaults to its length)")
    p.add_argument("--pin-main", type=non_negative_int, default=None, metavar="CPU",
                   help="pin the main thread to this CPU (one this machine has)")


def _add_count_args(p: argparse.ArgumentParser) -> None:
    """The modes' counts and budgets, each bounded by results/profile.py LIMITS (the help
    names the bounds)."""
    c, d = LIMITS, _DEFAULT
    p.add_argument("--warmups", type=bounded(c["warmups"]), default=d.warmups,
                   help=f"one-pass: full runs before its timed pass, {within(c['warmups'])} "
                        f"(default {d.warmups})")
    p.add_argument("--repeat", type=bounded(c["warm_repeat"]), default=d.warm_repeat,
                   help=f"warm: time_evaluator repeats per batch, {within(c['warm_repeat'])} "
                        f"(default {d.warm_repeat}); a batch runs in slices of about 0.1 s, so "
                        "Ctrl-C and SIGTERM stop it at once")
    p.add_argument("--precision", default=d.warm_precision, type=number_within(
        *PRECISION, f"a number between 0 and 1 (e.g. {d.warm_precision:g})", strict=True),
                   help="warm: add rounds of batches until every op's median is known to "
                        "+- this share (the half-width of its 90%% interval), between 0 and 1 "
                        f"(default {d.warm_precision:g})")
    p.add_argument("--budget-ms", type=bounded(c["warm_budget_ms"]), default=d.warm_budget_ms,
                   help="warm: wall-time budget per op for reaching --precision, "
                        f"{within(c['warm_budget_ms'])} (default {d.warm_budget_ms}); rounds "
                        "stop once it is spent, the round under way first (a round: at most "
                        "ops x --repeat x the longer of 2 ms and the op's time)")
    p.add_argument("--inrun-passes", type=bounded(c["inrun_passes"]), default=d.inrun_passes,
                   help="in-run: steady-state op-by-op passes, interleaved round by round "
                        f"with the e2e runs, {within(c['inrun_passes'])} (default "
                        f"{d.inrun_passes}; rounds: the larger of this and e2e's "
                        f"{d.e2e_repeat})")


def _thread_request(args) -> ThreadRequest:
    """The placement asked for, resolved (threadpool/request.py): threads not given are one
    per CPU of --cpus, else the default (TVM_NUM_THREADS, else every CPU this process may
    use)."""
    cpus = parse_cpu_list(args.cpus) if args.cpus else None
    return ThreadRequest(threads=args.threads, affinity=args.affinity, cpus=cpus,
                         pin_main=args.pin_main).resolved()


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
    return Settings(modes=tuple(args.mode or NAMES), warmups=args.warmups,
                    warm_repeat=args.repeat, warm_precision=args.precision,
                    warm_budget_ms=args.budget_ms, inrun_passes=args.inrun_passes,
                    flush=args.flush, flush_nbytes=None, relax_vm=not args.no_vm)


def sweep_item(text: str) -> tuple[str, list[int]]:
    """argparse type of --sweep NAME=V1,V2,...: two or more distinct sizes, 1 to 2**63-1."""
    name, sep, values = text.partition("=")
    sizes = [size_value(v) for v in values.split(",")] if sep and name.isidentifier() else []
    if None in sizes or len(set(sizes)) < 2:
        raise argparse.ArgumentTypeError(f"expected NAME=V1,V2,... with two or more sizes "
                                         f"from 1 to 2**63-1, got '{text[:60]}'")
    return name, sizes  # type: ignore[return-value]


def _sweep(args: argparse.Namespace) -> int:
    """--sweep: one profile per size, the growth table, the sweep document."""
    symbol, values = args.sweep
    if args.csv or args.trace or args.raw:
        raise InputError("--csv, --trace and --raw export one profile; a sweep saves --json "
                         "(every size's profile) and --html")
    fixed = shapes(args)
    if symbol in fixed:  # which one would win is no choice to make silently
        raise InputError(f"--shape {symbol}={fixed[symbol]} and --sweep {symbol}=...: the sweep "
                         f"sets {symbol} at each of its sizes; drop --shape {symbol}")
    settings = _settings(args)
    if not args.mode:
        settings = replace(settings, modes=STEADY_MODES)
    sizes = [Size(v, "--sweep") for v in values]  # errors about a size name --sweep
    sweep, failure = sweep_files(model_files(args), settings, _thread_request(args), symbol,
                                 sizes, fixed=fixed, force=args.force, fill=args.fill,
                                 inputs=parse_input_args(args.input),
                                 command=getattr(args, "command_line", None))
    errors = [failure] if failure else []
    written = write_outputs([(args.json_out, lambda: document_text(sweep.to_dict(), indent=1)),
                             (args.html, lambda: sweep_page.render(sweep))],
                            partial=sweep.partial, overwrite=args.overwrite_partial)
    errors += said_where(written, "sweep")
    emit(render_sweep(sweep, text_width(args)), file=report_file(args))
    if errors:
        raise errors[0]
    return interrupt_exit_code() if sweep.partial else 0


def cmd_profile(args: argparse.Namespace) -> int:
    if wants_remote(args):  # on the devices behind an RPC tracker (cli/remote.py)
        return run_remote(args, "profile", **profile_settings(args, _settings(args)))
    check_outputs(args)
    if is_llm_model(args):  # an LLM: its request's phases (cli/llm_profile.py)
        return cmd_llm_profile(args)
    if args.sweep:
        return _sweep(args)
    files, settings = model_files(args), _settings(args)
    prof, _, failure = profile_files(
        files, settings, _thread_request(args), force=args.force, fill=args.fill,
        inputs=read_inputs(args.input, files), symbols=shapes(args),
        progress=_progress(not args.quiet and sys.stderr.isatty()),
        command=getattr(args, "command_line", ["minigraph", "profile"]))
    if not args.quiet and sys.stderr.isatty():
        emit(file=sys.stderr)
    errors = [failure] if failure else []
    errors += write_profile_outputs(prof, args, measured=True)
    emit(render(prof, args.order, args.aggregate, text_width(args), args.wide, brief=True),
         file=report_file(args))
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
