"""Measured conv tiles (``minigraph build --tune``): the candidates, the choice, the cache, and
a real tuned build whose outputs are the untuned build's bits."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import cli_runner
import numpy as np
import pytest

from minigraph.compiler import compiler as C
from minigraph.compiler import tuning
from minigraph.compiler.conv_tiles import TileProblem, conv_tile, vector_part
from minigraph.compiler.packing import packable_args
from minigraph.compiler.schedules import conv_problem
from minigraph.compiler.target import VectorUnit
from minigraph.fileio import cache
from minigraph.measure import bandwidth, peak

AVX512 = VectorUnit(512, 32, "avx512")


@pytest.mark.parametrize("w,c,lanes,regs,tails", [
    (56, 64, 16, 32, False), (28, 128, 16, 32, False), (7, 512, 16, 32, False),
    (56, 256, 8, 16, True), (7, 512, 8, 16, True), (112, 24, 16, 32, False)])
def test_candidates_start_with_the_model_and_fit(w, c, lanes, regs, tails):
    problem = TileProblem(w, c, lanes, regs, tails)
    cands = problem.candidates(8)
    assert cands[0] == conv_tile(w, c, lanes, regs, tails) == problem.model_tile()
    assert len(cands) == len(set(cands)) and 1 <= len(cands) <= 8
    for rows, cols in cands:
        vecs = cols // vector_part(cols, lanes)
        assert c % cols == 0 and rows * vecs + vecs + 1 <= regs
        assert tails or w % rows == 0
    assert problem.candidates(1) == cands[:1]


def test_tails_are_candidates_only_where_allowed():
    with_tails = TileProblem(28, 128, 16, 32, True).candidates(20)
    assert any(28 % r for r, _ in with_tails)
    assert not any(28 % r for r, _ in TileProblem(28, 128, 16, 32, False).candidates(20))


def test_pick_keeps_the_model_within_the_margin():
    model, other = (4, 64), (5, 64)
    assert tuning.pick(model, {model: 1.0, other: 0.99}) == model
    assert tuning.pick(model, {model: 1.0, other: 0.95}) == other
    assert tuning.pick(model, {model: 1.0, other: 1.2}) == model


@pytest.fixture(scope="module")
def tiny_conv():
    """A conv kernel of the tiny CNN as the build sees it (unscheduled) and its constants."""
    mod, params, _, _, _ = C._load_model("tiny-cnn", 1, "float32")
    fused = C.fuse(mod)
    lowered = C.lower_main(fused)
    packable = packable_args(lowered.nodes, {**params, **lowered.constants})
    for name, gv in lowered.kernels.items():
        func = fused[gv]
        if conv_problem(func, AVX512, 16) is not None:
            return func, packable.get(name, frozenset())
    raise AssertionError("tiny-cnn has no conv kernel the conv rule schedules")


class FakeTimer:
    """Times a tile as ``times[tile]`` (default 1.0 s) and counts what was prepared."""

    def __init__(self, times: dict) -> None:
        self.times, self.prepared = times, []

    def __call__(self, tile, func):
        assert func is not None
        self.prepared.append(tile)
        return lambda: self.times.get(tile, 1.0)


def test_tuner_measures_then_reads_the_cache(tiny_conv, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    func, const = tiny_conv
    cands = conv_problem(func, AVX512, 16).candidates(tuning.CANDIDATES)
    if len(cands) < 2:
        pytest.skip("one candidate tile only")
    timer = FakeTimer({cands[-1]: 0.5})
    first = tuning.TileTuner("llvm -mcpu=test", AVX512, 16, 2, timer).choose(func, const)
    assert (first.tile, first.model, first.cached) == (cands[-1], cands[0], False)
    assert sorted(timer.prepared) == sorted(cands)
    assert "0.50x its time" in first.note(2)
    again = FakeTimer({})
    tuner = tuning.TileTuner("llvm -mcpu=test", AVX512, 16, 2, again)
    second = tuner.choose(func, const)
    assert (second.tile, second.cached, again.prepared) == (cands[-1], True, [])
    assert (tuner.cached, tuner.measured) == (1, 0)
    other_threads = FakeTimer({})
    tuning.TileTuner("llvm -mcpu=test", AVX512, 16, 1, other_threads).choose(func, const)
    assert other_threads.prepared  # a choice holds for the thread count it was measured at


def test_a_cached_tile_that_is_no_candidate_is_measured_again(tiny_conv, tmp_path,
                                                              monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    func, const = tiny_conv
    tuning.TileTuner("t", AVX512, 16, 2, FakeTimer({})).choose(func, const)
    (key,) = cache.read_entries(tuning.CACHE)
    cache.store(tuning.CACHE, key, {"tile": [99, 7]})
    timer = FakeTimer({})
    choice = tuning.TileTuner("t", AVX512, 16, 2, timer).choose(func, const)
    assert timer.prepared and not choice.cached and choice.tile == choice.model


@pytest.mark.parametrize("kind", [float, bool])
def test_a_cached_tile_of_floats_or_bools_is_measured_again(tiny_conv, tmp_path, monkeypatch,
                                                            kind):
    """Issue 49 item 8: ``"tile": [8.0, 16]`` or ``[true, 16]`` in the cache equals a candidate
    in Python, and the build died in TVM's Schedule.split with an internal error."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    func, const = tiny_conv
    cands = conv_problem(func, AVX512, 16).candidates(tuning.CANDIDATES)
    tuning.TileTuner("t", AVX512, 16, 2, FakeTimer({})).choose(func, const)
    (key,) = cache.read_entries(tuning.CACHE)
    rows = [t[0] for t in cands if t[0] == 1] if kind is bool else [cands[0][0]]
    if not rows:
        pytest.skip("no candidate tile of one row")
    cache.store(tuning.CACHE, key, {"tile": [kind(rows[0]), cands[0][1]]})
    timer = FakeTimer({})
    choice = tuning.TileTuner("t", AVX512, 16, 2, timer).choose(func, const)
    assert timer.prepared and not choice.cached
    assert all(type(v) is int for v in choice.tile)


def test_a_kernel_without_a_conv_is_not_tuned(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    mod, params, _, _, _ = C._load_model("mlp", 1, "float32")
    fused = C.fuse(mod)
    lowered = C.lower_main(fused)
    timer = FakeTimer({})
    tuner = tuning.TileTuner("t", AVX512, 16, 2, timer)
    assert all(tuner.choose(fused[gv], frozenset()) is None for gv in lowered.kernels.values())
    assert timer.prepared == []


API_BUILD = """
import os, sys
from minigraph.compiler.compiler import build
before = sorted(os.sched_getaffinity(0))
build("tiny-cnn", sys.argv[1], vm=False, tune=True)
print(before == sorted(os.sched_getaffinity(0)))
"""


@pytest.mark.subprocess  # a fresh interpreter (the API build) and CLI processes
def test_tuned_build_runs_the_same_bits(tiny_cnn, tmp_path):
    """A real tuned build (TVM compiles and times each candidate at 1 thread) through the API:
    the caller's CPUs are as they were (setting TVM's pool pins the caller) and build.json
    records the tuning; a second build, through the CLI, reads the cache; the outputs equal
    the untuned build's to the bit, or within 1e-4 where a measured conv algorithm is not
    the model's."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "TVM_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(cli_runner.ROOT), os.environ.get("PYTHONPATH", "")])}
    # the machine's rates (FMA peak, read bandwidth) as earlier builds cached them: the tiles
    # are this test's to measure and cache (measuring the rates too took the build 3 s more)
    (tmp_path / "cache" / "minigraph").mkdir(parents=True)
    for name in (peak.CACHE, bandwidth.CACHE):
        if cache.cache_path(name).is_file():
            shutil.copy(cache.cache_path(name), tmp_path / "cache" / "minigraph" / name)
    res = subprocess.run([sys.executable, "-c", API_BUILD, tmp_path / "tuned1"], env=env,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0 and res.stdout.split() == ["True"], res.stderr
    out = tmp_path / "tuned2"
    cli = cli_runner.run(["build", "tiny-cnn", "-o", out, "--tune", "--no-vm"], env=env)
    assert cli.returncode == 0, cli.stderr
    assert "tuned conv tiles at 1 threads" in cli.stdout
    for run, build in ((1, tmp_path / "tuned1"), (2, out)):
        info = json.loads((build / "build.json").read_text())["tuning"]
        assert info["threads"] == 1
        assert (info["measured"] > 0) if run == 1 else (info["measured"] == 0 < info["cached"])
    notes = [n for k in json.loads((out / "build.json").read_text())["kernels"].values()
             for n in k["schedule"] if n.startswith("tile measured")]
    assert notes
    outs = {}
    for name, build in (("tuned", tmp_path / "tuned2"), ("model", tiny_cnn)):
        res = cli_runner.run(["run", build, "--seed", "3", "--out", tmp_path / name], env=env)
        assert res.returncode == 0, res.stderr
        outs[name] = sorted((tmp_path / name).glob("*.npy"))
    assert outs["tuned"] and [p.name for p in outs["tuned"]] == [p.name for p in outs["model"]]
    # a tile never changes the bits; a measured conv algorithm other than the model's
    # (algorithm_tuning.py: Winograd's or direct) changes the last ones only
    same = _algorithms(tmp_path / "tuned2") == _algorithms(tiny_cnn)
    for a, b in zip(outs["tuned"], outs["model"]):
        if same:
            assert np.array_equal(np.load(a), np.load(b))
        else:
            np.testing.assert_allclose(np.load(a), np.load(b), rtol=1e-4,
                                       atol=1e-4 * np.abs(np.load(b)).max())


def _algorithms(build) -> list[str]:
    return [c["algorithm"] for c in
            json.loads((build / "build.json").read_text())["conv_algorithms"]]


def test_every_candidate_computes_the_same_bits(tiny_conv):
    """The tuner's premise: a tile only changes which outputs are computed together, never the
    order of a sum, so any candidate's kernel gives the model's kernel's bits."""
    import tvm

    from minigraph.compiler.schedules import schedule_func
    func, _ = tiny_conv  # weights left unpacked: every candidate reads the same arrays
    unit = VectorUnit(256, 16, "avx2")  # runs on any x86-64 host this suite runs on
    target = tvm.target.Target({"kind": "llvm", "mcpu": "haswell"})
    cands = conv_problem(func, unit, 8).candidates(3)
    outs = []
    for tile in cands:
        scheduled = schedule_func(func, "default", 8, unit, frozenset(), tile).func
        lib = tvm.compile(tvm.IRModule({"main": scheduled.with_attr("global_symbol", "main")}),
                          target=target).mod
        rng = np.random.default_rng(0)
        args = [tvm.runtime.tensor(rng.standard_normal([int(d) for d in p.shape]).astype(
            str(p.dtype))) for p in scheduled.params]
        lib["main"](*args)
        outs.append(args[-1].numpy())
    assert len(cands) > 1
    assert all(np.array_equal(outs[0], o) for o in outs[1:])


def test_a_candidate_that_fails_to_compile_is_skipped(tiny_conv, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    func, const = tiny_conv
    model = conv_problem(func, AVX512, 16).model_tile()

    def timer(tile, scheduled):
        if tile != model:
            raise RuntimeError("TVM could not compile this one")
        return lambda: 1.0
    choice = tuning.TileTuner("t", AVX512, 16, 2, timer).choose(func, const)
    assert choice.tile == model and dict(choice.seconds) == {model: 1.0}

    def broken(tile, scheduled):
        raise RuntimeError("nothing compiles")
    before = cache.read_entries(tuning.CACHE)
    assert tuning.TileTuner("t2", AVX512, 16, 2, broken).choose(func, const) is None
    assert cache.read_entries(tuning.CACHE) == before  # nothing measured, nothing cached
