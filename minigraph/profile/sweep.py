"""``profile --sweep n=16,32,64``: the model profiled at each size of one symbolic dimension
(one derivation per size, one fresh executor each), and each op's growth with the size.

The profiles run one after another in this process, so only the first size's first run is
a process's first run: a sweep measures steady-state modes (warm, in-run, e2e) unless asked
otherwise. The growth of an op is the least-squares slope of log(median) against log(size)
over the sizes measured: a matmul over n x d grows as n (~1), attention's n x n scores as n^2
(~2). Counterpart: none in TVM's profilers, which never ran a model at more than one size.
"""
from __future__ import annotations

import math

from ..artifacts.model_files import ModelFiles
from ..errors import InputError
from ..results.modes import ModeName
from ..results.profile import Profile, Settings
from ..results.sweep import Growth, Sweep
from ..threadpool.config import ThreadRequest
from .session import profile_files

# a sweep's default: honest at every size
STEADY_MODES = (ModeName.WARM, ModeName.IN_RUN, ModeName.E2E)
FIT_MODES = (ModeName.IN_RUN, ModeName.WARM, ModeName.COLD, ModeName.ONE_PASS,  # the growth
             ModeName.FIRST_RUN)                                              # read, in order


def exponent(sizes: list[int], medians: list[float | None]) -> float | None:
    """Least-squares slope of log(median) on log(size) (None: fewer than two points)."""
    pts = [(math.log(s), math.log(m)) for s, m in zip(sizes, medians) if m and m > 0]
    if len(pts) < 2 or len({x for x, _ in pts}) < 2:
        return None
    mx, my = sum(x for x, _ in pts) / len(pts), sum(y for _, y in pts) / len(pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)


def fit_mode(profiles: list[Profile]) -> str:
    """The per-op mode every profile measured, the one closest to a real run first."""
    have = [set(m for m, rows in p.samples.items() if rows) for p in profiles]
    mode = next((m for m in FIT_MODES if all(m in h for h in have)), None)
    if mode is None:
        raise InputError("a sweep needs a per-op mode measured at every size (e.g. in-run)")
    return mode


def growth(profiles: list[Profile], sizes: list[int], mode: str) -> list[Growth]:
    """Per op (matched by name across the sizes): its medians and fitted exponent."""
    out = []
    for i, op in enumerate(profiles[0].ops):
        medians = []
        for p in profiles:
            j = next((o["index"] for o in p.ops if o["name"] == op["name"]), None)
            medians.append(p.median(mode, j) if j is not None else None)
        out.append(Growth(op["name"], tuple(medians), exponent(sizes, medians)))
    return out


def sweep_files(files: ModelFiles, settings: Settings, req: ThreadRequest, symbol: str,
                values: list[int], *, fixed: dict[str, int] | None = None, **profile_kw
                ) -> tuple[Sweep, Exception | None]:
    """Profiles at each value of ``symbol`` (the other symbols held at ``fixed``); a size that
    fails, or Ctrl-C, ends the sweep with what was measured (marked partial)."""
    profiles: list[Profile] = []
    failure: Exception | None = None
    for v in values:
        try:
            prof, _, failure = profile_files(files, settings, req,
                                             symbols={**(fixed or {}), symbol: v}, **profile_kw)
        except KeyboardInterrupt:
            break
        profiles.append(prof)
        if failure is not None or prof.partial:
            break
    if not profiles:
        raise failure or KeyboardInterrupt()
    mode = fit_mode(profiles)
    done = values[:len(profiles)]
    return Sweep(symbol, list(values), mode, profiles, growth(profiles, done, mode),
                 dict(fixed or {}), len(profiles) < len(values)), failure
