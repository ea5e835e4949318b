"""Which first-iteration samples a neighbour took time from, and the model's own column (pure).

A first iteration is measured once per process, so a neighbour that takes a CPU during it
cannot be averaged away: on a 2-vCPU guest with one busy-looping process, a 20 us parallel
kernel read 3.5 or 7.6 ms in half of the processes (its worker waited a scheduler slice or two
for its CPU while the main thread spun at the barrier), which put "kernel first call" or
"weight first touch" on top of the pool creation the op really paid for. The worker reads how
long each of the op's threads was runnable but waiting for a CPU, and the rules read the
longest of them (measure/counters.py ``longest_wait_ns``; files saved before it read the
threads' sum). Not the sum: beside a neighbour that spins all the time every thread waits
its share all the time, so a fault-bound first run of 40 ms had waited 41 ms summed over two
threads and read as a stall, while a real 200 ms stall showed 157 ms. A wait alone does not
mark a disturbed sample: TVM's idle workers spin and yield, and wait for a CPU while the op
runs without them. What does: a sample slower than the
rung's fastest process by more than ``FLOOR_NS`` whose threads waited about as long as that
difference. Its extra time may be the neighbour's, so it is left out (NaN) before any
median; on a quiet machine nothing waits and nothing is left out. Every process of a rung can
stall on an op (seen in rungs e and f, the workers having just run): a sample more than 4x
its process's steady time, with a wait covering that extra, is left out too; a
rung left with no sample of an op cannot be read for it, and the rung before it is carried
over. The same rule cleans each process's steady
passes (a stalled pass replaced by the median of the clean ones: it would read as a slow
process and divide every other time of it) and, on the sums, the model's column: each process's
sum over its ops (placement.py reads it; the model's rung figures are the per-op medians summed,
attribution.py). Files saved before the wait was recorded read 0: nothing is left out.
Counterpart: none in TVM.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import placement

FLOOR_NS = 100_000   # differences below 0.1 ms: start-up latency, part of what an op costs
STALLED = 4         # a sample 4x its process's steady time, all of it waited: a stall
SHARE = 0.9          # waited (nearly) all of its extra time: the extra is the neighbour's
LONGEST = 1.25       # ... and not much more (on summed waits, stalls read 0.99-1.12 and idle
                     # workers 1.5-30; one thread's longest wait reads no more than its sum)


@dataclass(frozen=True)
class Columns:
    """Per rung [processes, ops + 1] arrays (the last column the model's), masked."""

    times: dict[str, np.ndarray]
    steady: dict[str, np.ndarray] | None
    asleep: np.ndarray | None
    gap: np.ndarray | None
    left_out: dict[str, int]       # rung -> per-op samples left out
    unread: dict[str, np.ndarray]  # rung -> [ops + 1] bool: no sample of that column left
    # rung a's samples whose main thread queued behind a pinned worker (placement.py), NaN
    # elsewhere; left out of ``times`` on every rung. None: no such sample on rung a
    placed: np.ndarray | None = None
    # [ops + 1]: the gap pairs of each column no neighbour disturbed (the model's column: all
    # of them); a column they all were is kept in ``gap`` as it is, but cannot be read
    gap_clean: np.ndarray | None = None


def disturbed(ns: np.ndarray, waited: np.ndarray, floor: np.ndarray | None = None
              ) -> np.ndarray:
    """[processes, ops] True where a sample is slower than the rung's fastest process by more
    than FLOOR_NS and its threads waited for a CPU about as long as that difference (``_as_long``);
    or, with ``floor`` (each process's own steady time), where it stalled outright: more than
    STALLED times its steady time, with a wait of at least SHARE of the extra. A stall is a
    wait the size of the extra time; an idle worker spinning beside a serial kernel waits as
    long as the kernel runs, whatever its extra, hence the window of the first rule and the
    ratio of the second (a serial op's first run was 2.5-3.6x its steady time in the ground
    truth, a stalled parallel kernel up to 200x)."""
    extra = ns - np.min(ns, axis=0, keepdims=True)
    bad = (extra > FLOOR_NS) & _as_long(waited, extra)
    if floor is not None:
        bad |= (ns > STALLED * floor + FLOOR_NS) & (waited >= SHARE * (ns - floor))
    return bad


def _as_long(waited: np.ndarray, extra: np.ndarray) -> np.ndarray:
    """The wait accounts for the extra time: between SHARE and LONGEST of it (the scheduler
    books a wait when the thread next runs, so one that began before the op counts in it)."""
    return (waited >= SHARE * extra) & (waited <= LONGEST * extra)


def _masked(ns: np.ndarray, waited: np.ndarray, floor: np.ndarray | None = None
            ) -> tuple[np.ndarray, int]:
    """NaN where disturbed. A column whose every process was disturbed is all NaN: that
    rung cannot be read for that op, and the attribution carries the rung before it over
    (``carried``), so the step into it reads 0 rather than the neighbour's stall."""
    bad = disturbed(ns, waited, floor)
    return np.where(bad, np.nan, ns), int(bad.sum())


def carried(mid: dict[str, np.ndarray], rungs: tuple[str, ...],
            unread: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Rung estimates with each rung that could not be read for an op (``unread``: no
    sample of it was left) given its previous rung's value (the first rung: its next one's).
    Only those: a bootstrap resample that drew only left-out samples stays NaN, and is
    dropped from the interval, rather than reading as "no step"."""
    out = dict(mid)
    for prev, r in zip(rungs, rungs[1:]):
        out[r] = np.where(unread[r], out[prev], out[r])
    for r, nxt in zip(rungs[-2::-1], rungs[:0:-1]):  # leading rungs no previous one reached
        out[r] = np.where(unread[r] & np.isnan(out[r]), out[nxt], out[r])
    return out


def clean_steady(steady: dict[str, np.ndarray] | None, waited: dict[str, np.ndarray] | None
                 ) -> dict[str, np.ndarray] | None:
    """Each process's steady time per op, a disturbed one (against every rung's processes:
    the steady state does not depend on the rung) replaced by the median of the clean ones.
    A steady time over STALLED times the fastest process's is a stall whatever its recorded
    wait (processes differ in speed by 1.7x at most, measured on a shared VM; and over half
    of a rung's steady passes of a 20 us parallel kernel stalled under one spinning neighbour,
    so the median may be a stall itself)."""
    if steady is None or waited is None:
        return steady
    rungs = list(steady)
    ns = np.concatenate([steady[r] for r in rungs])
    bad = disturbed(ns, np.concatenate([waited[r] for r in rungs]))  # the fastest stays
    bad |= ns > STALLED * np.min(ns, axis=0, keepdims=True)  # replaced: conservative
    typical = np.nanmedian(np.where(bad, np.nan, ns), axis=0)  # the fastest is always clean
    fixed = np.where(bad, typical[None, :], ns)
    bounds = np.cumsum([0] + [len(steady[r]) for r in rungs])
    return {r: fixed[lo:hi] for r, lo, hi in zip(rungs, bounds, bounds[1:])}


def _with_sum(per_op: np.ndarray) -> np.ndarray:
    return np.concatenate([per_op, per_op.sum(axis=1, keepdims=True)], axis=1)


def columns(times: dict[str, np.ndarray], steady: dict[str, np.ndarray] | None,
            asleep: np.ndarray | None, gap: np.ndarray | None,
            waited: dict[str, np.ndarray] | None = None,
            gap_waited: np.ndarray | None = None,
            placed: dict[str, np.ndarray] | None = None) -> Columns:
    """Every quantity the attribution reads, as per-op columns plus the model's; samples a
    neighbour disturbed (``waited``: rung -> [processes, ops] ns) left out, and those whose
    main thread queued behind a pinned worker (``placed``, placement.py) set apart."""
    out, left, on_a = {}, {}, None
    for r, t in times.items():
        w = waited[r] if waited is not None and r in waited else np.zeros_like(t)
        own = None if steady is None else steady[r]
        per_op, left[r] = _masked(t, w, own)
        total, _ = _masked(t.sum(axis=1, keepdims=True), w.sum(axis=1, keepdims=True),
                           None if own is None else own.sum(axis=1, keepdims=True))
        raw = np.concatenate([per_op, total], axis=1)
        out[r], alone = placement.split(raw, None if placed is None else placed.get(r))
        on_a = alone if r == "a" else on_a
    std = None if steady is None else {r: _with_sum(s) for r, s in steady.items()}
    sleep = None if asleep is None else np.concatenate(
        [asleep, asleep.any(axis=1, keepdims=True)], axis=1)
    clean = None
    if gap is not None:  # paired differences: a pair is disturbed when it waited as long
        w = np.zeros_like(gap) if gap_waited is None else gap_waited
        bad = (np.abs(gap) > FLOOR_NS) & (w >= SHARE * np.abs(gap))
        clean = np.append(np.count_nonzero(~bad, axis=0), len(gap))
        bad &= ~bad.all(axis=0, keepdims=True)  # no reference here: keep a column's all
        gap = np.concatenate([np.where(bad, np.nan, gap), gap.sum(axis=1, keepdims=True)],
                             axis=1)
    return Columns(out, std, sleep, gap, left,
                   {r: np.isnan(t).all(axis=0) for r, t in out.items()}, on_a, clean)
