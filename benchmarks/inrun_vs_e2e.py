"""Does the in-run sum agree with e2e, profile after profile, or does the report say why not?

Runs ``minigraph profile MODEL`` (all modes, defaults) ``--runs`` times back to back, each a
fresh command, and prints per profile: e2e's median, the sum of in-run medians (less in-run's
own clock stamps), their gap, the bound their own spread allows, and the report's verdict line
(agree / the machine changed speed, with its evidence / a real difference). Goal (the honesty
issue's, on ResNet-50): every profile within 5% of e2e, or called disturbed with evidence.

    PYTHONPATH=. python benchmarks/inrun_vs_e2e.py --model resnet50 --out /tmp/r50 --reuse
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from _common import artifacts, context_line, runs_parser, verdict  # noqa: E402

from minigraph.analysis.agreement import agreement_of  # noqa: E402
from minigraph.readers.documents import load_profile  # noqa: E402


def one_profile(model_dir: Path, extra: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "p.json"
        cmd = [sys.executable, "-m", "minigraph", "profile", str(model_dir), "--quiet",
               "--json", str(out), *extra]
        done = subprocess.run(cmd, capture_output=True, text=True, check=True,
                              env=dict(os.environ, PYTHONPATH=str(HERE.parent)))
        prof = load_profile(out)
    ag = agreement_of(prof)
    line = next((x.strip() for x in done.stdout.splitlines() if "in-run vs e2e" in x), "")
    return {"e2e_ms": ag.e2e_ns / 1e6, "inrun_ms": ag.inrun_ns / 1e6, "gap": ag.gap,
            "bound": ag.bound, "agrees": ag.agrees, "verdict": ag.verdict,
            "evidence": ag.evidence(), "line": line}


def main() -> int:
    p = runs_parser(__doc__, "resnet50", 3, "profiles, back to back")
    p.add_argument("profile_args", nargs="*", help="extra `minigraph profile` options")
    args = p.parse_args()
    print(context_line())
    rows = []
    with artifacts(args.model, args.out, args.reuse) as model_dir:
        for k in range(args.runs):
            r = one_profile(model_dir, args.profile_args)
            rows.append(r)
            print(f"profile {k + 1}: e2e {r['e2e_ms']:.2f} ms, in-run sum {r['inrun_ms']:.2f} "
                  f"ms: gap {r['gap']:+.1%} (bound {r['bound']:.1%}): "
                  + r["verdict"]
                  + f"\n  the report: {r['line']}")
    ok = all(abs(r["gap"]) <= 0.05 or (r["verdict"] == "disturbed" and r["evidence"])
             for r in rows)
    print(verdict(ok, "in-run sum within 5% of e2e, or the run called disturbed with evidence",
                  ", ".join(f"{r['gap']:+.1%}" for r in rows)))
    print(json.dumps({"profiles": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
