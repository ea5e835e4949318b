"""Writes docs/measured.md: the machine-dependent figures the docs refer to, measured here.

A figure typed into prose goes stale the day the machine changes (the docs once named a Zen 3
and "about 30 ms" for ResNet-50 on machines that measured 58). So the docs point here, and
this script measures each figure again with the commands a user runs, and writes them with
the CPU, the date and the contention they were measured under:

    PYTHONPATH=. python benchmarks/measured.py [--model resnet50] [--out /tmp/r50 --reuse]
    PYTHONPATH=. python benchmarks/measured.py --print   # print the page, do not write it

Per model: the build's wall time, the e2e median, the sum of warm medians against e2e, the
executor's overhead per run and per op, and the first op's first run over its warm time.
"""
from __future__ import annotations

import datetime
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from _common import runs_parser  # noqa: E402

from minigraph.analysis.contention import warning  # noqa: E402
from minigraph.measure.stats import Stats  # noqa: E402
from minigraph.report.units import dur  # noqa: E402
from minigraph.results.profile import Profile  # noqa: E402

PAGE = HERE.parent / "docs" / "measured.md"
MODES = ("first-run", "warm", "in-run", "e2e")


def _cli(*argv: object) -> float:
    """Runs one minigraph command; its wall time in s."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "minigraph", *map(str, argv)], check=True,
                   capture_output=True, text=True)
    return time.perf_counter() - t0


Rows = list[tuple[str, str, str]]


def figures(model: str, out: Path, reuse: bool) -> tuple[Rows, dict]:
    """(figure, value, how it was measured) rows for one model, and the environment its
    profile captured."""
    rows = []
    if not (reuse and (out / "model.so").is_file()):
        build_s = _cli("build", model, "-o", out)
        rows.append((f"{model}: `minigraph build` wall time", f"{build_s:.1f} s",
                     f"`minigraph build {model} -o out`"))
    with tempfile.TemporaryDirectory() as tmp:
        saved = Path(tmp) / "p.json"
        _cli("profile", out, *[a for m in MODES for a in ("--mode", m)], "--json", saved,
             "--quiet")
        prof = Profile.from_dict(json.loads(saved.read_text()))
    e2e = Stats.of(prof.e2e_ns).median_ns
    over = prof.executor_overhead_ns() or 0.0
    gap = prof.sum_gap_ns("warm")
    first, warm = prof.median("first-run", 0), prof.median("warm", 0)
    how = f"`minigraph profile out {' '.join('--mode ' + m for m in MODES)}`"
    rows += [(f"{model}: e2e median ({len(prof.ops)} ops)", dur(e2e), how),
             (f"{model}: e2e - (sum of warm medians + overhead)",
              f"{dur(gap)} ({100 * gap / e2e:+.1f}% of e2e)" if gap is not None else "-", how),
             (f"{model}: executor overhead", f"{dur(over)} per run, "
              f"{dur(over / max(len(prof.ops), 1))} per op ({100 * over / e2e:.2f}% of e2e)",
              how + " (the run loop with no-op kernels)"),
             (f"{model}: op 0's first run over its warm time",
              f"{first / warm:.1f}x ({dur(first)} vs {dur(warm)})" if first and warm else "-",
              how)]
    busy = warning(prof.contention, "the profile")
    rows += [(f"{model}: machine during the profile", busy, "measure/contention.py")] \
        if busy else []
    return rows, prof.env


def page(rows: Rows, env: dict, command: str) -> str:
    cpu, tvm = env.get("cpu", {}), env.get("tvm", {})
    lines = ["# Measured figures", "",
             "The machine-dependent figures the other pages refer to, measured by "
             "`benchmarks/measured.py` (never typed by hand). Yours will differ: run it.", "",
             f"- machine: {cpu.get('model', '?')} ({cpu.get('microarchitecture', '?')}), "
             f"{cpu.get('logical_cores', '?')} logical CPUs, "
             + ("a VM" if cpu.get("hypervisor", {}).get("present") else "no hypervisor seen"),
             f"- measured: {datetime.date.today().isoformat()}, TVM {tvm.get('version', '?')}, "
             f"`{command}`", "",
             "| figure | value | measured by |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(lines) + "\n"


def main() -> int:
    p = runs_parser(__doc__, "resnet50", 1, "unused")
    p.add_argument("--print", action="store_true", help="print the page instead of writing it")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="mg-measured-") as tmp:
        out = args.out or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        rows, env = figures(args.model, out, args.reuse)
        rows += figures("tiny-cnn", Path(tmp) / "tc", False)[0]
    text = page(rows, env, "PYTHONPATH=. python benchmarks/measured.py " + " ".join(sys.argv[1:]))
    print(text if args.print else f"wrote {PAGE}")
    if not args.print:
        PAGE.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
