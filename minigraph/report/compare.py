"""Two saved profiles -> per-op deltas with a significance test on the raw samples.

Ops are matched by node name and hash. A delta is called real when a two-sided Mann-Whitney U
test (normal approximation, tie-corrected) gives p < alpha AND the change exceeds the noise
floor (a relative change below it is reported as noise whatever p says). ``comparison_of``
returns the verdicts as data (the text here and the HTML report both render it);
``summary_line`` says how many ops differ and the geometric mean of the ratios.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

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


@dataclass(frozen=True)
class Delta:
    name: str
    a: Stats
    b: Stats
    ratio: float          # B median / A median (NaN where A's median is 0)
    p: float | None       # Mann-Whitney p
    noise: float          # the relative change this op had to exceed (here: the noise floor)
    verdict: str          # "slower" | "faster" | "noise"


@dataclass(frozen=True)
class Matched:
    pairs: tuple[tuple[int, int], ...]   # (op index in A, op index in B)
    only_a: tuple[int, ...]
    by: str = "name and hash"


@dataclass(frozen=True)
class Comparison:
    deltas: tuple[Delta, ...]
    geomean: float        # geometric mean of the B/A ratios (NaN: no ratio)
    e2e: Delta | None
    alpha: float
    floor: float

    @property
    def differ(self) -> tuple[Delta, ...]:
        return tuple(d for d in self.deltas if d.verdict in ("slower", "faster"))

    def count(self, verdict: str) -> int:
        return sum(1 for d in self.deltas if d.verdict == verdict)


def _delta(name: str, sa: list[float], sb: list[float], alpha: float, floor: float) -> Delta:
    a, b = Stats.of(sa), Stats.of(sb)
    ratio = b.median_ns / a.median_ns if a.median_ns else float("nan")
    rel = ratio - 1 if ratio == ratio else 0.0
    p = mann_whitney_p(sa, sb)
    verdict = "noise" if abs(rel) < floor or p >= alpha else ("slower" if rel > 0 else "faster")
    return Delta(name, a, b, ratio, p, floor, verdict)


def comparison_of(a: Profile, b: Profile, mode: str = "warm", *, alpha: float = 0.01,
                  floor: float = 0.02) -> tuple[Comparison, Matched]:
    rows_a, rows_b = a.samples.get(mode, []), b.samples.get(mode, [])
    index_b = {(op["name"], op["hash"]): op["index"] for op in b.ops}
    deltas, pairs, only_a = [], [], []
    for op in a.ops:
        j = index_b.get((op["name"], op["hash"]))
        if j is None or op["index"] >= len(rows_a) or j >= len(rows_b):
            only_a.append(op["index"])
            continue
        pairs.append((op["index"], j))
        deltas.append(_delta(op["name"], rows_a[op["index"]], rows_b[j], alpha, floor))
    logs = [math.log(d.ratio) for d in deltas if d.ratio == d.ratio and d.ratio > 0]
    geo = math.exp(sum(logs) / len(logs)) if logs else float("nan")
    e2e = _delta("e2e", a.e2e_ns, b.e2e_ns, alpha, floor) if a.e2e_ns and b.e2e_ns else None
    return (Comparison(tuple(deltas), geo, e2e, alpha, floor),
            Matched(tuple(pairs), tuple(only_a)))


def summary_line(cmp: Comparison, what: str = "ops") -> str:
    """pyperf compare_to style: 'K of N ops differ (...); geometric mean of B/A: 1.02x'."""
    geo = "-" if cmp.geomean != cmp.geomean else f"{cmp.geomean:.3f}x"
    return (f"{len(cmp.differ)} of {len(cmp.deltas)} {what} differ ({cmp.count('slower')} "
            f"slower, {cmp.count('faster')} faster); geometric mean of B/A: {geo}")


def compare(a: Profile, b: Profile, mode: str = "warm", alpha: float = 0.01,
            noise_floor: float = 0.02) -> str:
    """The comparison as text: one row per op present in both profiles."""
    cmp, matched = comparison_of(a, b, mode, alpha=alpha, floor=noise_floor)
    lines = [f"{'Name':<50} {'A (us)':>10} {'B (us)':>10} {'delta':>8} {'p':>8}  verdict"]
    for d in cmp.deltas:
        rel = d.ratio - 1 if d.ratio == d.ratio else 0.0
        lines.append(f"{d.name[:50]:<50} {d.a.median_ns / 1e3:>10.1f} "
                     f"{d.b.median_ns / 1e3:>10.1f} {100 * rel:>+7.1f}% {d.p:>8.2g}  "
                     f"{d.verdict}")
    lines.append(f"mode {mode}; real = p < {alpha} and |delta| >= {noise_floor:.0%}; "
                 f"{len(matched.only_a)} ops of A not matched in B by name and hash")
    lines.append(summary_line(cmp))
    return "\n".join(lines)
