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

Adding a mode: a ``ModeName`` member and a ``Mode`` row here (in measuring order) and its
sampler in samplers.py (``SAMPLERS``); the CLI's choices, the table's columns and the exports
follow from this table. Code names a mode by its ``ModeName`` member, never by a string of its
own; only this module spells the names, and the readers of saved files meet them as strings.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class ModeName(str, Enum):
    """A mode's name: a str (saved files, JSON and msgpack hold the plain name, and a name
    read from a file is equal to its member), printed, formatted and repr'd as that name so
    that messages, ``--help`` and argparse's choices read exactly as the names do."""

    FIRST_RUN = "first-run"
    ONE_PASS = "one-pass"
    WARM = "warm"
    IN_RUN = "in-run"
    E2E = "e2e"
    COLD = "cold"

    def __str__(self) -> str:
        return self.value

    def __repr__(self) -> str:
        return repr(self.value)

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


@dataclass(frozen=True)
class Mode:
    name: ModeName
    per_op: bool            # one row of samples per op (a table column, an export column)
    one_sample: bool        # one sample per op per profile: no spread can be shown
    vs_e2e: str | None      # what e2e - (sum of per-op medians + overhead) measures; None: n/a
    help: str


MODES: tuple[Mode, ...] = (  # measuring order: first-run must come first
    Mode(ModeName.FIRST_RUN, True, True, None,
         "iteration 0 of this process, each op timed alone, with counters"),
    Mode(ModeName.ONE_PASS, True, True, None,
         "pool reset, warm-up runs, one timed pass (the old debug_executor.profile)"),
    Mode(ModeName.WARM, True, False, "ops timed alone keep their own data in cache",
         "time_evaluator per op: untimed first call, number x repeat"),
    Mode(ModeName.IN_RUN, True, False, None,  # judged against e2e by analysis/agreement.py
         "each op timed inside steady-state full runs, interleaved with e2e's"),
    Mode(ModeName.E2E, False, False, None,
         "the executor's whole run(), warm, and its own overhead"),
    Mode(ModeName.COLD, True, False, None, "caches flushed before every timed call"),
)
assert tuple(m.name for m in MODES) == tuple(ModeName)  # one row per name, in measuring order
NAMES: tuple[ModeName, ...] = tuple(m.name for m in MODES)
PER_OP: tuple[ModeName, ...] = tuple(m.name for m in MODES if m.per_op)
BY_NAME: dict[str, Mode] = {m.name: m for m in MODES}  # a name read from a file finds its row


def help_text() -> str:
    """One line per mode, for ``--help``."""
    return "; ".join(f"{m.name}: {m.help}" for m in MODES)
