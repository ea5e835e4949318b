"""In-run against e2e (analysis/agreement.py), on profiles built by hand so every verdict is
exact: they agree, the machine changed speed (even where the spread that change widened would
have allowed the gap), or they differ with nothing to blame."""
from __future__ import annotations

from minigraph.analysis.agreement import agreement_of
from minigraph.analysis.thresholds import AGREEMENT_FLOOR
from minigraph.report.summary import _agreement
from minigraph.results.profile import Profile

OPS = 4


def _profile(e2e_ms: list[float], inrun_share: float = 1.0, others_cpus: float = 0.0
             ) -> Profile:
    """Rounds whose e2e run took ``e2e_ms`` and whose in-run pass took ``inrun_share`` of it,
    split evenly over OPS ops; the counters say other processes used ``others_cpus``."""
    rows = [[e * 1e6 * inrun_share / OPS for e in e2e_ms] for _ in range(OPS)]
    rounds = [{"t_s": k * 0.2, "wall_s": 0.2, "stamp_ns": 0.0, "e2e_first": k % 2 == 0,
               "since_s": (k + 1) * 0.2, "busy_s": (k + 1) * 0.2 * (1 + others_cpus),
               "steal_s": 0.0, "own_s": (k + 1) * 0.2, "cpus": 2}
              for k in range(len(e2e_ms))]
    return Profile(ops=[{"name": f"op{i}"} for i in range(OPS)], settings={},
                   samples={"in-run": rows}, e2e_ns=[e * 1e6 for e in e2e_ms],
                   dispatch_ns=[0.0] * len(e2e_ms), rounds=rounds)


def test_a_steady_machine_with_matching_sums_agrees():
    ag = agreement_of(_profile([50.0, 50.5, 49.5] * 7))
    assert ag.verdict == "agree" and abs(ag.gap) < AGREEMENT_FLOOR and not ag.evidence()
    assert "they agree" in _agreement(_profile([50.0, 50.5, 49.5] * 7))[0]


def test_a_drifting_machine_is_called_disturbed_even_within_its_spread():
    """e2e 40 ms in the first rounds, 60 ms in the last; in-run takes 94% of each round's
    e2e: the 6% gap is within the wide spread the drift made, and still not agreement."""
    prof = _profile([40.0] * 7 + [50.0] * 7 + [60.0] * 7, inrun_share=0.94)
    ag = agreement_of(prof)
    assert ag.drift > 0.4 and abs(ag.gap) <= ag.bound  # the spread would have allowed it
    assert ag.verdict == "disturbed" and not ag.agrees
    assert any("drifted" in e for e in ag.evidence())
    line = _agreement(prof)[0]
    assert "the machine's: it changed speed" in line and "drifted by" in line


def test_a_busy_machine_is_evidence():
    prof = _profile([50.0, 51.0, 49.0] * 7, inrun_share=0.9, others_cpus=0.8)
    ag = agreement_of(prof)
    assert ag.verdict == "disturbed"
    assert any("other processes used 0.80 CPUs" in e for e in ag.evidence())


def test_a_gap_beyond_the_spread_with_nothing_to_blame_differs():
    """Every round's in-run pass is 10% under its e2e run, on a steady, quiet machine: a real
    difference between an op-by-op pass and a run, said as such."""
    prof = _profile([50.0, 50.2, 49.8] * 7, inrun_share=0.9)
    ag = agreement_of(prof)
    assert ag.verdict == "differ" and not ag.evidence()
    assert "nothing shows the machine changing speed" in _agreement(prof)[0]


def test_a_profile_without_interleaved_rounds_is_not_judged():
    prof = _profile([50.0] * 3)
    prof.rounds = []
    assert agreement_of(prof) is None
