"""Does `minigraph diagnose` resolve its model's first-run excess, in time, and say how long?

Runs ``minigraph diagnose MODEL`` with its defaults ``--runs`` times, each a fresh command as a
user would run it, and prints per run: the wall time, the time the hint announced (and how far
off it was), the first-run excess with its interval, the share of that excess in resolved
causes (model level and op by op), the spread of the processes' speeds it divided out, and the
contention during the ladder. Goals (the honesty issue's, on ResNet-50): at least half of the
excess resolved, at most 45 s, a hint within 25% of the real time.

    PYTHONPATH=. python benchmarks/diagnose_resolved.py --model resnet50 --out /tmp/r50 --reuse
"""
from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from _common import artifacts, context_line, runs_parser, verdict  # noqa: E402

from minigraph.analysis.contention import warning  # noqa: E402
from minigraph.diagnose.attribution import attribution_of  # noqa: E402
from minigraph.results.diagnosis import parse_diagnosis  # noqa: E402

HINT = re.compile(r"hint: this diagnosis will take about (\d+) s")


def one_run(model_dir: Path, extra: list[str], keep: Path | None = None) -> dict:
    """One `minigraph diagnose` command: its wall time, its hint, its attribution; ``keep``:
    where its saved diagnosis goes (else a temporary file)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = keep if keep is not None else Path(tmp) / "d.json"
        cmd = [sys.executable, "-m", "minigraph", "diagnose", str(model_dir), "--json",
               str(out), *extra]
        env = dict(os.environ, PYTHONPATH=str(HERE.parent))
        t0 = time.monotonic()
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
        wall = time.monotonic() - t0
        diag = parse_diagnosis(out.read_bytes(), str(out))
    att = attribution_of(diag)
    hint = HINT.search(done.stderr)
    speeds = [x for v in (att.speeds or {}).values() for x in v]
    return {"wall_s": wall, "hint_s": float(hint.group(1)) if hint else None,
            "excess": att.excess_total.to_dict(), "explained": att.explained(),
            "explained_per_op": att.explained_per_op(),
            "speeds": [min(speeds), max(speeds)] if speeds else None,
            "busy": warning(diag.contention, "the ladder")}


def main() -> int:
    p = runs_parser(__doc__, "resnet50", 3, "diagnoses, one after the other")
    p.add_argument("--keep", type=Path, default=None,
                   help="a directory to keep every run's diagnosis in (run1.json, ...)")
    p.add_argument("diagnose_args", nargs="*", help="extra `minigraph diagnose` options")
    args = p.parse_args()
    print(context_line())
    runs = []
    with artifacts(args.model, args.out, args.reuse) as model_dir:
        for k in range(args.runs):
            keep = None
            if args.keep is not None:
                args.keep.mkdir(parents=True, exist_ok=True)
                keep = args.keep / f"run{k + 1}.json"
            r = one_run(model_dir, args.diagnose_args, keep)
            runs.append(r)
            ex, hint = r["excess"], r["hint_s"]
            off = f"{hint / r['wall_s'] - 1:+.0%}" if hint else "no hint"
            speeds = (f"; process speeds {r['speeds'][0]:.2f}x-{r['speeds'][1]:.2f}x divided out"
                      if r["speeds"] else "")
            print(f"run {k + 1}: {r['wall_s']:.1f} s (hint {hint or '-'} s, {off}); excess "
                  f"{ex['median_ns'] / 1e6:.2f} [{ex['lo_ns'] / 1e6:.2f}, "
                  f"{ex['hi_ns'] / 1e6:.2f}] ms; resolved {_pct(r['explained'])} of it, op by "
                  f"op {_pct(r['explained_per_op'])}{speeds}"
                  + (f"\n  {r['busy']}" if r["busy"] else ""))
    shares = [min(r["explained"] or 0.0, 1.0) for r in runs]
    walls = [r["wall_s"] for r in runs]
    hints = [abs(r["hint_s"] / r["wall_s"] - 1) for r in runs if r["hint_s"]]
    print(verdict(min(shares) >= 0.5, "at least half of the excess in resolved causes",
                  f"resolved share median {statistics.median(shares):.0%}, worst "
                  f"{min(shares):.0%}"))
    print(verdict(max(walls) <= 45, "at most 45 s", f"slowest {max(walls):.1f} s"))
    print(verdict(bool(hints) and max(hints) <= 0.25, "the hint within 25% of the real time",
                  f"worst {max(hints):.0%} off" if hints else "no hint printed"))
    print(json.dumps({"runs": runs}))
    return 0


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.0%}"


if __name__ == "__main__":
    sys.exit(main())
