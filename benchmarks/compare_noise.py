"""Does `minigraph compare` cry wolf? Back-to-back profiles of one model, and one op made 2x.

What it measures: (1) ``--runs`` back-to-back ``minigraph profile --mode warm --mode e2e``
runs of the same model, each a fresh process as a user would run them; every consecutive pair
is compared and the share of ops called changed is printed (goal: at most 10% on a quiet
machine), next to what the previous method (Mann-Whitney p < 0.01 and |change| >= 2% on the raw
samples) would have called changed on the same files. (2) In one process, the model profiled
twice through the same run loop (warm samples via the kernel table), the second time with one
op's kernel table entry calling the real kernel twice; compare must call that op slower (goal)
and few others changed. Every line states the contention measured during the profiles.

    PYTHONPATH=. python benchmarks/compare_noise.py --model resnet50 --out /tmp/r50 --reuse
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from _common import add_build_args, artifacts, context_line, verdict  # noqa: E402

from minigraph.measure.contention import warning  # noqa: E402
from minigraph.measure.significance import mann_whitney_p  # noqa: E402
from minigraph.measure.stats import Stats  # noqa: E402
from minigraph.profile.profiler import measure  # noqa: E402
from minigraph.report.compare import comparison_of  # noqa: E402
from minigraph.results.files import load_profile  # noqa: E402
from minigraph.results.profile import Settings  # noqa: E402


def _profile(model_dir: Path, out: Path, threads: int | None) -> None:
    cmd = [sys.executable, "-m", "minigraph", "profile", str(model_dir), "--mode", "warm",
           "--mode", "e2e", "--quiet", "--json", str(out)]
    subprocess.run(cmd + (["--threads", str(threads)] if threads else []), check=True,
                   capture_output=True)


def _old_verdicts(a, b) -> int:
    """What compare did before: Mann-Whitney p < 0.01 and a change of 2% or more."""
    n = 0
    for ra, rb in zip(a.samples["warm"], b.samples["warm"]):
        ma, mb = Stats.of(ra).median_ns, Stats.of(rb).median_ns
        n += mann_whitney_p(ra, rb) < 0.01 and abs(mb / ma - 1) >= 0.02
    return n


def back_to_back(model_dir: Path, runs: int, threads: int | None) -> list[float]:
    shares = []
    with tempfile.TemporaryDirectory() as tmp:
        paths = [Path(tmp) / f"p{i}.json" for i in range(runs)]
        for p in paths:
            _profile(model_dir, p, threads)
        for pa, pb in zip(paths, paths[1:]):
            a, b = load_profile(pa), load_profile(pb)
            cmp, _ = comparison_of(a, b)
            n = len(cmp.deltas)
            busy = [w for w in (warning(a.contention, pa.name), warning(b.contention, pb.name))
                    if w]
            shares.append(len(cmp.differ) / n)
            print(f"{pa.name} vs {pb.name}: {len(cmp.differ)} of {n} ops differ "
                  f"({len(cmp.differ) / n:.0%}); previous method: {_old_verdicts(a, b)} of {n}; "
                  f"run-to-run {cmp.run_to_run:.1%}; geomean {cmp.geomean:.3f}x"
                  + (f"\n  {'; '.join(busy)}" if busy else ""))
    return shares


def injected(model_dir: Path) -> bool:
    from minigraph.runtime.executor import Executor
    base = Executor.from_files(model_dir / "model.so", model_dir / "graph.json")
    real = {op.func_name: op.fn for op in base.ops}
    unique = [op for op in base.ops if sum(o.func_name == op.func_name for o in base.ops) == 1]
    victim = unique[len(unique) // 2]  # a kernel only this op calls

    def twice(*args) -> None:
        real[victim.func_name](*args)
        real[victim.func_name](*args)

    def profile(table):
        ex = Executor(base.graph, table, module=None)
        ex.load_params(model_dir / "model.params")
        return measure(ex, Settings(modes=("warm",), warm_budget_ms=100))
    a, b = profile(real), profile({**real, victim.func_name: twice})
    cmp, _ = comparison_of(a, b)
    hits = [i for i, d in enumerate(cmp.deltas) if d.verdict != "same"]
    d = cmp.deltas[victim.index]
    flagged = d.verdict == "slower"
    print(f"injected 2x on op {victim.index} ({victim.name}): measured {d.ratio:.2f}x, verdict "
          f"{d.verdict}; ops called changed: {hits}")
    for name, p in (("A", a), ("B", b)):
        w = warning(p.contention, name)
        print(f"  {w}" if w else f"  {name}: quiet")
    return flagged


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_build_args(p, "resnet18")
    p.add_argument("--runs", type=int, default=4, help="back-to-back profiles (default 4)")
    p.add_argument("--threads", type=int, default=None, help="profile --threads (default: all)")
    args = p.parse_args()
    print(context_line())
    with artifacts(args.model, args.out, args.reuse) as model_dir:
        shares = back_to_back(model_dir, args.runs, args.threads)
        print(verdict(max(shares) <= 0.10, "back-to-back: at most 10% of ops differ",
                      f"worst pair {max(shares):.0%}"))
        print(verdict(injected(model_dir), "an op made 2x slower is flagged", "see above"))
    print(json.dumps({"back_to_back_shares": shares}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
