"""``minigraph profile``, ``show`` and ``compare``: the shell around profile/ and report/."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from ..errors import InputError
from ..profile.modes import NAMES, PER_OP, help_text
from .args import (
    add_html_arg,
    add_model_args,
    add_threads_arg,
    add_wide_arg,
    check_outputs,
    model_files,
    non_negative_int,
    positive_int,
    text_width,
)
from .remote import add_rpc_arguments, wants_remote


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
    _add_view_args(p)
    p.add_argument("--json", dest="json_out", metavar="FILE",
                   help="save the profile (raw samples, settings, provenance) as JSON; "
                        "'-' for stdout; schema: docs/profile-schema.md")
    p.add_argument("--csv", metavar="FILE", help="save per-op medians, IQRs and sample "
                                                 "counts as CSV")
    p.add_argument("--trace", metavar="FILE", help="save a Chrome / Perfetto trace")
    p.add_argument("--raw", metavar="FILE", help="save the profile (raw samples) as msgpack")
    add_html_arg(p, "the profile")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    p.add_argument("--no-vm", action="store_true",
                   help="Relax VM executable: skip the VM's own numbers beside the profile")

    add_rpc_arguments(p)

def _add_view_args(p: argparse.ArgumentParser) -> None:
    """How the table is shown: shared by profile and show."""
    p.add_argument("--order", choices=["exec", "time"], default="exec",
                   help="rows in execution order (exec), or by time: by warm median (the first "
                        "per-op mode measured when warm was not), largest first")
    p.add_argument("--aggregate", action="store_true",
                   help="one row per kernel hash and argument shapes, times summed")
    add_wide_arg(p)


def add_show_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("file", help="a saved profile (--json, --raw), a diagnosis (diagnose --json) "
                                "or a TVM profiler report (print(report), report.csv(), "
                                "report.json(), print(benchmark))")
    _add_view_args(s)
    add_html_arg(s, "the saved profile or diagnosis (the same page as --html when measuring)")
    s.add_argument("--json", dest="json_out",
                   help="save the profile or imported report as a minigraph profile (JSON)")
    s.add_argument("--csv", help="save per-op medians and IQRs as CSV")


def add_compare_arguments(c: argparse.ArgumentParser) -> None:
    from ..measure.significance import ALPHA, FLOOR, Z
    c.add_argument("a", help="the baseline (A): a profile saved with profile --json or --raw, "
                             "a TVM profiler report, or a fleet result (--rpc-tracker) whose "
                             "devices are compared")
    c.add_argument("b", nargs="?", default=None,
                   help="the profile or TVM report compared with it (B); omitted for a fleet "
                        "result")
    c.add_argument("--mode", default="warm", choices=[m for m in PER_OP],
                   help="which per-op samples to compare (default warm)")
    c.add_argument("--alpha", type=float, default=ALPHA,
                   help=f"significance level of the Mann-Whitney test (default {ALPHA})")
    c.add_argument("--noise-floor", type=float, default=FLOOR,
                   help=f"smallest relative change reported as a change (default {FLOOR}, "
                        f"i.e. {100 * FLOOR:.0f}%%); larger ones must also exceed {Z:g} run-to-run "
                        "deviations estimated from the data")
    c.add_argument("--changed", action="store_true", help="list only the ops that differ")
    c.add_argument("--by-kernel", action="store_true",
                   help="match ops by kernel identity (hash + shapes, else name) and explain "
                        "the gap; the default when either input is a TVM profiler report")
    c.add_argument("--json", dest="json_out", metavar="FILE",
                   help="save the comparison as JSON ('-' for stdout); schema: "
                        "docs/compare-schema.md (with --by-kernel: every matched kernel pair "
                        "and the summary)")
    add_wide_arg(c)
    add_html_arg(c, "the comparison (two profiles of one model)")


def _thread_request(args):
    from ..threadpool.config import ThreadRequest, parse_cpu_list
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


def _settings(args: argparse.Namespace, env: dict):
    from ..measure.environment import llc_bytes
    from ..profile.model import Settings
    if not 0 < args.cv < 1:
        raise InputError(f"--cv must be between 0 and 1 (e.g. 0.02), got {args.cv}")
    return Settings(modes=tuple(args.mode or NAMES), warmups=args.warmups,
                    warm_repeat=args.repeat, warm_target_cv=args.cv,
                    warm_budget_ms=args.budget_ms, inrun_passes=args.inrun_passes,
                    flush=args.flush, flush_nbytes=2 * llc_bytes(env))


def cmd_profile(args: argparse.Namespace) -> int:
    if wants_remote(args):  # on the devices behind an RPC tracker (cli/remote.py)
        from .remote import profile_settings, run_remote
        return run_remote(args, "profile", **profile_settings(args, _settings(args, {})))
    check_outputs(args)
    req = _thread_request(args)
    from ..threadpool.config import place_threads
    verify = place_threads(req)
    from ..measure.environment import capture_env
    from ..measure.interrupt import terminate_as_interrupt
    from ..measure.provenance import capture
    from ..profile.profiler import MeasurementError, measure
    from ..protocols.graph_era import pool_reset
    from ..report.table import render
    from ..runtime.doors import open_executor
    from ..runtime.runner import random_inputs
    env = capture_env()
    settings = _settings(args, env)
    files = model_files(args)
    ex = open_executor(files, force=args.force)
    provenance = capture({"lib": files.lib, "graph": files.graph, "params": files.params},
                         getattr(args, "command_line", ["minigraph", "profile"]))
    ex.set_input(**random_inputs(ex, {}, seed=0))
    failure = None
    with terminate_as_interrupt():
        try:
            prof = measure(ex, settings, reset=pool_reset(req.threads),
                           progress=_progress(not args.quiet and sys.stderr.isatty()))
        except MeasurementError as err:  # saved and shown first, reported after
            prof, failure = err.profile, err
    if not args.quiet and sys.stderr.isatty():
        print(file=sys.stderr)
    prof.env, prof.threads, prof.provenance = env, verify(), provenance
    vm_text = _relax_vm(ex, files, prof, args)
    errors = [failure] if failure else []
    errors += _write_outputs(prof, args)
    print(render(prof, args.order, args.aggregate, text_width(args), args.wide) + vm_text)
    if errors:
        raise errors[0]
    return 130 if prof.partial else 0


def _relax_vm(ex, files, prof, args) -> str:
    """For a Relax VM executable, TVM's own numbers on it beside the profile ('' otherwise)."""
    from ..runtime.doors import door_of
    if prof.partial or args.no_vm or door_of(files) != "relax-vm":
        return ""
    from .vm import vm_side_by_side
    return "\n\n" + vm_side_by_side(ex, files, prof)


def _write_outputs(prof, args) -> list:
    """Every export asked for; the errors come back (the report is printed before them)."""
    from ..fileio import write_outputs
    from ..profile import files
    from ..report import exports
    return write_outputs([(args.json_out, lambda: files.to_json(prof)),
                          (args.csv, lambda: exports.to_csv(prof)),
                          (getattr(args, "trace", None),
                           lambda: json.dumps(exports.to_trace(prof))),
                          (getattr(args, "raw", None), lambda: files.to_msgpack(prof)),
                          (getattr(args, "html", None), lambda: _profile_page(prof, args))])


def _profile_page(prof, args) -> str:
    from ..report.html import profile_page
    return profile_page.render(prof, args.order)


def cmd_show(args: argparse.Namespace) -> int:
    """Renders a saved profile (JSON or msgpack), a TVM profiler report or a saved diagnosis."""
    from ..diagnose.model import is_diagnosis, parse_diagnosis
    from ..profile.files import parse_profile, read_limited
    from ..remote.model import is_fleet, parse_fleet
    from ..report.table import render
    from ..report.tvm_report import is_tvm_report, render_report
    check_outputs(args)
    data = read_limited(args.file)
    if is_fleet(data):  # one result per remote device (--rpc-tracker)
        if args.html:
            raise InputError(f"{args.file}: a fleet result; --html draws one profile or "
                             "diagnosis (save a device's with --json first)")
        from ..report.fleet import render as render_fleet
        print(render_fleet(parse_fleet(data, str(args.file))))
        return 0
    if is_diagnosis(data):
        if args.json_out or args.csv:
            raise InputError(f"{args.file}: a diagnosis; --json and --csv export profiles")
        from ..fileio import write_outputs
        from ..report.diagnosis import render_saved
        from ..report.html import diagnose_page
        diag = parse_diagnosis(data, str(args.file))
        print(render_saved(diag, width=text_width(args)))
        errors = write_outputs([(args.html,
                                 lambda: diagnose_page.render(diag, diag.attribution()))])
        if errors:
            raise errors[0]
        return 0
    prof = parse_profile(data, str(args.file))
    errors = _write_outputs(prof, args)
    show = render_report if is_tvm_report(prof) else render
    print(show(prof, args.order, args.aggregate, text_width(args), args.wide))
    if errors:
        raise errors[0]
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    check_outputs(args)
    if not 0 < args.alpha < 1 or not 0 <= args.noise_floor < 10:
        raise InputError("--alpha must be in (0, 1) and --noise-floor in [0, 10)")
    from ..profile.files import load_profile, read_limited
    from ..remote.model import is_fleet, parse_fleet
    data = read_limited(args.a)
    if is_fleet(data):  # the devices of one fleet result against each other
        if args.html:
            raise InputError("--html draws the comparison of two profiles, not a fleet's")
        from ..report.fleet import compare as compare_fleet
        if args.b is not None:
            raise InputError(f"{args.a} is a fleet result: compare its devices with "
                             f"`minigraph compare {args.a}` (no second file)")
        print(compare_fleet(parse_fleet(data, str(args.a)), args.mode, args.alpha,
                            args.noise_floor))
        return 0
    if args.b is None:
        raise InputError("compare needs two profiles (or one fleet result from --rpc-tracker)")
    from ..report.tvm_report import is_tvm_report
    a, b = load_profile(args.a), load_profile(args.b)
    if args.by_kernel or is_tvm_report(a) or is_tvm_report(b):
        return _compare_kernels(a, b, args)
    try:
        return _compare_profiles(a, b, args)
    except InputError as err:
        if "different models" not in str(err):
            raise
        return _renumbered_builds(a, b, args, err)


def _renumbered_builds(a, b, args: argparse.Namespace, err: InputError) -> int:
    """Op names that do not match may still be one model built twice: two builds number their
    fused functions differently. When most kernels match by identity (hash + shapes), compare
    them that way and say so; otherwise the profiles really are of different models."""
    from ..report.kernel_compare import compare_kernels
    kc = compare_kernels(a, b, str(args.a), str(args.b), args.mode)
    matched, kernels = len(kc.matching.pairs), max(kc.a.calls, kc.b.calls, 1)
    if not kc.matching.level.startswith("hash") or 2 * matched < len(kc.matching.pairs) + \
            len(kc.matching.only_a) + len(kc.matching.only_b):
        raise InputError(f"{err} (two builds of one model that number their fused functions "
                         "differently: try --by-kernel)") from None
    print(f"note: op names differ between A and B, but {matched} kernels match by identity "
          f"({kc.matching.level}) across {kernels} calls: comparing kernel by kernel")
    return _compare_kernels(a, b, args)


def _compare_profiles(a, b, args: argparse.Namespace) -> int:
    """Two minigraph profiles of one model: which per-op differences are real."""
    from ..fileio import write_outputs
    from ..report.compare import compare, to_dict
    paths = (str(args.a), str(args.b))
    text = compare(a, b, args.mode, args.alpha, args.noise_floor, paths=paths,
                   width=text_width(args), only_changed=args.changed)
    def page() -> str:
        from ..report.html import compare_page
        return compare_page.render(a, b, args.mode, args.alpha, args.noise_floor, paths)
    errors = write_outputs([(args.json_out, lambda: json.dumps(to_dict(
        a, b, args.mode, args.alpha, args.noise_floor, paths=paths), indent=1)),
                            (args.html, page)])
    print(text)
    if errors:
        raise errors[0]
    return 0


def _compare_kernels(a, b, args: argparse.Namespace) -> int:
    """Kernel by kernel (hash + shapes), with a verdict: TVM profiler reports, or --by-kernel."""
    from ..fileio import write_outputs
    from ..report.kernel_compare import compare_kernels
    from ..report.kernel_report import render as render_kernels, to_dict
    if args.html:
        raise InputError("--html draws the comparison of two profiles of one model; a kernel "
                         "comparison (TVM reports, --by-kernel) is text and --json only")
    kc = compare_kernels(a, b, str(args.a), str(args.b), args.mode)
    errors = write_outputs([(args.json_out, lambda: json.dumps(to_dict(kc), indent=1))])
    print(render_kernels(kc))
    if errors:
        raise errors[0]
    return 0
