"""The measurement modes: one registry that measuring, the CLI, the tables and the exports read.

Definitions (shared with docs/profiling.md):

- first-run: iteration 0 of this process, each op timed alone, with page faults, context
  switches, threads created and the CPU around it.
- one-pass: pool reset, warm-up runs, then ONE timed pass op by op (the old
  ``debug_executor.profile()`` protocol).
- warm: per op, ``time_evaluator`` (untimed first call, number x repeat, min_repeat_ms).
- in-run: per op, timed inside repeated steady-state full runs (each op sees the caches the
  previous op really left), so sum(in-run) reconciles with e2e; its passes are interleaved
  round by round with e2e's runs (profile/steady.py), so both see the same machine.
- e2e: the executor's whole ``run()``, warm; the executor's own overhead is measured beside it,
  in the same rounds.
- cold: per op, caches flushed before every timed call.

Adding a mode: a ``Mode`` row here (in measuring order) and its sampler in samplers.py
(``SAMPLERS``); the CLI's choices, the table's columns and the exports follow from this table.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mode:
    name: str
    per_op: bool            # one row of samples per op (a table column, an export column)
    one_sample: bool        # one sample per op per profile: no spread can be shown
    vs_e2e: str | None      # what e2e - (sum of per-op medians + overhead) measures; None: n/a
    help: str


MODES: tuple[Mode, ...] = (  # measuring order: first-run must come first
    Mode("first-run", True, True, None,
         "iteration 0 of this process, each op timed alone, with counters"),
    Mode("one-pass", True, True, None,
         "pool reset, warm-up runs, one timed pass (the old debug_executor.profile)"),
    Mode("warm", True, False, "ops timed alone keep their own data in cache",
         "time_evaluator per op: untimed first call, number x repeat"),
    Mode("in-run", True, False, None,  # judged against e2e by profile/agreement.py
         "each op timed inside steady-state full runs, interleaved with e2e's"),
    Mode("e2e", False, False, None, "the executor's whole run(), warm, and its own overhead"),
    Mode("cold", True, False, None, "caches flushed before every timed call"),
)
NAMES: tuple[str, ...] = tuple(m.name for m in MODES)
PER_OP: tuple[str, ...] = tuple(m.name for m in MODES if m.per_op)
BY_NAME: dict[str, Mode] = {m.name: m for m in MODES}


def help_text() -> str:
    """One line per mode, for ``--help``."""
    return "; ".join(f"{m.name}: {m.help}" for m in MODES)
