"""How long a diagnosis will take, from its first round (diagnose's time hint; pure).

Once one process of every rung has run, the ladder's length is known: every later round takes
as long as the first, less the worker-sleep experiment in the rung-f processes that skip it.
What follows the ladder is known too: TVM's protocols take their full runs of the model
(protocols/settings.py ``full_runs``) at the steady time those first processes measured, plus
run_individual's per-op loops; the data check takes a checked run. The estimate is made once,
then the progress line shows the real remaining time.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

from ..protocols.settings import ProtocolSettings
from .spec import DiagnoseSettings

CHECK_RUNS = 2  # the data check after the protocols: a checked run, and its values read


@dataclass(frozen=True)
class Estimate:
    elapsed_s: float        # when it was made, from the start of the diagnosis
    ladder_s: float         # the whole ladder's rounds, the first included
    after_s: float          # what runs after it: TVM's protocols (if asked for), the data check
    before_s: float = 0.0   # what ran before the rounds: the model opened, the zygote started
    budget_s: float = 0.0   # the adaptive ladder's budget, which ``ladder_s`` is (0: none)
    planned_s: float | None = None  # --processes rounds of every rung (None: ``ladder_s``)

    @property
    def total_s(self) -> float:
        return self.before_s + self.ladder_s + self.after_s


def ladder_s(first_round_s: dict[str, float], gap_spent_s: float,
             settings: DiagnoseSettings) -> float:
    """The ladder's seconds from its first round: per rung, the first process's wall time;
    the worker-sleep experiment (``gap_spent_s`` of the first rung-f process) counted only for
    the processes that run it."""
    per_round = sum(first_round_s.values()) - gap_spent_s
    gap_runs = min(settings.gap_processes, settings.processes) if gap_spent_s > 0 else 0
    return per_round * settings.processes + gap_spent_s * gap_runs


def budgeted_s(first_round_s: dict[str, float], gap_spent_s: float,
               settings: DiagnoseSettings, min_rounds: int) -> float:
    """The ladder's seconds under a budget: an adaptive ladder (diagnose/ladder.py ``Stop``)
    runs ``min_rounds`` rounds, then goes on while its intervals are wide, up to the budget;
    it rarely settles sooner (three ResNet-50 diagnoses whose first round projected 28-33 s
    all ran their 45 s), so the budget is the figure to expect. Without one, ``ladder_s``."""
    if settings.budget_s <= 0:
        return ladder_s(first_round_s, gap_spent_s, settings)
    first = ladder_s(first_round_s, gap_spent_s,
                     replace(settings, processes=min(min_rounds, settings.processes)))
    return max(settings.budget_s, first)


def after_s(steady_op_ns: Sequence[float], protocols: bool,
            settings: ProtocolSettings = ProtocolSettings()) -> float:
    """Seconds of what follows the ladder, at the model's steady time per op."""
    run_ns = sum(steady_op_ns)
    if not protocols:
        return CHECK_RUNS * run_ns / 1e9
    return ((settings.full_runs() + CHECK_RUNS) * run_ns
            + settings.individual_ns(steady_op_ns)) / 1e9
