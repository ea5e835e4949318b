"""Does `minigraph compare` hold its nerve? Back-to-back profiles of one model, and one op
made 1.5x slower.

What it measures: (1) ``--runs`` back-to-back ``minigraph profile --mode warm --mode e2e``
runs of the same model, each a fresh process as a user would run them; every consecutive pair
is compared and the ops called changed are counted (goal: at most 1 per pair), next to what
the previous method (Mann-Whitney p < 0.01 and |change| >= 2% on the raw samples) would have
called changed on the same files. (2) In one process, the model profiled twice through the
same run loop (warm samples via the kernel table), the second time with one op's kernel made
``--factor`` (1.5) times slower: each call runs the real kernel, then spins for half as long as
that call took; compare must call that op slower (goal) and few others changed. Every line
states the contention measured during the profiles.

    PYTHONPATH=. python benchmarks/compare_noise.py --model resnet50 --out /tmp/r50 --reuse
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from _common import artifacts, context_line, runs_parser, verdict  # noqa: E402

from minigraph.analysis.comparison import Comparison  # noqa: E402
from minigraph.analysis.contention import warning  # noqa: E402
from minigraph.measure.significance import mann_whitney_p  # noqa: E402
from minigraph.measure.stats import Stats  # noqa: E402
from minigraph.profile.profiler import measure  # noqa: E402
from minigraph.readers.documents import load_profile  # noqa: E402
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


def back_to_back(model_dir: Path, runs: int, threads: int | None) -> list[int]:
    flagged = []
    with tempfile.TemporaryDirectory() as tmp:
        paths = [Path(tmp) / f"p{i}.json" for i in range(runs)]
        for p in paths:
            _profile(model_dir, p, threads)
        for pa, pb in zip(paths, paths[1:]):
            a, b = load_profile(pa), load_profile(pb)
            cmp = Comparison(a, b).ops.tested
            n = len(cmp.deltas)
            busy = [w for w in (warning(a.contention, pa.name), warning(b.contention, pb.name))
                    if w]
            flagged.append(len(cmp.differ))
            print(f"{pa.name} vs {pb.name}: {len(cmp.differ)} of {n} ops differ "
                  f"({', '.join(d.name for d in cmp.differ) or 'none'}); previous method: "
                  f"{_old_verdicts(a, b)} of {n}; run-to-run {cmp.run_to_run:.1%}; shift "
                  f"{cmp.shift:.3f}x" + (f"\n  {'; '.join(busy)}" if busy else ""))
    return flagged


def slowed(fn, factor: float):
    """``fn`` made ``factor`` times slower in wall time: the real call, then a spin for
    (factor - 1) x as long as it took (a preemption during the call lengthens the spin too)."""
    clock = time.perf_counter_ns

    def call(*args) -> None:
        start = clock()
        fn(*args)
        end = start + factor * (clock() - start)
        while clock() < end:
            pass
    return call


def injected(model_dir: Path, factor: float) -> bool:
    from minigraph.runtime.debug import DebugExecutor
    from minigraph.values.inputs import random_inputs
    base = DebugExecutor.from_files(model_dir / "model.so", model_dir / "graph.json")
    real = {op.func_name: op.fn for op in base.ops}
    unique = [op for op in base.ops if sum(o.func_name == op.func_name for o in base.ops) == 1]
    victim = unique[len(unique) // 2]  # a kernel only this op calls

    def profile(table):
        ex = DebugExecutor(base.graph, table, module=None)
        ex.load_params(model_dir / "model.params")
        ex.set_input(**random_inputs(ex, {}, seed=0))
        return measure(ex, Settings(modes=("warm",), warm_budget_ms=100))
    a = profile(real)
    b = profile({**real, victim.func_name: slowed(real[victim.func_name], factor)})
    cmp = Comparison(a, b).ops.tested
    hits = [i for i, d in enumerate(cmp.deltas) if d.verdict != "same"]
    d = cmp.deltas[victim.index]
    print(f"injected {factor}x on op {victim.index} ({victim.name}): measured {d.ratio:.2f}x "
          f"({d.ratio / cmp.shift:.2f}x beyond the shift {cmp.shift:.3f}x), verdict "
          f"{d.verdict}; ops called changed: {hits}")
    for name, p in (("A", a), ("B", b)):
        w = warning(p.contention, name)
        print(f"  {w}" if w else f"  {name}: quiet")
    return d.verdict == "slower"


def main() -> int:
    p = runs_parser(__doc__, "resnet18", 4, "back-to-back profiles")
    p.add_argument("--threads", type=int, default=None, help="profile --threads (default: all)")
    p.add_argument("--factor", type=float, default=1.5, help="the injected slowdown (1.5)")
    args = p.parse_args()
    print(context_line())
    with artifacts(args.model, args.out, args.reuse) as model_dir:
        flagged = back_to_back(model_dir, args.runs, args.threads)
        print(verdict(max(flagged) <= 1, "back-to-back: at most 1 op flagged per pair",
                      f"flagged per pair {flagged}"))
        print(verdict(injected(model_dir, args.factor),
                      f"an op made {args.factor}x slower is flagged", "see above"))
    print(json.dumps({"back_to_back_flagged": flagged}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
