"""Two saved profiles -> per-op deltas with a significance test on the raw samples.

Ops are matched by node name and hash. A delta is called real when a two-sided Mann-Whitney U
test (normal approximation, tie-corrected) gives p < alpha AND the change exceeds the noise
floor (a relative change below it is reported as noise whatever p says).
"""
from __future__ import annotations

import math

from ..measure.stats import Stats
from ..profile.model import Profile


def mann_whitney_p(a: list[float], b: list[float]) -> float:
    """Two-sided p-value of the Mann-Whitney U test; 1.0 when either side is too small."""
    n1, n2 = len(a), len(b)
    if n1 < 2 or n2 < 2:
        return 1.0
    ranked = sorted([(x, 0) for x in a] + [(x, 1) for x in b])
    ranks, ties, i = [0.0] * len(ranked), 0.0, 0
    while i < len(ranked):
        j = i
        while j + 1 < len(ranked) and ranked[j + 1][0] == ranked[i][0]:
            j += 1
        for k in range(i, j + 1):
            ranks[k] = (i + j) / 2 + 1
        ties += (j - i + 1) ** 3 - (j - i + 1)
        i = j + 1
    r1 = sum(r for r, (_, side) in zip(ranks, ranked) if side == 0)
    u = r1 - n1 * (n1 + 1) / 2
    n = n1 + n2
    var = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)))
    if var <= 0:
        return 1.0
    z = (abs(u - n1 * n2 / 2) - 0.5) / math.sqrt(var)
    return math.erfc(max(z, 0.0) / math.sqrt(2))


def compare(a: Profile, b: Profile, mode: str = "warm", alpha: float = 0.01,
            noise_floor: float = 0.02) -> str:
    """The comparison as text: one row per op present in both profiles."""
    rows_a, rows_b = a.samples.get(mode, []), b.samples.get(mode, [])
    index_b = {(op["name"], op["hash"]): op["index"] for op in b.ops}
    lines = [f"{'Name':<50} {'A (us)':>10} {'B (us)':>10} {'delta':>8} {'p':>8}  verdict"]
    unmatched = 0
    for op in a.ops:
        j = index_b.get((op["name"], op["hash"]))
        if j is None or op["index"] >= len(rows_a) or j >= len(rows_b):
            unmatched += 1
            continue
        sa, sb = rows_a[op["index"]], rows_b[j]
        ma, mb = Stats.of(sa).median_ns, Stats.of(sb).median_ns
        rel = (mb - ma) / ma if ma else 0.0
        p = mann_whitney_p(sa, sb)
        verdict = ("noise" if abs(rel) < noise_floor or p >= alpha
                   else ("slower" if rel > 0 else "faster"))
        lines.append(f"{op['name'][:50]:<50} {ma / 1e3:>10.1f} {mb / 1e3:>10.1f} "
                     f"{100 * rel:>+7.1f}% {p:>8.2g}  {verdict}")
    lines.append(f"mode {mode}; real = p < {alpha} and |delta| >= {noise_floor:.0%}; "
                 f"{unmatched} ops of A not matched in B by name and hash")
    return "\n".join(lines)
