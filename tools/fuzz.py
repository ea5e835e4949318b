#!/usr/bin/env python3
"""Long-run fuzzer for minigraph's file readers: graph.json, param blobs, saved documents, TVM
reports.

    python tools/fuzz.py                      # 100,000 cases over every target
    python tools/fuzz.py --cases 20000 --target params --seed 7
    python tools/fuzz.py --target graph --seed 3 --case 1234    # replay one case, verbosely

Each case takes a valid seed input (written here, programmatically, or a golden document),
mutates it (bit flips, truncation, inserted or deleted bytes, overwritten integers, deep
nesting; for JSON and msgpack also structural edits: dropped keys, wrong types, huge or
negative numbers, graph cycles) and feeds it to the parser in-process, then to what consumes
the parsed value (storage planning, explain, params check, every report renderer). Targets:
graph (and kernel signatures), params, profile (JSON), msgpack, documents (every other saved
format, JSON or msgpack, through readers/documents.py parse_document and the renderer `show`
uses for its kind) and tvm-report (TVM's table, CSV, JSON and BenchmarkResult forms). A case fails when anything other than a
minigraph error (``MinigraphError``) escapes, or when it takes longer than ``--timeout``.
Prints ``cases run: N, failures: F`` and exits 1 if F > 0. Case i of seed S is reproducible.
"""
from __future__ import annotations

import argparse
import json
import random
import signal
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "helpers"))  # graphdoc

import msgpack  # noqa: E402
from fuzz_mutate import mutate_bytes, mutated  # noqa: E402
from fuzz_seeds import (  # noqa: E402
    DOCUMENT_SEEDS,
    GRAPH_SEEDS,
    PROFILE_SEED,
    SIGNATURE_SEED,
    graph_seed_text,
    params_seeds,
    tvm_report_seeds,
)

from minigraph.analysis.comparison import Comparison  # noqa: E402
from minigraph.artifacts.graph_json import parse_graph  # noqa: E402
from minigraph.artifacts.params import check_params, load_params  # noqa: E402
from minigraph.artifacts.signatures import parse_signature  # noqa: E402
from minigraph.errors import MinigraphError  # noqa: E402
from minigraph.readers.documents import parse_document, parse_profile  # noqa: E402
from minigraph.readers.tvm_report import read_report  # noqa: E402
from minigraph.report import (  # noqa: E402
    exports,
    fleet as fleet_report,
    kernel_report,
    saved as saved_report,
)
from minigraph.report.compare import compare  # noqa: E402
from minigraph.report.diagnosis import render_saved  # noqa: E402
from minigraph.report.explain import explain  # noqa: E402
from minigraph.report.sweep import render_sweep  # noqa: E402
from minigraph.report.table import render  # noqa: E402
from minigraph.report.tvm_report import render_report  # noqa: E402
from minigraph.results import files  # noqa: E402
from minigraph.results.profile import Profile  # noqa: E402
from minigraph.runtime.load import check_graph_args  # noqa: E402

TARGETS = ("graph", "params", "profile", "msgpack", "documents", "tvm-report")
# a saved diagnosis is shown with its attribution, recomputed from the raw records with 2,000
# bootstrap resamples (~0.6 s a case on an idle 2-core VM): its cases get 3x the timeout, so a
# busy machine does not pass for a slow reader; a case slower than that still fails
TIMEOUT_SCALE = {"documents": 3.0}


class CaseTimeout(BaseException):
    """Raised by SIGALRM inside a case; a BaseException so no parser's handler swallows it."""


# -- targets: parse, then use the result as minigraph would -------------------------------------
SEED_GRAPH = parse_graph(graph_seed_text(0))
SEED_SIGS = {SIGNATURE_SEED[0]: parse_signature(*SIGNATURE_SEED)}
PARAMS_SEEDS = params_seeds()


def run_graph(data: bytes) -> None:
    graph = parse_graph(data)
    explain(graph)  # plans storage first thing, so storage planning is fuzzed too
    check_graph_args(graph, SEED_SIGS)


def run_signature(data: bytes) -> None:
    specs = parse_signature(SIGNATURE_SEED[0], data.decode("utf-8", "replace"))
    if specs is not None:
        check_graph_args(SEED_GRAPH, {SIGNATURE_SEED[0]: specs})


def run_params(data: bytes) -> None:
    check_params(SEED_GRAPH, load_params(data)).summary()


def _render_all(prof) -> None:
    """Every consumer of a loaded profile; what was accepted must also survive a re-save."""
    render(prof)
    render(prof, "time", aggregate=True)
    exports.to_csv(prof)
    json.dumps(exports.to_trace(prof))
    compare(Comparison(prof, prof))
    try:
        Profile.from_dict(json.loads(files.to_json(prof)), "re-saved")
        files.from_msgpack(files.to_msgpack(prof), "re-saved")
    except MinigraphError as err:  # accepted once, rejected after its own re-save: a bug
        raise AssertionError(f"accepted profile fails its round trip: {err}") from err


def run_profile(data: bytes) -> None:
    _render_all(parse_profile(data, "fuzz"))


def run_msgpack(data: bytes) -> None:
    _render_all(files.from_msgpack(data, "fuzz"))


def _render_fleet(fl) -> None:
    fleet_report.render(fl)
    fleet_report.compare(fl)


# what `show` does with each kind of saved document (cli/saved.py SHOW), minus the printing
RENDERERS = {"profile": _render_all, "diagnosis": render_saved, "fleet": _render_fleet,
             "comparison": saved_report.render_comparison,
             "kernel-comparison": saved_report.render_comparison,
             "protocols": saved_report.render_protocols, "sweep": render_sweep}


def run_document(data: bytes) -> None:
    doc = parse_document(data, "fuzz")
    RENDERERS[doc.kind](doc.value)


def run_tvm_report(data: bytes) -> None:
    """A TVM report, read, shown and compared as `show` and `compare` do (kernel by kernel:
    it holds one pass per call, no warm samples), then saved and read back."""
    prof = read_report(data, "fuzz")
    render_report(prof)
    render_report(prof, "time", aggregate=True)
    exports.to_csv(prof)
    json.dumps(exports.to_trace(prof))
    kernel_report.render(Comparison(prof, prof, "one-pass", paths=("a", "b")))
    try:
        Profile.from_dict(json.loads(files.to_json(prof)), "re-saved")
    except MinigraphError as err:  # accepted once, rejected after its own re-save: a bug
        raise AssertionError(f"accepted report fails its round trip: {err}") from err


RUNNERS = {"graph": run_graph, "signature": run_signature, "params": run_params,
           "profile": run_profile, "msgpack": run_msgpack, "documents": run_document,
           "tvm-report": run_tvm_report}
TVM_REPORT_SEEDS = tvm_report_seeds()


def _json(doc) -> bytes:
    return json.dumps(doc).encode()


def _clamp(x):
    """msgpack cannot encode ints beyond 64 bits: such values become floats."""
    if isinstance(x, dict):
        return {k: _clamp(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_clamp(v) for v in x]
    return float(x) if type(x) is int and not -2**63 <= x < 2**64 else x


def _msgpack(doc) -> bytes:
    return msgpack.packb(_clamp(doc), use_bin_type=True)


def make_case(target: str, rng: random.Random) -> tuple[str, bytes]:
    """(runner name, input bytes) for one case of ``target``."""
    if target == "graph":
        if rng.random() < 0.125:
            return "signature", mutate_bytes(rng, SIGNATURE_SEED[1].encode())
        return "graph", mutated(rng, rng.choice(GRAPH_SEEDS), _json, refs=True)
    if target in ("params", "tvm-report"):  # byte-level edits of a binary blob or of text
        data = rng.choice(PARAMS_SEEDS if target == "params" else TVM_REPORT_SEEDS)
        for _ in range(rng.randrange(1, 4)):
            data = mutate_bytes(rng, data)
        return target, data
    if target == "documents":
        return target, mutated(rng, rng.choice(DOCUMENT_SEEDS),
                               _json if rng.random() < 0.75 else _msgpack)
    return target, mutated(rng, PROFILE_SEED, _json if target == "profile" else _msgpack)


# -- the run ------------------------------------------------------------------------------------
@dataclass
class Failure:
    target: str
    case: int
    what: str
    data: bytes


@dataclass
class Tally:
    cases: int = 0
    accepted: int = 0
    rejected: int = 0
    failures: list[Failure] = field(default_factory=list)
    slowest: tuple[float, str, int] = (0.0, "", -1)


def _on_alarm(_signum, _frame) -> None:
    raise CaseTimeout()


def run_case(tally: Tally, target: str, seed: int, index: int, timeout: float) -> bytes:
    """Runs case ``index`` into ``tally``; returns its input (replay prints it)."""
    rng = random.Random(seed * 1_000_003 + index)  # int seeding: fast and reproducible
    name, data = make_case(target, rng)
    timeout *= TIMEOUT_SCALE.get(name, 1.0)
    t0 = time.perf_counter()
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        RUNNERS[name](data)
        tally.accepted += 1
    except MinigraphError:
        tally.rejected += 1
    except CaseTimeout:
        tally.failures.append(Failure(name, index, f"timeout: over {timeout} s", data))
    except Exception as err:  # noqa: BLE001 - anything else escaping is what we hunt
        tb = traceback.extract_tb(err.__traceback__)[-1]
        tally.failures.append(Failure(name, index, f"{type(err).__name__}: {str(err)[:300]} "
                                      f"at {Path(tb.filename).name}:{tb.lineno}", data))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    elapsed = time.perf_counter() - t0
    tally.cases += 1
    if elapsed > tally.slowest[0]:
        tally.slowest = (elapsed, name, index)
    if elapsed > timeout and not any(f.case == index for f in tally.failures[-1:]):
        tally.failures.append(Failure(name, index, f"slow: {elapsed:.2f} s", data))
    return data


def fuzz(cases: int, seed: int, targets: tuple[str, ...], timeout: float,
         progress: bool = False) -> Tally:
    old = signal.signal(signal.SIGALRM, _on_alarm)
    tally = Tally()
    try:
        for i in range(cases):
            run_case(tally, targets[i % len(targets)], seed, i, timeout)
            if progress and (i + 1) % 10_000 == 0:
                print(f"  {i + 1} cases, {len(tally.failures)} failures", file=sys.stderr)
    finally:
        signal.signal(signal.SIGALRM, old)
    return tally


def _report(tally: Tally, args: argparse.Namespace, wall: float) -> None:
    for f in tally.failures[:10]:
        print(f"FAIL {f.target} case {f.case}: {f.what}\n  replay: python tools/fuzz.py "
              f"--target {args.target} --seed {args.seed} --case {f.case}")
    if args.save_dir and tally.failures:
        out = Path(args.save_dir)
        out.mkdir(parents=True, exist_ok=True)
        for f in tally.failures:
            (out / f"{f.target}-seed{args.seed}-case{f.case}.bin").write_bytes(f.data)
    slow = tally.slowest
    print(f"targets: {args.target}; seed {args.seed}; accepted {tally.accepted}, rejected "
          f"cleanly {tally.rejected}; slowest case {slow[0] * 1e3:.1f} ms ({slow[1]} "
          f"#{slow[2]}); wall time {wall:.1f} s")
    print(f"cases run: {tally.cases}, failures: {len(tally.failures)}")


def check_seeds() -> None:
    """Every seed must be accepted as is, or the fuzzer would only test rejection paths."""
    run_graph(graph_seed_text(0).encode())
    run_graph(graph_seed_text(1).encode())
    run_signature(SIGNATURE_SEED[1].encode())
    for blob in PARAMS_SEEDS:
        load_params(blob)
    run_profile(json.dumps(PROFILE_SEED).encode())
    run_msgpack(msgpack.packb(PROFILE_SEED))
    for doc in DOCUMENT_SEEDS:
        run_document(_json(doc))
        run_document(_msgpack(doc))
    for report in TVM_REPORT_SEEDS:
        run_tvm_report(report)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--target", choices=TARGETS + ("all",), default="all")
    p.add_argument("--timeout", type=float, default=2.0,
                   help="seconds allowed per case (documents: 3x, see TIMEOUT_SCALE)")
    p.add_argument("--case", type=int, default=None, help="replay only this case index")
    p.add_argument("--save-dir", default=None, help="write failing inputs here")
    p.add_argument("--progress", action="store_true")
    args = p.parse_args(argv)
    if args.cases < 0 or args.timeout <= 0:
        p.error("--cases must be >= 0 and --timeout > 0")
    targets = TARGETS if args.target == "all" else (args.target,)
    check_seeds()
    t0 = time.perf_counter()
    if args.case is not None:
        tally = Tally()
        signal.signal(signal.SIGALRM, _on_alarm)
        data = run_case(tally, targets[args.case % len(targets)], args.seed, args.case,
                        args.timeout)
        print(data[:2000])
    else:
        tally = fuzz(args.cases, args.seed, targets, args.timeout, args.progress)
    _report(tally, args, time.perf_counter() - t0)
    return 1 if tally.failures else 0


if __name__ == "__main__":
    sys.exit(main())
