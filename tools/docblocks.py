#!/usr/bin/env python3
"""Run the Python code blocks of a Markdown document and check the output shown after them.

    python tools/docblocks.py docs/executor-walkthrough.md            # run and check
    python tools/docblocks.py docs/executor-walkthrough.md --update   # rewrite the outputs

Every ```python block runs, in order, in one namespace, in one fresh process (so the document
sees a fresh TVM thread pool, as a reader's own session would). A ```text block right after a
python block is that block's printed output. Preceded by ``<!-- output: exact -->`` it must
match exactly; otherwise numbers may differ (timings, addresses, a duration's unit) but every
word must match: each number is compared as a placeholder. Exit 1 with a diff when a block's
output differs.
"""
from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

SENTINEL = "----8<---- end of block {} ----8<----"
_FENCE = re.compile(r"^```(\w*)\s*$")
_NUMBER = re.compile(r"[-+]?(?:\d[\d,_]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_EXACT = "<!-- output: exact -->"


@dataclass(frozen=True)
class Block:
    kind: str       # "python" | "text" | other fence languages
    text: str
    start: int      # line index of the opening fence
    end: int        # line index of the closing fence
    exact: bool     # a text block marked <!-- output: exact -->


def parse(markdown: str) -> list[Block]:
    lines, blocks, i = markdown.splitlines(), [], 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        j = next((k for k in range(i + 1, len(lines)) if lines[k].startswith("```")), None)
        if j is None:
            raise ValueError(f"line {i + 1}: a code fence is never closed")
        prev = next((lines[k].strip() for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        blocks.append(Block(m.group(1), "\n".join(lines[i + 1:j]), i, j, prev == _EXACT))
        i = j + 1
    return blocks


def pairs(blocks: list[Block]) -> list[tuple[Block, Block | None]]:
    """Each python block with the text block that shows its output (None: not shown)."""
    out = []
    for k, b in enumerate(blocks):
        if b.kind == "python":
            nxt = blocks[k + 1] if k + 1 < len(blocks) else None
            out.append((b, nxt if nxt is not None and nxt.kind == "text" else None))
    return out


def run(code_blocks: list[str], cwd: str, timeout_s: float = 600) -> list[str]:
    """Runs the blocks in one fresh interpreter; returns each block's stdout."""
    script = ["import sys", "__ns = {'__name__': '__main__'}"]
    for k, code in enumerate(code_blocks):
        script.append(f"exec(compile({code!r}, 'block {k + 1}', 'exec'), __ns)")
        script.append(f"print({SENTINEL.format(k + 1)!r}, flush=True)")
    proc = subprocess.run([sys.executable, "-c", "\n".join(script)], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout_s,
                          env=dict(os.environ, PYTHONUNBUFFERED="1"))
    if proc.returncode != 0:
        raise RuntimeError(f"a block failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    outputs, rest = [], proc.stdout
    for k in range(len(code_blocks)):
        head, _, rest = rest.partition(SENTINEL.format(k + 1) + "\n")
        outputs.append(head.rstrip("\n"))
    return outputs


_UNIT = re.compile(r"(?<=#) ?(ns|us|µs|ms|s)\b")


def normalise(text: str) -> str:
    """Numbers become '#' (with their time unit: a duration may print as 410 ns on one machine
    and 1.2 us on another) and runs of spaces one space: the words are what is checked."""
    return re.sub(r"[ \t]+", " ", _UNIT.sub(" <t>", _NUMBER.sub("#", text))).strip()


def differences(markdown: str, cwd: str) -> tuple[list[str], list[tuple[Block, str]]]:
    """(one diff per mismatching block, every (shown block, actual output) pair)."""
    blocks = parse(markdown)
    shown = pairs(blocks)
    outputs = run([b.text for b, _ in shown], cwd)
    problems, actual = [], []
    for (code, text), out in zip(shown, outputs):
        if text is None:
            continue
        actual.append((text, out))
        want, got = (text.text, out) if text.exact else (normalise(text.text), normalise(out))
        if want != got:
            diff = difflib.unified_diff(text.text.splitlines(), out.splitlines(),
                                        "document", "actual", lineterm="")
            problems.append(f"output of the block at line {code.start + 1} differs "
                            f"({'exact' if text.exact else 'numbers aside'}):\n" +
                            "\n".join(diff))
    return problems, actual


def update(markdown: str, actual: list[tuple[Block, str]]) -> str:
    lines = markdown.splitlines()
    for text, out in sorted(actual, key=lambda p: -p[0].start):
        lines[text.start + 1:text.end] = out.splitlines()
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("document", type=Path)
    p.add_argument("--update", action="store_true", help="rewrite the shown outputs")
    args = p.parse_args(argv)
    markdown = args.document.read_text()
    with tempfile.TemporaryDirectory(prefix="docblocks-") as tmp:
        problems, actual = differences(markdown, tmp)
    if args.update:
        args.document.write_text(update(markdown, actual))
        print(f"updated {len(actual)} output block(s) in {args.document}")
        return 0
    for problem in problems:
        print(problem, file=sys.stderr)
    print(f"{len(actual)} output block(s) checked, {len(problems)} differ")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
