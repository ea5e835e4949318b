"""TVM's protocols side by side as a text table (per op by spread, then totals and notes)."""
from __future__ import annotations

import math
from typing import Sequence

from ..results.protocols import SHORT, ProtocolResult
from .units import format_table, ms, shared_prefix


def _spread(values: Sequence[float | None]) -> float:
    xs = [v for v in values if v is not None and math.isfinite(v)]
    return max(xs) - min(xs) if len(xs) > 1 else 0.0


def format_protocols(results: Sequence[ProtocolResult], op_names: Sequence[str],
                     top: int = 10, width: int | None = None) -> str:
    """Side-by-side table (ms): the ``top`` ops with the largest max-min spread across the
    per-op protocols, then every protocol's total, then each protocol's description and notes.
    With ``width`` the per-op table fits it as the profile's does: short protocol headings,
    op names without their shared prefix, cut in the middle."""
    per = [r for r in results if r.per_op_ns is not None]
    rows = sorted(range(len(op_names)), key=lambda i: -_spread([r.per_op_ns[i] for r in per]))
    prefix = shared_prefix(list(op_names)) if width else ""
    head = ["#", "op"] + [SHORT.get(r.key, r.key) if width else r.key for r in per]
    body = [[str(i), op_names[i][len(prefix):]] + [ms(r.per_op_ns[i], 3) for r in per]
            for i in rows[:top]]
    table = format_table(head, body, set(range(len(head))) - {1}, width=width, shrink=(1,),
                         min_shrink=20)
    lines = [f"per op (ms), top {min(top, len(rows))} of {len(op_names)} by spread"
             + (f"; names without their shared prefix {prefix!r}" if prefix else "")
             + (_legend(per) if width else "") + ":", table]
    name_w = max([len(r.key) for r in results] + [12])
    lines += ["", f"{'protocol':<{name_w}} {'total ms':>10} {'samples':>7}"]
    lines += [f"{r.key:<{name_w}} {ms(r.total_ns, 3):>10} {len(r.samples_ns):>7}"
              for r in results]
    lines.append("")
    for r in results:
        lines.append(f"{r.key}: {r.description}")
        lines += [f"    note: {n}" for n in r.notes]
    return "\n".join(lines)


def _legend(per: Sequence[ProtocolResult]) -> str:
    """'; columns: debug.profile = debug_executor.profile, ...' for the shortened headings."""
    named = [f"{SHORT[r.key]} = {r.key}" for r in per if SHORT.get(r.key, r.key) != r.key]
    return f"; columns: {', '.join(named)}" if named else ""
