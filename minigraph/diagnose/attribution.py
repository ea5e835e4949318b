"""Ladder samples -> per-op Attribution (results/attribution.py) of the first-run excess, with
bootstrap intervals (pure).

Each rung of the ladder (rungs.py) is measured in N fresh processes; an op's time on a rung
is the median over those processes (one pre-empted process on a noisy machine must not decide
the answer). The first-run excess of an op is median(a) - median(f); neighbouring rungs split it
into components that add up to it exactly, since the differences of any per-rung estimate
telescope. The a -> b step (pool created and awake) is split by what the counters saw in rung
a: the share of processes whose workers were asleep before the op is worker wake-up, the rest
thread-pool creation (the threads' start-up and first tasks). Intervals are 90% percentile
bootstraps over processes, resampling each rung's processes independently and keeping each
process's ops together, so sums over ops get honest intervals too.

Each process's speed is divided out first. A shared VM runs one process up to 1.65x slower than
the next (a neighbour, steal, a clock), more than most first-run effects; compared across
processes as they are, every component's interval would include 0. So each worker also times
its own steady state right after its timed iteration (diagnose/worker.py), and all its times
are divided by its speed: its steady time over the median process's. Each op's timed
time is then paired with the same process's steady time of that op (what is left is that
process's first-run excess on that rung, free of its buffers' placement and its speed), and a
rung reads as the steady state of all processes plus the median of its processes' pairs. The
rungs then differ by what they warm, not by how fast their processes happened to run.
"""
from __future__ import annotations

import warnings
from collections.abc import Collection
from dataclasses import replace

import numpy as np

from ..measure.stats import nanmedian_last
from ..results.attribution import LEVEL, Attribution, Interval, component_keys
from ..results.diagnosis import Diagnosis, records_matrix, waits_matrix
from ..results.rungs import KEYS, POOL_SPLIT
from . import placement
from .disturbed import FLOOR_NS, Columns, carried, clean_steady, columns

BOOTSTRAP = 2000


def _reference(steady: dict[str, np.ndarray] | None) -> np.ndarray | None:
    """The steady state of all processes, per op: what a paired rung is read against."""
    if steady is None:
        return None
    return _median_over_processes(np.concatenate(list(steady.values()), axis=-2))


def _rung_times(times: dict[str, np.ndarray], steady: dict[str, np.ndarray] | None,
                ref: np.ndarray | None) -> dict[str, np.ndarray]:
    """Per rung, per op: the median over processes; paired (``steady`` given), the median of
    each process's timed iteration minus its own steady state, plus the steady state of all
    processes (``ref``: so a rung still reads as a time, and the rungs differ by their pairs
    alone). Arrays are [..., processes, ops]: a leading axis holds bootstrap resamples."""
    if steady is None:
        return {r: _median_over_processes(t) for r, t in times.items()}
    return {r: ref + _median_over_processes(t - steady[r]) for r, t in times.items()}


def _median_over_processes(x: np.ndarray) -> np.ndarray:
    """The median over axis -2, the processes, of the samples not left out (NaN), moved last
    first: partitioning a contiguous axis is twice as fast, and the bootstrap takes ~100
    such medians of [250, n, ops]. Without a NaN, np.median (nanmedian is slower)."""
    x = np.ascontiguousarray(np.moveaxis(x, -2, -1))
    if not np.isnan(x).any():
        return np.median(x, axis=-1, overwrite_input=True)
    return nanmedian_last(x)


def _summed(per_op: np.ndarray) -> np.ndarray:
    """Per-op estimates [..., ops + 1] with the model's column replaced by the sum of the
    ops' (a NaN op, a resample that drew none of its samples, leaves the sum NaN: dropped)."""
    out = per_op.copy()
    out[..., -1] = per_op[..., :-1].sum(axis=-1)
    return out


def _estimate(times: dict[str, np.ndarray], steady: dict[str, np.ndarray] | None,
              asleep: np.ndarray | None, gap: np.ndarray | None,
              unread: dict[str, np.ndarray] | None = None,
              placed: np.ndarray | None = None, omitted: Collection[str] = ()
              ) -> dict[str, np.ndarray]:
    """Point estimates (per op) of every quantity from one (re)sample of processes, or from
    many at once along a leading axis ([..., processes, ops] in, [..., ops] out); a rung
    ``unread`` for an op (disturbed.py) carries the rung before it; ``placed``: rung a's
    samples whose main thread queued behind a pinned worker (placement.py): what that added
    where it happened, beside the typical first run's excess (not a part of it)."""
    rungs = tuple(r for r in KEYS if r in times)
    ref = _reference(steady)
    mid = _rung_times(times, steady, ref)
    mid = carried(mid, rungs, unread) if unread is not None else mid
    mid = {r: _summed(v) for r, v in mid.items()}
    est = {f"rung:{r}": mid[r] for r in rungs}
    est["excess"] = mid[rungs[0]] - mid[rungs[-1]]
    if placed is not None and rungs[0] == "a":
        est[placement.KEY] = placement.cost(placed, None if steady is None else steady["a"],
                                            ref, mid["a"], _median_over_processes)
    for key, (r1, r2) in component_keys(rungs, omitted):
        step = mid[r1] - mid[r2]
        if key == "pool" and asleep is not None:
            share = asleep.mean(axis=-2)  # processes whose workers slept before the op
            est[POOL_SPLIT[1]], est[POOL_SPLIT[0]] = step * share, step * (1 - share)
        else:
            est[key if key != "pool" else POOL_SPLIT[0]] = step
    if gap is not None:  # paired differences: each process against its own baseline
        est["wakeup_gap"] = _median_over_processes(gap)
    return est


def _interval(point: np.ndarray, boot: np.ndarray) -> tuple[Interval, ...]:
    # nan-aware: a resample that drew only left-out samples of an op has no estimate of it
    with warnings.catch_warnings():  # every resample without one: NaN, an unresolved interval
        warnings.simplefilter("ignore", RuntimeWarning)
        lo, hi = np.nanpercentile(boot, [50 * (1 - LEVEL), 50 * (1 + LEVEL)], axis=0)
    return tuple(Interval(float(m), float(a), float(b)) for m, a, b in zip(point, lo, hi))


def attribute(times: dict[str, np.ndarray], asleep: np.ndarray | None = None,
              gap: np.ndarray | None = None, seed: int = 0,
              steady: dict[str, np.ndarray] | None = None,
              waited: dict[str, np.ndarray] | None = None,
              gap_waited: np.ndarray | None = None,
              placed: dict[str, np.ndarray] | None = None,
              omitted: dict[str, str] | None = None, resamples: int = BOOTSTRAP
              ) -> Attribution:
    """``times``: rung -> [processes, ops] ns; ``asleep``: [processes of rung a, ops] bool
    (workers asleep before the op); ``gap``: [processes, ops] ns, each rung-f process's iteration
    after an idle gap minus the same process's awake iteration; ``steady``: like ``times``, each
    process's own steady state (pairs every timed iteration with it); ``waited``: like
    ``times``, the ns each sample's threads waited for a CPU (disturbed.py leaves out the
    samples a neighbour took), ``gap_waited`` the same for ``gap``'s pairs; ``placed``: like
    ``times``, bool, the samples whose main thread queued behind a pinned pool worker;
    ``omitted``: step key -> why it cannot exist for this model (component_keys);
    ``resamples``: the bootstrap's draws."""
    rungs = tuple(r for r in KEYS if r in times)
    if len(rungs) < 2 or any(times[r].shape[0] < 1 for r in rungs):
        raise ValueError("attribution needs at least two rungs with a process each")
    placed = None if placed is None else {r: placement.slowed(times[r], m, FLOOR_NS)
                                          for r, m in placed.items() if r in times}
    cols = columns(times, steady, asleep, gap, waited, gap_waited, placed)
    omitted = omitted or {}
    point = _estimate(cols.times, cols.steady, cols.asleep, cols.gap, cols.unread, cols.placed,
                      omitted)
    boot = _bootstrap(cols, seed, omitted, resamples)
    iv = {k: _interval(point[k], boot[k]) for k in point}
    if cols.gap_clean is not None:
        iv["wakeup_gap"] = _unread_gap(iv["wakeup_gap"], cols.gap_clean)
    comps = [k for k in iv if not k.startswith("rung:") and
             k not in ("excess", "wakeup_gap", placement.KEY)]
    iv.update(_unread_steps(iv, cols.unread, rungs, omitted))
    queued = iv.get(placement.KEY)
    queued = None if queued is None else placement.seen_only(queued, Interval(0.0, 0.0, 0.0))
    return Attribution(
        rungs, {r: int(times[r].shape[0]) for r in rungs},
        {r: iv[f"rung:{r}"][:-1] for r in rungs}, {r: iv[f"rung:{r}"][-1] for r in rungs},
        {k: iv[k][:-1] for k in comps}, {k: iv[k][-1] for k in comps},
        iv["excess"][:-1], iv["excess"][-1],
        iv["wakeup_gap"][:-1] if "wakeup_gap" in iv else None,
        iv["wakeup_gap"][-1] if "wakeup_gap" in iv else None,
        left_out={r: n for r, n in cols.left_out.items() if n} or None,
        placed=placement.counted(placed) or None,
        placed_processes=placement.processes(placed) or None,
        placement=None if queued is None else queued[:-1],
        placement_total=None if queued is None else queued[-1], omitted=omitted or None)


def _unread_gap(gap: tuple[Interval, ...], clean: np.ndarray) -> tuple[Interval, ...]:
    """The gap shares with fewer than two pairs no neighbour disturbed (``clean``), with no
    interval: one is a value (every resample that drew it gives it, so the bootstrap's is a
    point), none is noise (beside a spinner the pairs of a 64 MiB op were left out but one,
    76 [76, 76] us, or all, their threads waiting 66-97 ms, 4.4 [2.8, 6.0] ms, and either read
    as the surest wake-up, while the parallel op's was 57 [25, 60] us)."""
    return tuple(x.as_unread() if n < 2 else x for x, n in zip(gap, clean))


def _unread_steps(iv: dict[str, tuple[Interval, ...]], unread: dict[str, np.ndarray],
                  rungs: tuple[str, ...], omitted: Collection[str]
                  ) -> dict[str, tuple[Interval, ...]]:
    """The components whose step has, for an op, a rung no sample of it was left of
    (disturbed.py ``carried``) on either side, with no interval for that op (-inf to inf):
    the carried rung makes one of the two steps 0 and gives the other both steps' cost, read
    as if measured (beside two spinners op 0's rungs b, d, e and f were unread: its 7 ms pool
    creation read as CPU warm-up, 7,063 [2,735, 11,892] us, beside a pool creation of exactly
    0). The model's column is left as it is: it sums the ops' medians."""
    out = {}
    for key, (r1, r2) in component_keys(rungs, omitted):
        keys = POOL_SPLIT if key == "pool" else (key,)
        blind = unread[r1][:-1] | unread[r2][:-1]
        if not blind.any():
            continue
        for k in keys:
            if k in iv:
                ops = [x.as_unread() if b else x for x, b in zip(iv[k][:-1], blind)]
                out[k] = (*ops, iv[k][-1])
    return out


CHUNK = 250  # resamples computed at once: [250, processes, ops] arrays stay a few MB


def _bootstrap(cols: Columns, seed: int, omitted: Collection[str] = (),
               resamples: int = BOOTSTRAP) -> dict[str, np.ndarray]:
    """Every quantity over ``resamples`` resamples of the processes ([resamples, ops + 1], the
    last column the model's): each rung's processes drawn independently (rung a's draw also
    picks its asleep rows), the gap's pairs on their own. The draws are made one resample at
    a time, in a fixed order, so a seed always gives the same intervals; the medians are
    computed CHUNK resamples at a time."""
    times, steady, asleep, gap = cols.times, cols.steady, cols.asleep, cols.gap
    rungs = tuple(r for r in KEYS if r in times)
    rng = np.random.default_rng(seed)
    picks: dict[str, list[np.ndarray]] = {r: [] for r in rungs}
    gap_picks: list[np.ndarray] = []
    for _ in range(resamples):
        for r in rungs:
            picks[r].append(rng.integers(0, times[r].shape[0], times[r].shape[0]))
        if gap is not None:
            gap_picks.append(rng.integers(0, len(gap), len(gap)))
    out: dict[str, list[np.ndarray]] = {}
    for lo in range(0, resamples, CHUNK):
        idx = {r: np.stack(picks[r][lo:lo + CHUNK]) for r in rungs}
        sample = _estimate(
            {r: times[r][idx[r]] for r in rungs},
            None if steady is None else {r: steady[r][idx[r]] for r in rungs},
            None if asleep is None else asleep[idx["a"]],
            None if gap is None else gap[np.stack(gap_picks[lo:lo + CHUNK])], cols.unread,
            None if cols.placed is None else cols.placed[idx["a"]], omitted)
        for k, v in sample.items():
            out.setdefault(k, []).append(v)
    return {k: np.concatenate(v) for k, v in out.items()}


def attribution_of(diag: Diagnosis, seed: int = 0, resamples: int = BOOTSTRAP
                   ) -> Attribution | None:
    """The attribution of a diagnosis's raw records (None with fewer than two rungs);
    ``resamples``: bootstrap draws behind its intervals (fewer: a quicker, rougher look)."""
    times = diag.times()
    if len(times) < 2:
        return None
    steady = clean_steady(diag.steady_times(), diag.steady_waited_times())
    speeds = diag.speeds(steady)
    if steady is not None and speeds is not None:  # in the typical process's units (module doc)
        times = {r: t / speeds[r][:, None] for r, t in times.items()}
        steady = {r: t / speeds[r][:, None] for r, t in steady.items()}
    # the wait of a thread an op created is what creating the pool costs, not a neighbour's
    waited = {r: np.where(records_matrix(rows, "threads_created") > 0, 0.0,
                          waits_matrix(rows))
              for r, rows in diag.runs.items() if rows}
    if steady is not None and speeds is not None:  # in the typical process's units (module doc)
        waited = {r: w / speeds[r][:, None] for r, w in waited.items()}
    asleep = (records_matrix(diag.runs["a"], "asleep_before") > 0
              if "a" in times and "b" in times else None)
    att = attribute(times, asleep, diag.gap_delta(), seed, steady if speeds else None,
                    waited, diag.gap_waited(), placement.judged(diag), _cannot_exist(diag, times),
                    resamples)
    if speeds is None:
        return att
    return replace(att, speeds={r: tuple(float(x) for x in v) for r, v in speeds.items()})


def _cannot_exist(diag: Diagnosis, times: dict[str, np.ndarray]) -> dict[str, str]:
    """The steps that cannot exist for this model, with the reason: no op of any rung-a
    process created a thread (no parallel kernel, or one thread), so there is no pool to
    create or wake, and what rung b's warm-up removed is counted with the next step."""
    if "a" not in times or "b" not in times or not diag.runs.get("a"):
        return {}
    if (records_matrix(diag.runs["a"], "threads_created") > 0).any():
        return {}
    return {"pool": f"no op created a thread in rung a's {len(diag.runs['a'])} processes (no "
                    "parallel kernel, or one thread): there is no thread pool to create or "
                    "wake, so rung b's warm-up is counted with the next step"}
