"""``minigraph profile``, ``show`` and ``compare``: the shell around profile/ and report/."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Callable

from ..errors import InputError
from ..profile.modes import NAMES, PER_OP, help_text
from .args import (
    add_model_args,
    add_threads_arg,
    check_outputs,
    model_files,
    non_negative_int,
    positive_int,
)


def add_profile_arguments(p: argparse.ArgumentParser) -> None:
    add_model_args(p)
    p.add_argument("--mode", action="append", choices=NAMES,
                   help=f"repeatable; default: all. {help_text()}")
    add_threads_arg(p, "TVM worker threads")
    p.add_argument("--affinity", choices=["big", "little", "one-per-core", "share-all"],
                   help="TVM's config_threadpool mode (creates the pool before first-run)")
    p.add_argument("--cpus", default=None, help="CPU list, e.g. 0-3,6")
    p.add_argument("--pin-main", type=int, default=None, help="pin the main thread to this CPU")
    p.add_argument("--warmups", type=non_negative_int, default=3, help="one-pass warm-up runs")
    p.add_argument("--repeat", type=positive_int, default=7,
                   help="warm: time_evaluator repeats per batch")
    p.add_argument("--cv", type=float, default=0.02,
                   help="warm: add batches until an op's CV is at most this (default 0.02)")
    p.add_argument("--budget-ms", type=positive_int, default=200,
                   help="warm: wall-time budget per op for reaching --cv (default 200)")
    p.add_argument("--inrun-passes", type=positive_int, default=10,
                   help="in-run: steady-state op-by-op passes (default 10)")
    p.add_argument("--flush", choices=["llc", "tvm"], default="llc",
                   help="cold: overwrite 2x the last-level cache (llc) or clflush every "
                        "argument but the first (tvm)")
    p.add_argument("--order", choices=["exec", "time"], default="exec",
                   help="rows in execution order or by time (warm median), largest first")
    p.add_argument("--aggregate", action="store_true", help="rows by hash and shapes")
    p.add_argument("--json", dest="json_out", help="save the profile (raw samples) as JSON")
    p.add_argument("--csv", help="save per-op medians and IQRs as CSV")
    p.add_argument("--trace", help="save a Chrome / Perfetto trace")
    p.add_argument("--raw", help="save the profile (raw samples) as msgpack")
    p.add_argument("--quiet", action="store_true", help="no progress line")


def add_show_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("file", help="a saved profile (--json, --raw) or diagnosis (diagnose --json)")
    s.add_argument("--order", choices=["exec", "time"], default="exec",
                   help="rows in execution order or by time")
    s.add_argument("--aggregate", action="store_true", help="rows by hash and shapes")


def add_compare_arguments(c: argparse.ArgumentParser) -> None:
    c.add_argument("a", help="the baseline profile")
    c.add_argument("b", help="the profile compared with it")
    c.add_argument("--mode", default="warm", choices=[m for m in PER_OP],
                   help="which samples to compare (default warm)")
    c.add_argument("--alpha", type=float, default=0.01, help="significance level")
    c.add_argument("--noise-floor", type=float, default=0.02, help="relative, e.g. 0.02 = 2%%")


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


def _place_threads(req) -> Callable[[], dict]:
    """Configures TVM's pool as requested; returns what reports the placement read back from
    /proc once the pool exists (the thread report of the profile)."""
    if req.affinity or req.cpus or req.pin_main is not None:
        # explicit placement needs the pool now (config_threadpool), so first-run no longer
        # includes pool creation; the report says so
        from ..threadpool.config import configure_threads
        placed = configure_threads(req).to_dict()
        placed["notes"] = list(placed.get("notes", [])) + [
            "pool created before first-run by --affinity/--cpus/--pin-main"]
        return lambda: placed
    # the pool is created by the first parallel kernel: only the env var is set before it, so
    # that first-run sees pool creation exactly as a user's first inference does
    os.environ["TVM_NUM_THREADS"] = str(req.threads)
    import tvm  # noqa: F401  (its own threads must not be taken for pool workers)

    from ..threadpool.config import read_tasks, verify_threads
    tasks_before, affinity_before = read_tasks(), tuple(sorted(os.sched_getaffinity(0)))
    return lambda: verify_threads(req, tasks_before, affinity_before).to_dict()


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
    check_outputs(args)
    req = _thread_request(args)
    verify = _place_threads(req)
    from ..measure.environment import capture_env
    from ..measure.interrupt import terminate_as_interrupt
    from ..profile.profiler import measure
    from ..protocols.graph_era import pool_reset
    from ..report.table import render
    from ..runtime.doors import open_executor
    from ..runtime.runner import random_inputs
    env = capture_env()
    settings = _settings(args, env)
    files = model_files(args)
    ex = open_executor(files, force=args.force)
    ex.set_input(**random_inputs(ex, {}, seed=0))
    with terminate_as_interrupt():
        prof = measure(ex, settings, reset=pool_reset(req.threads),
                       progress=_progress(not args.quiet and sys.stderr.isatty()))
    if not args.quiet and sys.stderr.isatty():
        print(file=sys.stderr)
    prof.env, prof.threads = env, verify()
    _attach_roofline(prof, files)
    _write_outputs(prof, args)
    print(render(prof, args.order, args.aggregate))
    return 130 if prof.partial else 0


def _attach_roofline(prof, files) -> None:
    """FLOPs per op from build.json and this machine's measured peak (cached per machine;
    measured after the profile, on the main thread only, so no mode sees it)."""
    from ..artifacts.buildinfo import read_build
    from ..measure.peak import machine_peak
    from ..profile.roofline import attach
    info = read_build(files.graph or files.lib)
    if info.get("kernels"):
        threads = prof.threads.get("tvm_num_threads")
        attach(prof, info, machine_peak(threads if isinstance(threads, int) else 1))


def _write_outputs(prof, args) -> None:
    from ..fileio import write_output
    from ..profile import files
    from ..report import exports
    if args.json_out:
        write_output(args.json_out, files.to_json(prof))
    if args.csv:
        write_output(args.csv, exports.to_csv(prof))
    if args.trace:
        write_output(args.trace, json.dumps(exports.to_trace(prof)))
    if args.raw:
        write_output(args.raw, files.to_msgpack(prof))


def cmd_show(args: argparse.Namespace) -> int:
    """Renders a saved profile (JSON or msgpack) or a saved diagnosis again."""
    from ..diagnose.model import is_diagnosis, parse_diagnosis
    from ..profile.files import parse_profile, read_limited
    from ..report.table import render
    data = read_limited(args.file)
    if is_diagnosis(data):
        from ..report.diagnosis import render_saved
        print(render_saved(parse_diagnosis(data, str(args.file))))
        return 0
    print(render(parse_profile(data, str(args.file)), args.order, args.aggregate))
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from ..profile.files import load_profile
    from ..report.compare import compare
    print(compare(load_profile(args.a), load_profile(args.b), args.mode, args.alpha,
                  args.noise_floor))
    return 0
