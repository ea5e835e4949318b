"""The warm-up ladder: one table of rungs that the worker, the attribution, the reports, the
CLI's help and the README (checked by a test) all read.

Each rung adds one warm-up to the rung before it, so the difference between neighbouring rungs
is what that warm-up removes from a first inference. The a -> b step is split further by the
attribution (workers asleep before the op or not): thread-pool creation vs worker wake-up.
Counterpart: none in TVM; this is what the old debug executor could not separate.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rung:
    key: str
    adds: str                 # what this rung warms, short (report tables, traces)
    before: str               # what is warmed before the timed first iteration, in full
    step: str | None          # component key of the step from the previous rung (a: none)
    measures: str             # what that step measures, in a sentence


@dataclass(frozen=True)
class Component:
    key: str
    label: str                # in sentences and the ladder table
    short: str                # a column heading


RUNGS: tuple[Rung, ...] = (
    Rung("a", "nothing warmed (a user's first inference)",
         "nothing (a user's first inference)", None, ""),
    Rung("b", "+ thread pool created, workers awake",
         "TVM's thread pool created, workers awake", "pool",
         "thread-pool creation (or worker wake-up where rung a's counters saw the workers "
         "asleep)"),
    Rung("w", "+ CPUs kept busy (clocks, idle vCPUs)",
         "every CPU kept busy for 100 ms by the pool (no model code)", "cpu_warmup",
         "CPU warm-up: clocks ramping, idle vCPUs being scheduled (on a VM a parallel burst "
         "after idle can take several times longer)"),
    Rung("c", "+ activation storage pre-touched", "activation storage pre-touched",
         "activation_faults", "activation page faults"),
    Rung("d", "+ weights pre-touched", "weights pre-touched (one byte read per page)",
         "weight_touch",
         "weight first touch (TLB, page tables; page faults where weights were never written)"),
    Rung("e", "+ every kernel run once on scratch buffers",
         "every kernel run once on scratch buffers", "kernel_first_call",
         "kernel first call (code pages, workspaces, and what running the kernels warms in the "
         "machine: clocks, idle vCPUs)"),
    Rung("f", "+ k full runs (steady state)", "k full runs on the real buffers", "cache_residual",
         "cache residual (the real data warm in cache)"),
)
KEYS: tuple[str, ...] = tuple(r.key for r in RUNGS)
BY_KEY: dict[str, Rung] = {r.key: r for r in RUNGS}

COMPONENTS: dict[str, Component] = {c.key: c for c in (
    Component("pool_creation", "thread-pool creation", "pool"),
    Component("worker_wakeup", "worker wake-up", "wake-up"),
    Component("cpu_warmup", "CPU warm-up (clocks, idle vCPUs)", "CPU warm"),
    Component("activation_faults", "activation page faults", "act. faults"),
    Component("weight_touch", "weight first touch", "weights"),
    Component("kernel_first_call", "kernel first call (code, workspace, machine)", "1st call"),
    Component("cache_residual", "cache residual", "cache"),
)}
# not a rung's step, nor a part of the typical first run's excess: measured apart where it
# happened (diagnose/placement.py)
PLACEMENT = Component("thread_placement", "main thread queued behind a pinned pool worker",
                      "placement")
POOL_SPLIT = ("pool_creation", "worker_wakeup")  # the a -> b step ("pool"), split by counters


def reached(rung: str, target: str) -> bool:
    """True if ``rung`` includes the warm-up that ``target`` adds."""
    return KEYS.index(rung) >= KEYS.index(target)


def label(key: str) -> str:
    """A component key (or keys joined with '+' for a step over skipped rungs) in words."""
    pool = " or ".join(COMPONENTS[k].label for k in POOL_SPLIT)  # the a -> b step, unsplit
    return " + ".join(COMPONENTS[k].label if k in COMPONENTS else pool if k == "pool" else k
                      for k in key.split("+"))


def short(key: str) -> str:
    return "+".join(COMPONENTS[k].short if k in COMPONENTS else k for k in key.split("+"))


def help_table() -> str:
    """The ladder as plain lines, for ``diagnose --help``."""
    return "\n".join(f"  {r.key}  {r.before}" + (f"; the step measures {r.measures}" if r.step
                                                 else "") for r in RUNGS)


def markdown_table() -> str:
    """The ladder as the README's Markdown table (a test keeps the README equal to it)."""
    rows = ["| rung | before the timed first iteration | the step from the previous rung "
            "measures |", "|---|---|---|"]
    rows += [f"| {r.key} | {r.before} | {r.measures} |".replace("|  |", "| |") for r in RUNGS]
    return "\n".join(rows)
