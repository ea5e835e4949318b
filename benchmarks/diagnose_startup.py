"""diagnose's fresh processes: forked from a pre-imported zygote vs spawned, side by side.

What it measures, per fresh process (rung a of the ladder: nothing warmed): the wall time the
parent waits for it, the CPU time it spends before it starts loading the model (interpreter
start-up and imports: what the fork server removes), and its whole CPU time. CPU times hold up
on a shared machine; wall times do not (the contention line says how busy it was). Rounds
alternate the two ways (which goes first flips every round). With ``--ladder``, it also runs
the whole ladder both ways (``--processes`` per rung, every rung, no protocols) and prints
wall time, CPU time and each rung's total with its interval, to show the answer is the same.

    PYTHONPATH=. python benchmarks/diagnose_startup.py --out /tmp/r50 --reuse [--ladder]
"""
from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from _common import ForeignCpu, add_build_args, artifacts, context_line  # noqa: E402

from minigraph.diagnose.attribution import attribution_of  # noqa: E402
from minigraph.diagnose.forkserver import ForkServer  # noqa: E402
from minigraph.diagnose.ladder import run_ladder, spawn, worker_env, worker_result
from minigraph.diagnose.spec import DiagnoseSettings, WorkerSpec  # noqa: E402
from minigraph.results.diagnosis import Diagnosis  # noqa: E402
from minigraph.runtime.doors import locate, open_executor  # noqa: E402
from minigraph.runtime.opinfo import describe_ops  # noqa: E402


def _children_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def one_spawned(spec: WorkerSpec, env: dict) -> dict:
    cpu0, t0 = _children_cpu_s(), time.perf_counter()
    res = spawn(spec, env, 600)
    return {"wall_s": time.perf_counter() - t0, "startup_cpu_s": res["startup_cpu_s"],
            "cpu_s": _children_cpu_s() - cpu0}


def one_forked(server: ForkServer, spec: WorkerSpec) -> dict:
    t0 = time.perf_counter()
    done = server.run(spec, 600)
    wall = time.perf_counter() - t0
    out = worker_result(spec, done)
    return {"wall_s": wall, "startup_cpu_s": out["startup_cpu_s"], "cpu_s": done.cpu_s}


def startup(model_dir: Path, rounds: int, threads: int) -> None:
    files = locate(model_dir)
    spec = WorkerSpec(str(files.lib), str(files.graph), None, "a", None, 0, 0.0, 1, 0.0, 0,
                      False)
    env = worker_env(threads)
    got: dict[str, list[dict]] = {"spawn": [], "fork": []}
    with ForkServer(env) as server:
        one_forked(server, spec)  # the zygote's own start-up is paid once per diagnosis
        for r in range(rounds):
            order = ("spawn", "fork") if r % 2 == 0 else ("fork", "spawn")
            for way in order:
                got[way].append(one_spawned(spec, env) if way == "spawn"
                                else one_forked(server, spec))
    print(f"per fresh process (rung a, {rounds} each, medians):")
    print(f"  {'':6} {'wall s':>8} {'start-up CPU s':>15} {'total CPU s':>12}")
    med = {w: {k: statistics.median(x[k] for x in got[w]) for k in got[w][0]} for w in got}
    for w in ("spawn", "fork"):
        print(f"  {w:6} {med[w]['wall_s']:8.3f} {med[w]['startup_cpu_s']:15.3f} "
              f"{med[w]['cpu_s']:12.3f}")
    print(f"  spawn/fork: wall x{med['spawn']['wall_s'] / med['fork']['wall_s']:.2f}, start-up "
          f"CPU x{med['spawn']['startup_cpu_s'] / max(med['fork']['startup_cpu_s'], 1e-6):.1f}, "
          f"total CPU x{med['spawn']['cpu_s'] / med['fork']['cpu_s']:.2f}")


def ladder(model_dir: Path, processes: int, threads: int, foreign: ForeignCpu) -> None:
    files = locate(model_dir)
    ops = describe_ops(open_executor(files))
    results = {}
    for way in ("fork", "spawn"):
        s = DiagnoseSettings(processes=processes, threads=threads, start=way)
        diag = Diagnosis(ops, s.to_dict())
        cpu0, t0 = _children_cpu_s(), time.perf_counter()
        with foreign.phase(f"ladder {way}"):
            run_ladder(diag, files, s)
        results[way] = (time.perf_counter() - t0, _children_cpu_s() - cpu0, attribution_of(diag))
    print(f"\nwhole ladder ({processes} processes x 7 rungs, no protocols):")
    for way, (wall, cpu, _) in results.items():
        print(f"  {way:6} wall {wall:7.1f} s   CPU {cpu:7.1f} s")
    print("  rung totals, ms (median [90% interval]):")
    for rung in results["fork"][2].rungs:
        line = "  ".join(f"{w} {_iv(att.rung_total[rung])}" for w, (_, _, att) in results.items())
        print(f"    {rung}: {line}")


def _iv(x) -> str:
    return f"{x.median_ns / 1e6:8.2f} [{x.lo_ns / 1e6:.2f}, {x.hi_ns / 1e6:.2f}]"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_build_args(p)
    p.add_argument("--rounds", type=int, default=6, help="processes per way (default 6)")
    p.add_argument("--threads", type=int, default=2, help="TVM_NUM_THREADS (default 2)")
    p.add_argument("--ladder", action="store_true", help="also the whole ladder both ways")
    p.add_argument("--processes", type=int, default=10, help="--ladder: processes per rung")
    args = p.parse_args(argv)
    foreign = ForeignCpu()
    with artifacts(args.model, args.out, args.reuse) as out:
        print(context_line())
        with foreign.phase("per-process"):  # ends after the zygote is reaped: its CPU is ours
            startup(out, args.rounds, args.threads)
        if args.ladder:
            ladder(out, args.processes, args.threads, foreign)
    print(f"other processes' share of the machine per phase: {foreign.line()}")
    print(context_line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
