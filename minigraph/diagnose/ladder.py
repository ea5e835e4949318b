"""Fresh processes x warm-up ladder -> a Diagnosis of raw records (diagnose's parent side).

The parent never times a kernel of the ladder itself: every first iteration happens in a fresh
process, because only a fresh process has no thread pool, no faulted-in pages and cold code.
By default each is forked from a zygote that has imported Python, NumPy and TVM and done
nothing else (forkserver.py); ``start="spawn"`` starts ``python -m minigraph.diagnose.worker``
instead, which pays the imports every time. Rungs are interleaved across processes (a b c .. f,
a b c .. f, ...) so that drift on a noisy machine spreads over all rungs instead of biasing one;
an adaptive ladder's later rounds run only its noisiest rungs (``Stop``), still interleaved.
Ctrl-C or SIGTERM kills the running child (no orphans) and keeps what was measured, marked
partial. Counterpart: none in TVM; the debug executor only ever measured rung "one-pass".
"""
from __future__ import annotations

import contextlib
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator

from ..errors import MinigraphError
from ..measure.child import ChildExit, ChildTimeout, describe_death, importing_this_tree, run_child
from ..measure.clock import Progress, no_progress
from ..measure.contention import Sample, between, own_cpu_s, recorded, sample, tree_cpu_s
from ..measure.inflight import child_record, crash_message, read_record_at, reset_record
from ..results.attribution import Attribution, Interval
from ..results.diagnosis import Diagnosis, records_matrix
from ..runtime.doors import ModelFiles
from ..threadpool.environ import pool_environ
from ..threadpool.wake import build_wake_library
from .attribution import attribution_of
from .forkserver import ForkServer
from .spec import DiagnoseSettings, WorkerSpec

Runner = Callable[[WorkerSpec, dict, float], dict]  # (spec, environment, timeout) -> result


def worker_env(threads: int) -> dict[str, str]:
    """A fresh worker's environment: its pool's worker count (threadpool/environ.py),
    minigraph importable from this tree; the LLM ladder's workers start with it too."""
    return importing_this_tree(pool_environ(threads))


def spawn(spec: WorkerSpec, env: dict[str, str], timeout_s: float) -> dict:
    """Runs one fresh worker in a new interpreter (measure/child.py: killed and reaped on
    timeout or Ctrl-C)."""
    try:
        done = run_child([sys.executable, "-m", "minigraph.diagnose.worker", spec.to_json()],
                         env=env, timeout_s=timeout_s)
    except ChildTimeout:
        raise _timed_out(spec, timeout_s) from None
    return worker_result(spec, done)


def forked(server: ForkServer) -> Runner:
    """A Runner that forks each worker from ``server``'s pre-imported zygote; its ``ready``
    waits for the zygote (the ladder does, before its first round is timed), its ``cpu_s``
    is the CPU time the zygote and the workers it reaped have used so far (ours, though not
    yet in this process's ``os.times()``: the zygote is reaped when the ladder ends)."""
    def run(spec: WorkerSpec, env: dict, timeout_s: float) -> dict:
        try:
            return worker_result(spec, server.run(spec, timeout_s))
        except TimeoutError:
            raise _timed_out(spec, timeout_s) from None
    run.ready = server.ready  # type: ignore[attr-defined]
    run.cpu_s = lambda: tree_cpu_s(server.zygote_pid)  # type: ignore[attr-defined]
    return run


def _own_cpu_s(start: Runner) -> float:
    """Our CPU time so far (measure/contention.py), plus what the runner's unreaped helpers
    used (the zygote and its workers)."""
    return own_cpu_s() + getattr(start, "cpu_s", lambda: 0.0)()


def _timed_out(spec: WorkerSpec, timeout_s: float) -> MinigraphError:
    return MinigraphError(f"rung {spec.rung}: the worker took more than {timeout_s:.0f} s and "
                          "was killed")


def worker_result(spec: WorkerSpec, done: ChildExit) -> dict:
    """A worker's records from how it ended (its last stdout line is JSON)."""
    lines = done.stdout.strip().splitlines()
    result = done.last_json() if lines else {"error": "no output"}
    if result is None:
        result = {"error": f"unreadable output: {lines[-1][:200]}"}
    if done.returncode < 0:  # a signal: what it was running, from its in-flight record
        raise MinigraphError(f"rung {spec.rung}: " + crash_message(
            -done.returncode, read_record_at(spec.inflight), "the worker"))
    if not done.ok or "error" in result:
        why = result.get("error") or (done.stderr.strip().splitlines() or ["?"])[-1]
        trace = f"\nworker traceback:\n{result['traceback']}" if result.get("traceback") else ""
        raise MinigraphError(f"rung {spec.rung}: worker {describe_death(done.returncode)}: "
                             f"{why}{trace}")
    return result


@contextlib.contextmanager
def runner(settings: DiagnoseSettings, env: dict[str, str]) -> Iterator[Runner]:
    """The settings' way of starting fresh processes: forked from a zygote (default) or
    spawned; the zygote is ended and reaped when the block ends, however it ends."""
    if settings.start == "spawn":
        yield spawn
        return
    with ForkServer(env) as server:
        yield forked(server)


def _record(diag: Diagnosis, result: dict, nops: int) -> None:
    rung = result["rung"]
    if len(result["ops"]) != nops:
        raise MinigraphError(f"rung {rung}: worker timed {len(result['ops'])} ops, expected {nops}")
    steady = result.get("steady")
    if steady is not None and len(steady) != nops:
        raise MinigraphError(f"rung {rung}: worker's steady passes cover {len(steady)} ops, "
                             f"expected {nops}")
    diag.runs.setdefault(rung, []).append(result["ops"])
    if steady is not None:
        diag.steady.setdefault(rung, []).append(steady)
        diag.steady_waited.setdefault(rung, []).append(result.get("steady_waited") or
                                                       [[0] * len(x) for x in steady])
    diag.prepared.setdefault(rung, []).append(result.get("prepared", {}))
    diag.pinned.setdefault(rung, []).append([int(c) for c in result.get("pinned_cpus", [])])
    if result.get("probe"):
        diag.probes.setdefault(rung, []).append(result["probe"])
    if "gap_ops" in result:
        diag.gap_runs.append(result["gap_ops"])
        diag.gap_base_runs.append(result["gap_base_ops"])
        diag.gap_asleep.append(result["gap_asleep"])


FirstRound = Callable[[dict[str, float], float], None]  # (s per rung, gap experiment's s)


def run_ladder(diag: Diagnosis, files: ModelFiles, settings: DiagnoseSettings, *,
               progress: Progress = no_progress, run: Runner | None = None,
               debug: bool = False, inputs: dict[str, str] | None = None,
               first_round: FirstRound | None = None, stop: Stop | None = None
               ) -> Diagnosis:
    """Fills ``diag.runs``; a failing process is recorded and the ladder goes on. ``run``
    replaces the settings' way of starting processes (tests fake it); ``inputs``: .npy files
    of inputs every process reads (the others get seeded data); ``first_round`` is told,
    once every rung has had a process, how long each took (diagnose/estimate.py); ``stop``:
    the rule that decides the rounds (default ``Stop(settings)``; its ``reason`` says, after,
    why the ladder ended). ``settings.threads`` is resolved (values/session.py does)."""
    env = worker_env(settings.threads)
    stop = stop or Stop(settings)
    with recorded(diag.contention):  # closes after the zygote is reaped: its CPU time is ours
        try:
            with tempfile.TemporaryDirectory(prefix="minigraph-diagnose-") as tmp, \
                    contextlib.nullcontext(run) if run else runner(settings, env) as start, \
                    child_record(tmp) as (record, path):  # a crashed worker's op in flight
                window = sample(own=lambda: _own_cpu_s(start))
                wake = str(build_wake_library(tmp))  # while the zygote imports
                getattr(start, "ready", lambda: None)()  # start-up: not one of the rounds
                context = _Context(diag, files, settings, wake, env, start, progress, debug,
                                   inputs, record, str(path))
                p, started = 0, time.monotonic()
                while True:
                    _contention_so_far(diag, window, start)
                    rungs = stop.next_round(diag, p, time.monotonic() - started)
                    if not rungs:
                        break
                    took, gap = _round(context, rungs, stop.gaps)
                    if p == 0 and first_round is not None:
                        first_round(took, gap)
                    stop.took(took, gap)
                    p += 1
        except KeyboardInterrupt:
            diag.partial = True
            stop.reason = "interrupted"
    if not diag.runs and not diag.partial:
        raise MinigraphError("no worker process succeeded: " + "; ".join(diag.failures[:3]))
    return diag


def _contention_so_far(diag: Diagnosis, window: Sample | None, start: Runner) -> None:
    """Records the contention since ``window`` in ``diag``, as the finished diagnosis will
    record it over the whole ladder: the attribution the rounds are decided on must judge the
    samples as the report will (placement.py sets apart no sample on a busy machine; read
    without it, a ladder beside a spinner stopped on a pool creation of 162 [160, 165] us that
    the report gave as 8,936 [161, 9,932] us)."""
    so_far = between(window, sample(own=lambda: _own_cpu_s(start)))
    diag.contention.update(so_far.to_dict() if so_far else {})


MIN_ROUNDS = 3      # an adaptive ladder's first full rounds, before its intervals are read
MAX_PER_RUNG = 8    # ... and a rung's most processes, in multiples of ``processes``
# a rung whose interval is narrower than this share of the widest rung's adds little to the
# interval of any step it is a side of (the two sides' variances add): it waits, the noisy
# rungs get the processes (on ResNet-50 rung a's interval was 2.5-5x the quiet rungs')
SPREAD = 0.5
# ... but no rung falls below this share of the most-measured rung's processes: a few
# processes that a slow spell hit alike give a narrow interval around the wrong time (three
# rung-b processes all 5 ms slow read as a 5 ms "negative pool creation" beside 22 of rung a)
KEEP_UP = 0.5
# bootstrap draws behind the between-rounds look (the report's own take attribution.BOOTSTRAP):
# the budget counts the time it takes, and 2000 draws after every round took 8 s of a
# ResNet-50 ladder's 45 s; 500 move an interval's ends by a few percent of its width
STOP_RESAMPLES = 500


class Stop:
    """Which rungs the next round of processes runs (none: stop). Without a budget, every rung,
    exactly ``processes`` times. With one, every rung for MIN_ROUNDS rounds; then only the
    rungs whose interval is at least SPREAD of the widest (more processes where the intervals
    say so: a rung's interval narrows as the square root of its processes), until two rounds
    in a row are settled with the same verdict (one settled round can be a few lucky
    processes: on ResNet-50 a ladder that stopped at its third round named another top cause
    than the two that went on), the next round would overrun the budget, or every wide rung
    has MAX_PER_RUNG x ``processes``. The worker-sleep experiment is adaptive too: while its
    answer is not settled (``gap_settled``), the next rung-f process runs it as well (``gaps``),
    and the ladder does not stop for it before the budget or MAX_PER_RUNG x ``processes``.

    After the last round, ``reason`` says why the ladder ended: "count" (no budget: the
    ``processes`` asked for), "settled", "budget" (the next round would not fit), "most"
    (every rung still wide has its most processes), "interrupted", or "" (still running)."""

    def __init__(self, settings: DiagnoseSettings) -> None:
        self.settings = settings
        self.before: tuple | None = None   # the previous round's verdict, if settled
        self.cost_s: dict[str, float] = {}  # rung -> its latest process's wall time (s)
        self.gap_cost_s = 0.0              # the worker-sleep experiment's latest seconds
        self.gaps = False                  # the next round's rung-f process runs it as well
        self.reason = ""

    def took(self, took_s: dict[str, float], gap_s: float) -> None:
        """The round that just ran: its processes' wall times, the worker-sleep experiment's
        seconds (which only the rung-f processes that run it pay) left out of rung f's."""
        self.cost_s.update(took_s)
        if "f" in took_s:
            self.cost_s["f"] = max(0.0, took_s["f"] - gap_s)
        if gap_s > 0:
            self.gap_cost_s = gap_s

    def next_round(self, diag: Diagnosis, done: int, elapsed_s: float) -> tuple[str, ...]:
        s = self.settings
        self.gaps = False
        if s.budget_s <= 0:
            if done < s.processes:
                return s.rungs
            self.reason = "count"
            return ()
        if done < MIN_ROUNDS:
            return s.rungs
        att = attribution_of(diag, resamples=STOP_RESAMPLES)
        if att is None:  # fewer than two rungs measured: nothing more to learn
            self.reason = "most"
            return ()
        now = verdict(att) if settled(att) else None
        same, self.before = now is not None and now == self.before, now
        most = MAX_PER_RUNG * s.processes
        rungs = () if same else wide_rungs(att, most)
        gap_open = not gap_settled(diag, att, s)
        gaps = gap_open and len(diag.runs.get("f", ())) < most
        if gaps and "f" not in rungs:
            rungs += ("f",)
        if not rungs:
            self.reason = "settled" if same and not gap_open else "most"
            return ()
        cost_s = sum(self.cost_s.get(r, 0.0) for r in rungs) + (self.gap_cost_s if gaps else 0)
        if elapsed_s + cost_s > s.budget_s:
            self.reason = "budget"
            return ()
        self.gaps = gaps
        return rungs


def wide_rungs(att: Attribution, most: int) -> tuple[str, ...]:
    """The rungs whose model total's interval is at least SPREAD of the widest one's, or
    whose processes are fewer than KEEP_UP of the most-measured rung's, in ladder order,
    leaving out those that have ``most`` processes already."""
    width = {r: att.rung_total[r].hi_ns - att.rung_total[r].lo_ns for r in att.rungs}
    widest = max((w for w in width.values() if w == w), default=0.0)  # NaN: unread, skipped
    behind = KEEP_UP * max(att.processes.values())
    return tuple(r for r in att.rungs if att.processes[r] < most and
                 (not widest > 0 or width[r] >= SPREAD * widest or width[r] != width[r]
                  or att.processes[r] < behind))


@dataclass(frozen=True)
class _Context:
    """What every process of the ladder is started with."""

    diag: Diagnosis
    files: ModelFiles
    settings: DiagnoseSettings
    wake: str
    env: dict[str, str]
    start: Runner
    progress: Progress
    debug: bool
    inputs: dict[str, str] | None
    record: object            # the in-flight record a crashed worker leaves (child_record)
    record_path: str
    counts: dict[str, int] = field(default_factory=dict)  # rung -> processes started


def _round(c: _Context, rungs: tuple[str, ...], gaps: bool = False
           ) -> tuple[dict[str, float], float]:
    """One more process of each of ``rungs``; returns each one's wall time (s) and how long
    the worker-sleep experiment took in it. ``gaps``: the rung-f process runs the experiment
    whatever its number (an adaptive ladder's, while its answer is not settled)."""
    took, gap = {}, 0.0
    for rung in rungs:
        p = c.counts.get(rung, 0)
        c.counts[rung] = p + 1
        c.progress(rung, p, c.settings.processes)
        spec = WorkerSpec.for_rung(c.settings, c.files, rung, c.wake, c.debug, p, c.inputs,
                                   c.record_path, more_gap=gaps)
        reset_record(c.record)
        t0 = time.monotonic()
        result = _run_one(c.diag, spec, p, c.env, c.settings.timeout_s, c.start)
        took[rung] = time.monotonic() - t0
        gap += float((result or {}).get("gap_wall_s", 0.0))
    return took, gap


def _run_one(diag: Diagnosis, spec: WorkerSpec, p: int, env: dict[str, str], timeout_s: float,
             run: Runner) -> dict | None:
    try:
        result = run(spec, env, timeout_s)
        _record(diag, result, len(diag.ops))
        return result
    except MinigraphError as err:
        if not diag.runs:  # nothing has worked yet: the cause is not noise
            raise
        diag.failures.append(f"process {p}: {err}")
        return None


TIGHT = 0.5  # an interval narrower than half its median: the cause is settled
# every component's interval narrower than this share of the excess: one that is unresolved
# (its interval includes 0) is then within about half of it of 0, so whether it turns out
# resolved in the next diagnosis moves the resolved share by ~12 points at most, per such
# component; with the verdict alone settled, three ResNet-50 diagnoses stopped after 4 rounds
# at 103/71/80%
SHARE_WIDTH = 0.25


def verdict(att: Attribution) -> tuple[str | None, int | None, str | None]:
    """What a diagnosis answers: the model's largest resolved component, the op with the
    largest excess, and that op's largest resolved component."""
    top = att.ranked()[0] if att.excess else None
    return att.dominant(), top, None if top is None else att.dominant(top)


def tight(iv: Interval) -> bool:
    """Resolved (interval above 0) and narrower than TIGHT of its median."""
    return iv.lo_ns > 0 and iv.hi_ns - iv.lo_ns <= TIGHT * iv.median_ns


def gap_settled(diag: Diagnosis, att: Attribution, settings: DiagnoseSettings) -> bool:
    """Whether the worker-sleep experiment's answer is settled: it is not run (no gap, no
    rung f), no op found the workers asleep after a gap (nothing to wake: more pairs would not
    change that), or the wake-up share of the op that found them asleep in most gap processes
    (its counters, ``asleep_before``) is tight. Only the experiment's own processes pay for
    more pairs, so it needs no share of the excess."""
    if settings.gap_s <= 0 or settings.gap_processes <= 0 or "f" not in settings.rungs:
        return True
    if att.wakeup_gap is None:  # none of its processes succeeded yet: another one tries
        return False
    woke = (records_matrix(diag.gap_runs, "asleep_before") > 0).sum(axis=0)
    if not woke.any():
        return True
    return tight(att.wakeup_gap[int(woke.argmax())])


def settled(att: Attribution) -> bool:
    """Whether more processes would not change the answer: the model's excess and its
    largest component, and the largest component of the op with the largest excess, are
    each resolved (interval above 0) and tight (narrower than TIGHT of the median), and no
    component of the model is wider than SHARE_WIDTH of its excess."""
    top_op = att.ranked()[0] if att.excess else None
    model = max(att.component_total.values(), key=lambda iv: iv.median_ns, default=None)
    op = None if top_op is None else max((v[top_op] for v in att.components.values()),
                                         key=lambda iv: iv.median_ns, default=None)
    narrow = all(iv.hi_ns - iv.lo_ns <= SHARE_WIDTH * att.excess_total.median_ns
                 for iv in att.component_total.values())
    return narrow and all(iv is not None and tight(iv) for iv in (att.excess_total, model, op))
