"""The verdict's findings (analysis/verdict.py) as text lines and as JSON: the verdict line,
its evidence and how to confirm it, then the other classes that hold."""
from __future__ import annotations

from typing import Sequence

from ..analysis.verdict import Finding


def render(found: Sequence[Finding]) -> list[str]:
    """The verdict line, its evidence and confirmation, then the other classes that hold."""
    first, rest = found[0], found[1:]
    lines = [f"Verdict: {first.cls} ({first.share:.0%} of the difference): {first.evidence}",
             f"  to confirm: {first.confirm}"]
    lines += [f"  also: {f.cls} ({f.share:.0%}): {f.evidence}" for f in rest]
    return lines


def to_dict(found: Sequence[Finding]) -> dict:
    return {"verdict": found[0].cls, "findings": [f.__dict__ for f in found]}
