"""``minigraph profile`` and ``minigraph show``: the shell around profile.py and report/."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Callable

from .cliargs import add_model_args, int_at_least, positive_int
from .errors import InputError


def register(sub) -> None:
    p = sub.add_parser("profile", help="per-op timing in first-run, one-pass, warm, in-run, "
                                       "cold and e2e modes, with environment capture")
    add_model_args(p)
    p.add_argument("--mode", action="append", help="repeatable; default: all",
                   choices=["first-run", "one-pass", "warm", "in-run", "cold", "e2e"])
    p.add_argument("--threads", type=int_at_least(1), default=None,
                   help="TVM worker threads (default: every CPU this process may use)")
    p.add_argument("--affinity", choices=["big", "little", "one-per-core", "share-all"])
    p.add_argument("--cpus", default=None, help="CPU list, e.g. 0-3,6")
    p.add_argument("--pin-main", type=int, default=None)
    p.add_argument("--warmups", type=_non_negative, default=3, help="one-pass warm-up runs")
    p.add_argument("--repeat", type=positive_int, default=7,
                   help="warm: time_evaluator repeats per batch")
    p.add_argument("--cv", type=float, default=0.02,
                   help="warm: add batches until an op's CV is at most this (default 0.02)")
    p.add_argument("--budget-ms", type=positive_int, default=200,
                   help="warm: wall-time budget per op for reaching --cv (default 200)")
    p.add_argument("--inrun-passes", type=positive_int, default=10,
                   help="in-run: steady-state op-by-op passes (default 10)")
    p.add_argument("--flush", choices=["llc", "tvm"], default="llc")
    p.add_argument("--order", choices=["exec", "time"], default="exec")
    p.add_argument("--aggregate", action="store_true", help="rows by hash and shapes")
    p.add_argument("--json", dest="json_out")
    p.add_argument("--csv")
    p.add_argument("--trace")
    p.add_argument("--raw")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_profile)
    _register_show_compare(sub)


def _register_show_compare(sub) -> None:
    s = sub.add_parser("show", help="render a saved profile (.json or --raw msgpack) again")
    s.add_argument("file")
    s.add_argument("--order", choices=["exec", "time"], default="exec")
    s.add_argument("--aggregate", action="store_true")
    s.set_defaults(func=cmd_show)
    c = sub.add_parser("compare", help="per-op deltas between two saved profiles, with a "
                                       "significance test on the raw samples")
    c.add_argument("a")
    c.add_argument("b")
    c.add_argument("--mode", default="warm",
                   choices=["first-run", "one-pass", "warm", "in-run", "cold"])
    c.add_argument("--alpha", type=float, default=0.01)
    c.add_argument("--noise-floor", type=float, default=0.02, help="relative, e.g. 0.02 = 2%%")
    c.set_defaults(func=cmd_compare)


_non_negative = int_at_least(0)


def _thread_request(args):
    from .threads import ThreadRequest, parse_cpu_list
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
        from .threads import configure_threads
        placed = configure_threads(req).to_dict()
        placed["notes"] = list(placed.get("notes", [])) + [
            "pool created before first-run by --affinity/--cpus/--pin-main"]
        return lambda: placed
    # the pool is created by the first parallel kernel: only the env var is set before it, so
    # that first-run sees pool creation exactly as a user's first inference does
    os.environ["TVM_NUM_THREADS"] = str(req.threads)
    import tvm  # noqa: F401  (its own threads must not be taken for pool workers)
    from .threads import read_tasks, verify_threads
    tasks_before, affinity_before = read_tasks(), tuple(sorted(os.sched_getaffinity(0)))
    return lambda: verify_threads(req, tasks_before, affinity_before).to_dict()


def _settings(args: argparse.Namespace, env: dict):
    from .envinfo import llc_bytes
    from .profile import MODES, Settings
    if not 0 < args.cv < 1:
        raise InputError(f"--cv must be between 0 and 1 (e.g. 0.02), got {args.cv}")
    return Settings(modes=tuple(args.mode or MODES), warmups=args.warmups,
                    warm_repeat=args.repeat, warm_target_cv=args.cv,
                    warm_budget_ms=args.budget_ms, inrun_passes=args.inrun_passes,
                    flush=args.flush, flush_nbytes=2 * llc_bytes(env))


def cmd_profile(args: argparse.Namespace) -> int:
    req = _thread_request(args)
    verify = _place_threads(req)
    from .envinfo import capture_env
    from .executor import Executor
    from .interrupt import terminate_as_interrupt
    from .profile import measure
    from .protocols import pool_reset
    env = capture_env()
    settings = _settings(args, env)
    ex = Executor.from_files(args.lib, args.graph, args.params, force=args.force)
    ex.set_input(**_random_inputs(ex))
    with terminate_as_interrupt():
        prof = measure(ex, settings, reset=pool_reset(req.threads),
                       progress=_progress(not args.quiet and sys.stderr.isatty()))
    if not args.quiet and sys.stderr.isatty():
        print(file=sys.stderr)
    prof.env, prof.threads = env, verify()
    _write_outputs(prof, args)
    from .report.table import render
    print(render(prof, args.order, args.aggregate))
    return 130 if prof.partial else 0


def _random_inputs(ex):
    from .runner import random_inputs
    return random_inputs(ex, {}, seed=0)


def _write_outputs(prof, args) -> None:
    from .fileio import write_atomic
    from .report import exports
    if args.json_out:
        write_atomic(args.json_out, exports.to_json(prof))
    if args.csv:
        write_atomic(args.csv, exports.to_csv(prof))
    if args.trace:
        write_atomic(args.trace, json.dumps(exports.to_trace(prof)))
    if args.raw:
        write_atomic(args.raw, exports.to_msgpack(prof))


def cmd_show(args: argparse.Namespace) -> int:
    """Renders a saved profile (JSON or msgpack) or a saved diagnosis again."""
    from .report import exports
    from .report.table import render
    data = exports.read_limited(args.file)
    if data.lstrip()[:1] == b"{" and b'"minigraph-diagnosis/' in data[:4096]:
        from .diagnose_cli import render_saved
        print(render_saved(data, str(args.file)))
        return 0
    print(render(exports.parse_profile(data, str(args.file)), args.order, args.aggregate))
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from .report import exports
    from .report.compare import compare
    print(compare(exports.load_profile(args.a), exports.load_profile(args.b), args.mode,
                  args.alpha, args.noise_floor))
    return 0
