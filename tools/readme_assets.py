#!/usr/bin/env python3
"""Regenerates the README's example output and its screenshot from one real run.

    PYTHONPATH=. python tools/readme_assets.py [--model resnet18] [--out DIR --reuse]

Builds the model (or reuses DIR), runs ``minigraph profile DIR --html page.html`` at 100
columns, then writes (1) a 15-line excerpt of what it printed between the README's
``<!-- excerpt -->`` markers, with the machine and the date it was measured on, and (2) a
screenshot of the HTML page, taken by headless Chromium, to docs/img/profile.png. Nothing in
either is typed by hand; rerun it when the output changes.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "helpers")]

README = ROOT / "README.md"
PNG = ROOT / "docs" / "img" / "profile.png"
BEGIN, END = "<!-- excerpt: begin (tools/readme_assets.py) -->", "<!-- excerpt: end -->"
TABLE_ROWS = 2   # op rows of the table kept in the excerpt
LINES = 15       # the excerpt's length
WANTED = ("op 0 ", "e2e - (sum of warm", "WARNING", "no kernel is parallel")  # findings shown
COLUMNS = "100"


def minigraph(*argv: object, env: dict | None = None) -> str:
    done = subprocess.run([sys.executable, "-m", "minigraph", *map(str, argv)], cwd=ROOT,
                          capture_output=True, text=True, check=True,
                          env={**os.environ, **(env or {})})
    return done.stdout


def excerpt(text: str) -> list[str]:
    """The table's header, its first rows, the rows it summed and its Sum; the e2e row; the
    summary's findings on op 0 and on e2e against the per-op sum (whole, with their wrapped
    lines): at most LINES lines, '...' where lines were left out."""
    lines = text.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("Name "))
    sum_at = next(i for i in range(head, len(lines)) if lines[i].startswith("Sum "))
    rows = lines[head + 1:sum_at]
    out = [lines[head], *rows[:TABLE_ROWS], "..."]
    out += [r for r in rows[TABLE_ROWS:] if "more ops" in r] + [lines[sum_at]]
    e2e = next(i for i, line in enumerate(lines) if line.startswith("End to end"))
    out += lines[e2e + 1:e2e + 3] + ["Summary:"]
    for finding in _findings(lines):
        if len(out) + len(finding) <= LINES and any(k in finding[0] for k in WANTED):
            out += finding
    return out


def _findings(lines: list[str]) -> list[list[str]]:
    """The summary's findings, each with the lines it wrapped onto."""
    start = next(i for i, line in enumerate(lines) if line.startswith("Summary:"))
    found: list[list[str]] = []
    for line in lines[start + 1:]:
        if not line.strip():
            break
        if line.startswith("      ") and found:
            found[-1].append(line)
        else:
            found.append([line])
    return found


def machine(profile: dict) -> str:
    cpu = profile.get("env", {}).get("cpu", {})
    return (f"{cpu.get('model', 'an unknown CPU')}, {cpu.get('logical_cores', '?')} logical "
            f"CPUs, {datetime.date.today().isoformat()}")


def write_excerpt(model: str, block: list[str], where: str) -> None:
    text = README.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"README.md lacks the markers {BEGIN!r} ... {END!r}")
    new = (f"{BEGIN}\nMeasured on {where} (yours will differ):\n\n```text\n"
           f"$ minigraph profile {model}\n" + "\n".join(block) + "\n```\n")
    start, end = text.index(BEGIN), text.index(END)
    README.write_text(text[:start] + new + text[end:])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="resnet18")
    p.add_argument("--out", type=Path, help="build directory (default: a temporary one)")
    p.add_argument("--reuse", action="store_true", help="reuse the build in --out")
    args = p.parse_args()
    from browser import Browser, which
    chromium = which()
    if chromium is None:
        raise SystemExit("no Chromium on PATH (apt-get install chromium)")
    with tempfile.TemporaryDirectory(prefix="mg-readme-") as tmp:
        out = args.out or Path(tmp) / args.model
        if not (args.reuse and (out / "model.so").is_file()):
            minigraph("build", args.model, "-o", out)
        page, saved = Path(tmp) / "page.html", Path(tmp) / "p.json"
        text = minigraph("profile", out, "--html", page, "--json", saved, "--quiet",
                         env={"COLUMNS": COLUMNS})
        PNG.parent.mkdir(parents=True, exist_ok=True)
        Browser(chromium).screenshot(page, PNG, size="1200,900")
        write_excerpt(args.model, excerpt(text), machine(json.loads(saved.read_text())))
    print(f"wrote the excerpt into {README.name} and {PNG.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
