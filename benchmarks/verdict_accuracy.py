"""compare's verdict on the labelled corpus, as a confusion table: how often it names the cause.

Builds each model, then runs tools/verdict_corpus.py's cases ``--rounds`` times (each round a
fresh baseline profile A and one B per case: ``--threads 1``, ``TVM_NUM_THREADS=1``, a
``--target x86-64`` build, a ``--schedule none`` build, subnormal first-conv weights, a
spinning neighbour during B, A's warm against B's one-pass, and the same command twice) and
prints, per model, a row per case: how many times each verdict was given, and the share right.
The right verdicts of the back-to-back pair are "no real difference", "machine speed" or
"contention" (the machine moved), or "a few kernels" naming one op (at most one op called
changed); every other case has one right class.

    PYTHONPATH=. python benchmarks/verdict_accuracy.py [--models tiny-cnn,mlp] [--rounds 2]
"""
from __future__ import annotations

import argparse
import collections
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent), str(HERE.parent / "tools")]

from _common import context_line  # noqa: E402
from verdict_corpus import CASES, Result, run_corpus  # noqa: E402

from minigraph.analysis.verdict import RULES  # noqa: E402

COLUMNS = [cls for cls, _ in RULES] + ["no real difference"]


def table(results: list[Result]) -> list[str]:
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for r in results:
        counts[r.case.name][r.verdict or "skipped"] += 1
    short = {c: c.split()[0][:8] for c in COLUMNS}
    head = f"{'case':22}" + "".join(f"{short[c]:>9}" for c in COLUMNS) + "    right"
    lines = [head]
    for case in CASES:
        row = counts[case.name]
        done = [r for r in results if r.case is case and not r.skipped]
        right = sum(r.right for r in done)
        lines.append(f"{case.name:22}" + "".join(f"{row[c]:>9}" for c in COLUMNS)
                     + (f"    {right}/{len(done)}" if done else "    skipped"))
    return lines


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="tiny-cnn,mlp")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--work", type=Path, default=None, help="keep builds and profiles here")
    args = p.parse_args()
    print(context_line())
    total = right = 0
    with tempfile.TemporaryDirectory() as tmp:
        for model in [m for m in args.models.split(",") if m]:
            work = (args.work or Path(tmp)) / Path(model).stem
            work.mkdir(parents=True, exist_ok=True)
            results = run_corpus(work, model, rounds=args.rounds)
            done = [r for r in results if not r.skipped]
            total, right = total + len(done), right + sum(r.right for r in done)
            print(f"\n{model}: verdict given per case ({args.rounds} rounds)")
            print("\n".join(table(results)))
            for r in done:
                if not r.right:
                    print(f"  wrong: {r.case.name}: {r.verdict}: "
                          f"{r.findings[0]['evidence'][:160]}")
    print(f"\nright verdicts: {right} of {total} ({right / max(total, 1):.0%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
