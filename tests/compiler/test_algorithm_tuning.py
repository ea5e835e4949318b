"""``build --tune`` for conv algorithms (compiler/algorithm_tuning.py): the measured choice
replaces the model's only past the margin, is cached per host and shape, a cache entry that
is not today's candidates' times is measured again, and the real timer compiles and times
every candidate of a small conv with its weight cold."""
from __future__ import annotations

import json

import pytest

from minigraph.compiler import algorithm_tuning
from minigraph.compiler.algorithm_tuning import AlgorithmTuner
from minigraph.compiler.tuning import pick
from minigraph.compiler.conv_algorithms import choose
from minigraph.compiler.machine_rates import MachineRates
from minigraph.compiler.target import make_target, vector_unit
from minigraph.compiler.winograd import F2, F4, ConvShape

SHAPE = ConvShape(1, 8, 8, 16, 16, (1, 1, 1, 1), "float32")  # 2x2 tiles of F(4x4), 4x4 of F(2x2)


class FakeTimer:
    """Times an algorithm as ``times[name]`` and counts what was prepared."""

    def __init__(self, times: dict) -> None:
        self.times, self.prepared = times, []

    def __call__(self, name, func):
        assert func is not None
        self.prepared.append(name)
        return lambda: self.times[name]


def _tuner(times: dict) -> tuple[AlgorithmTuner, FakeTimer]:
    tgt = make_target()
    timer = FakeTimer(times)
    return AlgorithmTuner(tgt, vector_unit(tgt), 16, 2, timer), timer


def test_pick_keeps_the_model_within_the_margin():
    assert pick("F(2x2,3x3)", {"direct": 1.0, "F(4x4,3x3)": 0.99, "F(2x2,3x3)": 1.0}) == \
        "F(2x2,3x3)"
    assert pick("F(2x2,3x3)", {"direct": 1.0, "F(4x4,3x3)": 0.9, "F(2x2,3x3)": 1.0}) == \
        "F(4x4,3x3)"


def test_measures_then_reads_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    times = {"direct": 3e-3, "F(4x4,3x3)": 1e-3, "F(2x2,3x3)": 2e-3}
    tuner, timer = _tuner(times)
    got = tuner.choose(SHAPE, [None, F4, F2], F2)
    assert got.tf is F4 and got.model is F2 and not got.cached
    assert sorted(timer.prepared) == sorted(times)
    assert "F(4x4,3x3) over the model's F(2x2,3x3)" in got.note(2)
    again, timer2 = _tuner({})  # a second build: nothing timed
    got2 = again.choose(SHAPE, [None, F4, F2], F2)
    assert got2.tf is F4 and got2.cached and timer2.prepared == []
    assert (again.measured, again.cached) == (0, 1)


@pytest.mark.parametrize("us", [{"direct": 1.0}, {"direct": True, "F(4x4,3x3)": 1.0,
                                                  "F(2x2,3x3)": 2.0},
                                {"direct": float("nan"), "F(4x4,3x3)": 1, "F(2x2,3x3)": 2},
                                "fast", None])
def test_a_cache_entry_that_is_not_todays_times_is_measured_again(tmp_path, monkeypatch, us):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    tuner, _ = _tuner({})
    key = f"{tuner.prefix} | {algorithm_tuning._shape_key(SHAPE)}"
    (tmp_path / "minigraph").mkdir()
    (tmp_path / "minigraph" / algorithm_tuning.CACHE).write_text(json.dumps({key: {"us": us}}))
    tuner, timer = _tuner({"direct": 1e-3, "F(4x4,3x3)": 2e-3, "F(2x2,3x3)": 3e-3})
    got = tuner.choose(SHAPE, [None, F4, F2], F4)
    assert got.tf is None and not got.cached and len(timer.prepared) == 3


def test_choose_takes_the_measured_algorithm_and_says_both(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    tuner, _ = _tuner({"direct": 1e-3, "F(4x4,3x3)": 2e-3, "F(2x2,3x3)": 3e-3})
    tf, why = choose(SHAPE, 16, lambda: MachineRates(3.72, "given"), tuner)
    assert tf is None
    assert "modelled cost in MMAC" in why and "measured at 2 threads, weights cold" in why


def test_the_real_timer_times_every_candidate_cold(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    tgt = make_target()
    tuner = AlgorithmTuner(tgt, vector_unit(tgt), 16, 1)
    got = tuner.choose(SHAPE, [None, F4, F2], F4)
    seconds = dict(got.seconds)
    assert sorted(seconds) == ["F(2x2,3x3)", "F(4x4,3x3)", "direct"]
    assert all(0 < s < 1 for s in seconds.values())
    stored = json.loads((tmp_path / "minigraph" / algorithm_tuning.CACHE).read_text())
    assert len(stored) == 1 and sorted(next(iter(stored.values()))["us"]) == sorted(seconds)
