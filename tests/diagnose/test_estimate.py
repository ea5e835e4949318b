"""The diagnosis's time hint, from its first round (exact: wall times are given)."""
from __future__ import annotations

from dataclasses import replace

from minigraph.diagnose.estimate import CHECK_RUNS, after_s, budgeted_s, ladder_s
from minigraph.diagnose.spec import DiagnoseSettings
from minigraph.protocols.settings import ProtocolSettings


def test_the_ladder_is_its_first_round_times_the_processes_with_the_gap_where_it_runs():
    s = DiagnoseSettings(processes=10, gap_processes=4)
    took = {"a": 1.0, "b": 1.0, "f": 3.0}  # rung f's first process ran the 2 s gap experiment
    assert ladder_s(took, 2.0, s) == 3.0 * 10 + 2.0 * 4
    assert ladder_s(took, 0.0, s) == 5.0 * 10  # no experiment: every round alike
    assert ladder_s(took, 2.0, DiagnoseSettings(processes=3, gap_processes=5)) == 3.0 * 3 + 2 * 3


def test_what_follows_the_ladder_is_the_protocols_runs_at_the_steady_time():
    ops = [4e6, 1e4]  # ns: one long op, one shorter than run_individual's 1 ms floor
    p = ProtocolSettings()
    runs = p.full_runs() + CHECK_RUNS
    # run_individual: untimed call + 10 calls each, the short op's repeat grown past 1 ms
    individual = (4e6 + 10 * 4e6) + (1e4 + 10 * 1e4 + 1e6 + 1e4)
    assert after_s(ops, protocols=True) == (runs * sum(ops) + individual) / 1e9
    assert after_s(ops, protocols=False) == CHECK_RUNS * sum(ops) / 1e9
    assert p.full_runs() == 4 * 2 + 2 + 1 + 26 + 26 + 4


def test_under_a_budget_the_ladder_is_expected_to_run_its_budget():
    """An adaptive ladder goes on while its intervals are wide, up to the budget: its first
    round's projection (28-33 s) was what three ResNet-50 diagnoses took without their 45 s."""
    took = {"a": 1.0, "b": 1.0, "f": 3.0}
    s = DiagnoseSettings(processes=6, gap_processes=2, budget_s=45.0)
    assert budgeted_s(took, 2.0, s, min_rounds=3) == 45.0
    assert budgeted_s(took, 0.0, replace(s, budget_s=0.0), 3) == ladder_s(took, 0.0, s)
    # a first few rounds longer than the budget run anyway
    assert budgeted_s({"a": 20.0}, 0.0, s, min_rounds=3) == 60.0
