"""TVM's protocols side by side as a text table (per op by spread, then totals and notes)."""
from __future__ import annotations

import math
from typing import Sequence

from ..results.protocols import ProtocolResult
from .units import ms


def _spread(values: Sequence[float | None]) -> float:
    xs = [v for v in values if v is not None and math.isfinite(v)]
    return max(xs) - min(xs) if len(xs) > 1 else 0.0


def format_protocols(results: Sequence[ProtocolResult], op_names: Sequence[str],
                     top: int = 10) -> str:
    """Side-by-side table (ms): the ``top`` ops with the largest max-min spread across the
    per-op protocols, then every protocol's total, then each protocol's description and notes."""
    per = [r for r in results if r.per_op_ns is not None]
    rows = sorted(range(len(op_names)), key=lambda i: -_spread([r.per_op_ns[i] for r in per]))
    width = max([len(r.key) for r in results] + [12])
    name_w = min(max([len(n) for n in op_names] + [4]), 48)
    lines = [f"per op (ms), top {min(top, len(rows))} of {len(op_names)} by spread:",
             f"{'#':>4} {'op':<{name_w}} " + " ".join(f"{r.key:>{width}}" for r in per)]
    for i in rows[:top]:
        lines.append(f"{i:>4} {op_names[i][:name_w]:<{name_w}} "
                     + " ".join(f"{ms(r.per_op_ns[i], 3):>{width}}" for r in per))
    lines += ["", f"{'protocol':<{width}} {'total ms':>10} {'samples':>7}"]
    lines += [f"{r.key:<{width}} {ms(r.total_ns, 3):>10} {len(r.samples_ns):>7}" for r in results]
    lines.append("")
    for r in results:
        lines.append(f"{r.key}: {r.description}")
        lines += [f"    note: {n}" for n in r.notes]
    return "\n".join(lines)
