"""compare: verdicts against run-to-run noise (no crying wolf), a real 2x change found, the
summary line, settings that differ, different models refused, the JSON export."""
from __future__ import annotations

import json
import math
import random
import statistics
import time
from dataclasses import replace
from pathlib import Path

import cli_runner
import pytest

from minigraph.analysis.comparison import Comparison
from minigraph.analysis.thresholds import CUTOFFS
from minigraph.errors import InputError
from minigraph.measure.significance import Pair, compare_pairs, mann_whitney_p, spread_of
from minigraph.report.compare import compare, shift_line, to_dict
from minigraph.results.profile import Profile, Settings

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def _ops(n: int, prefix: str = "op") -> list[dict]:
    return [{"index": i, "name": f"{prefix}{i}", "func_name": f"f{i}", "kind": "conv2d",
             "hash": f"h{i}", "shapes": [], "layouts": {}} for i in range(n)]


def _runs(n_ops: int, seed: int, run_to_run: float = 0.03, within: float = 0.01,
          n: int = 21, scale: dict[int, float] | None = None) -> list[list[float]]:
    """One profile's warm samples as a real machine gives them: each op's level moves by
    ``run_to_run`` between processes (placement, clocks), samples inside one process by
    ``within`` only."""
    rng = random.Random(seed)
    rows = []
    for i in range(n_ops):
        level = (10_000 + 1_000 * i) * math.exp(rng.gauss(0, run_to_run)) * (scale or {}).get(i, 1)
        rows.append([level * math.exp(rng.gauss(0, within)) for _ in range(n)])
    return rows


def test_back_to_back_noise_is_not_a_change_but_a_2x_op_is():
    """56 ops (ResNet-50's count), levels 3% apart between the two processes, samples 1%
    apart inside each: the raw-sample test alone calls most ops changed; compare flags at most
    10%, and finds the one op made 2x slower."""
    a, b = _runs(56, seed=1), _runs(56, seed=2)
    pairs = [Pair(f"op{i}", x, y) for i, (x, y) in enumerate(zip(a, b))]
    naive = sum(1 for p in pairs if mann_whitney_p(p.a_ns, p.b_ns) < 0.01 and
                abs(sorted(p.b_ns)[10] / sorted(p.a_ns)[10] - 1) >= 0.02)
    assert naive > 0.3 * len(pairs)  # what the old compare did on data like this
    cmp = compare_pairs(pairs, CUTOFFS)
    assert len(cmp.differ) <= 0.1 * len(pairs), [(d.name, d.ratio) for d in cmp.differ]
    assert 0.02 < cmp.run_to_run < 0.08  # the 3% run-to-run spread, estimated from the data
    slowed = _runs(56, seed=2, scale={17: 2.0})
    cmp2 = compare_pairs([Pair(f"op{i}", x, y) for i, (x, y) in enumerate(zip(a, slowed))],
                         CUTOFFS)
    assert cmp2.deltas[17].verdict == "slower" and 1.8 < cmp2.deltas[17].ratio < 2.2
    assert len(cmp2.differ) <= 0.1 * len(pairs)


def test_half_of_the_ops_changed_is_still_seen():
    """The noise estimate survives half of the ops really changing (e.g. one thread instead of
    two for every parallel op): the shortest half of the ratios, not their overall spread."""
    a = _runs(20, seed=3)
    b = _runs(20, seed=4, scale={i: 2.0 for i in range(0, 20, 2)})
    cmp = compare_pairs([Pair(f"op{i}", x, y) for i, (x, y) in enumerate(zip(a, b))], CUTOFFS)
    assert {d.name for d in cmp.differ} >= {f"op{i}" for i in range(0, 20, 2)}
    assert cmp.count("slower") <= 11 and cmp.count("faster") <= 1


def test_a_shift_every_op_shares_is_set_apart_and_an_op_beyond_it_is_seen():
    """Two processes of one machine often differ by a shift every op shares (seen here: up to
    1.65x on a VM): that is said on its own line, not as N ops differing; an op that moved
    beyond it is still a change, and a 2.5x move of every op stays a change of every op."""
    a = _runs(12, seed=5)
    shifted = compare_pairs([Pair(f"op{i}", x, [v * 1.3 for v in y]) for i, (x, y)
                             in enumerate(zip(a, _runs(12, seed=6)))], CUTOFFS)
    assert not shifted.differ and abs(shifted.shift - 1.3) < 0.05
    line = shift_line(shifted)
    assert line.startswith("Whole run: B is 1.") and "x slower than A, every op alike" in line
    one = compare_pairs([Pair(f"op{i}", x, [v * (2.6 if i == 4 else 1.3) for v in y])
                         for i, (x, y) in enumerate(zip(a, _runs(12, seed=6)))], CUTOFFS)
    assert [d.name for d in one.differ] == ["op4"] and one.differ[0].verdict == "slower"
    doubled = compare_pairs([Pair(f"op{i}", x, [v * 2.5 for v in y]) for i, (x, y)
                             in enumerate(zip(a, _runs(12, seed=6)))], CUTOFFS)
    assert len(doubled.differ) == 12 and doubled.shift == 1.0 and not shift_line(doubled)


def test_spread_between_batches_widens_an_ops_noise():
    """An op whose batches drifted apart needs a larger change than its IQR suggests."""
    steady = [100.0 + (k % 3) for k in range(28)]
    drifting = [100.0 + (k % 3) + 8 * (k // 7) for k in range(28)]  # 4 batches of 7, drifting
    from minigraph.measure.significance import median_uncertainty
    assert median_uncertainty(drifting, batch=7) > 2 * median_uncertainty(steady, batch=7)
    assert median_uncertainty(drifting, batch=7) > median_uncertainty(drifting, batch=0)


def test_spread_of_is_robust_and_needs_a_few_items():
    assert spread_of([0.0, 0.1, 0.2]) == 0.0
    assert spread_of([0.0] * 10 + [5.0] * 9) == 0.0  # the tight half decides


def test_geometric_mean_and_summary_line():
    ops = _ops(4)
    base = [[1_000.0 + k for k in range(10)] for _ in ops]
    a = Profile(ops, {}, {"warm": base}, e2e_ns=[5_000.0 + k for k in range(10)])
    b = Profile(ops, {}, {"warm": [[x * 2 for x in row] for row in base]},
                e2e_ns=[10_000.0 + k for k in range(10)])
    text = compare(Comparison(a, b))
    assert "4 of 4 ops differ (4 slower, 0 faster); geometric mean of B/A: 2.000x" in text
    assert "e2e (whole run)" in text and "2.00x" in text


def test_different_models_are_an_error():
    a = Profile(_ops(6), {}, {"warm": [[1.0, 2.0]] * 6})
    b = Profile(_ops(6, prefix="other"), {}, {"warm": [[1.0, 2.0]] * 6})
    with pytest.raises(InputError, match="different models"):
        compare(Comparison(a, b))


def test_a_mode_missing_on_one_side_is_an_error():
    a = Profile(_ops(2), {}, {"warm": [[1.0, 2.0]] * 2})
    b = Profile(_ops(2), {}, {"in-run": [[1.0, 2.0]] * 2})
    with pytest.raises(InputError, match="B has no warm samples"):
        compare(Comparison(a, b))


def test_a_rebuilt_kernel_is_matched_by_name():
    a, b = _ops(4), _ops(4)
    b[2]["hash"] = "changed"
    rows = [[1_000.0, 1_001.0, 1_002.0]] * 4
    ops = Comparison(Profile(a, {}, {"warm": rows}), Profile(b, {}, {"warm": rows})).ops
    cmp, matched = ops.tested, ops.matched
    assert len(cmp.deltas) == 4 and matched.by == "name" and not matched.only_a


def test_settings_that_differ_and_a_busy_side_are_named():
    ops = _ops(2)
    rows = [[1_000.0, 1_001.0]] * 2
    a = Profile(ops, {"modes": ["warm"]}, {"warm": rows}, env={"tvm": {"version": "0.27"}},
                threads={"tvm_num_threads": 2})
    b = Profile(ops, {"modes": ["warm"]}, {"warm": rows}, env={"tvm": {"version": "0.28"}},
                threads={"tvm_num_threads": 1},
                contention={"wall_s": 5.0, "others_cpus": 1.2, "steal_cpus": 0.0})
    text = compare(Comparison(a, b))
    assert "threads: 2 (A) vs 1 (B)" in text and "TVM version: 0.27 (A) vs 0.28 (B)" in text
    assert "busy machine during B's measurements" in text
    assert "during A's" not in text


def test_compare_fits_the_width():
    ops = [{**op, "name": "tvmgen_default_fused_conv2d_add_add_relu_" + str(i) * 20}
           for i, op in enumerate(_ops(5))]
    rows = [[1_000.0 + k for k in range(5)]] * 5
    text = compare(Comparison(Profile(ops, {}, {"warm": rows}), Profile(ops, {}, {"warm": rows})),
                   width=80)
    assert max(map(len, text.splitlines())) <= 80


def test_json_export_is_documented():
    ops = _ops(3)
    rows = [[1_000.0 + k for k in range(5)]] * 3
    a, b = Profile(ops, {}, {"warm": rows}), Profile(ops, {}, {"warm": rows})
    doc = json.loads(json.dumps(to_dict(Comparison(a, b)), allow_nan=False))
    assert doc["format"] == "minigraph-compare/1" and doc["compared"] == 3
    schema = (DOCS / "compare-schema.md").read_text()
    missing = [k for k in list(doc) + list(doc["items"][0]) if f"`{k}`" not in schema]
    assert not missing, missing


# -- real profiles of a real model ---------------------------------------------------------

def _write_chain_onnx(path: Path, ops: int = 12) -> Path:
    """A chain of MatMul + Relu with a different width per step, so that every op is its own
    kernel (structurally identical kernels would share one symbol)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    widths = [256 + 32 * i for i in range(ops + 1)]
    nodes, weights = [], []
    for i in range(ops):
        weights.append(numpy_helper.from_array(
            (rng.standard_normal((widths[i], widths[i + 1])) / 16).astype(np.float32), f"w{i}"))
        nodes += [helper.make_node("MatMul", [f"x{i}", f"w{i}"], [f"m{i}"]),
                  helper.make_node("Relu", [f"m{i}"], [f"x{i + 1}"])]
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x0", TensorProto.FLOAT, [8, widths[0]])],
        [helper.make_tensor_value_info(f"x{ops}", TensorProto.FLOAT, [8, widths[-1]])], weights)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


@pytest.fixture(scope="module")
def chain(tmp_path_factory) -> Path:
    from minigraph.compiler.compiler import build
    out = tmp_path_factory.mktemp("chain")
    build(str(_write_chain_onnx(out / "chain.onnx")), out / "build", vm=False)
    return out / "build"


def _pooled(profiles: list) -> Profile:
    """The first profile, with every profile's warm samples of each op together."""
    first = profiles[0]
    first.samples["warm"] = [sum(rows, []) for rows in zip(*(p.samples["warm"]
                                                                for p in profiles))]
    return first


def doubled(fn):
    """``fn`` made exactly 2x slower in wall time: each call runs the real kernel, then spins
    for as long as that call took. Calling the kernel twice is not 2x (the second call finds
    its data in cache: 1.4x to 3x were measured), a spin on the call's own duration is, on any
    machine, busy or not (a preemption during the kernel lengthens the spin as much)."""
    clock = time.perf_counter_ns

    def slowed(*args):
        start = clock()
        fn(*args)
        end = start + 2 * (clock() - start)
        while clock() < end:
            pass
    return slowed


@pytest.mark.timing
def test_an_injected_2x_kernel_is_flagged(chain, one_thread):
    """A kernel table entry made exactly 2x slower: that op, and only about that op, is
    reported slower (real kernels, real timings; both sides through the same loop). The ratio
    is judged beyond the whole-run shift compare sets apart (two profiles taken seconds apart
    on a VM differ by up to 1.65x on every op alike), with a margin the op's own noise keeps."""
    from minigraph.profile.profiler import measure
    from minigraph.runtime.debug import DebugExecutor
    from minigraph.values.inputs import random_inputs
    base = DebugExecutor.from_files(chain / "model.so", chain / "graph.json")
    real = {op.func_name: op.fn for op in base.ops}
    victim = base.ops[len(base.ops) // 2]

    def executor(table):
        ex = DebugExecutor(base.graph, table, module=None)  # module None: warm via the table
        ex.load_params(chain / "model.params")
        # the same real input on both sides: an unset input is whatever the allocator left,
        # and a kernel fed denormals from it ran 30x slower on one side than the other
        ex.set_input(**random_inputs(ex, {}, seed=0))
        return ex
    settings = Settings(modes=("warm",), warm_repeat=5, warm_budget_ms=20)
    ex = executor(real)
    slow = doubled(real[victim.func_name])

    def side(fn) -> Profile:  # the victim's kernel set to ``fn``; the same buffers both sides
        op = ex.ops[victim.index]
        ex.ops = (*ex.ops[:op.index], replace(op, fn=fn, call=(fn, op.args)),
                  *ex.ops[op.index + 1:])
        return measure(ex, settings)
    # A and B in turns on one executor, each side's samples pooled: a neighbour that comes
    # and goes lands on both sides alike, and no op is placed differently (two executors,
    # measured one after the other, moved 3 of 12 ops by 0.88-0.92x beside a busy machine);
    # five turns: with three, a VM speed spell inside one turn read two other ops 1.08x
    # slower (p 1e-8) on a quiet fresh-clone run
    turns = [(side(real[victim.func_name]), side(slow)) for _ in range(5)]
    a, b = (_pooled([t[k] for t in turns]) for k in (0, 1))
    cmp = Comparison(a, b).ops.tested
    d = cmp.deltas[victim.index]
    # the op's own change, judged against the other ops of the same two profiles (not
    # against cmp.shift: compare sets a shift apart only when 2/3 of the ops share it, so on a
    # VM whose two processes differ unevenly the shift is 1 and would fold the run's move in)
    others = statistics.median(x.ratio for x in cmp.deltas if x is not d)
    own = d.ratio / others
    # above 2 by the wrapper's own cost: 2.24-2.40 quiet or beside spinners, 2.60 beside a
    # pip install, on a 2-vCPU AVX-512 guest (17.5 us -> 39.7 us)
    assert 1.5 < own < 3.0, (d, others, cmp.shift, cmp.run_to_run)
    assert max(cmp.deltas, key=lambda x: x.ratio) is d
    # the verdict: slower, unless the noise compare measured (on a machine busy enough to
    # spread one op's repeated batches by tens of percent) is itself as large as the change
    assert d.verdict == "slower" or d.noise >= 1.0, (d, cmp.shift, cmp.run_to_run)
    assert len(cmp.differ) <= 1 + 0.1 * len(cmp.deltas), [x.name for x in cmp.differ]


@pytest.mark.subprocess
@pytest.mark.timing
def test_cli_back_to_back_profiles_flag_almost_nothing(chain, tmp_path, capsys):
    """Two `minigraph profile` runs of the same model, one after the other: compare calls at
    most one op and a tenth of the rest changed; its JSON export says so.

    One worker thread: with a worker on every CPU, a neighbour on one of them stalls each
    parallel kernel at its barrier for a scheduler slice (4.00 ms a call, for whole profiles
    at a time, measured beside one busy-looping process): that is contention, which compare
    names as such (tests/report/test_verdict_corpus.py), not the run-to-run noise this test
    is about."""
    paths = [tmp_path / f"p{i}.json" for i in (1, 2)]
    for p in paths:
        cli_runner.run(["profile", chain, "--mode", "warm", "--mode", "e2e", "--budget-ms",
                        "60", "--threads", "1", "--quiet", "--json", p], check=True,
                       timeout=300)
    out = tmp_path / "c.json"
    from minigraph.cli import main
    assert main(["compare", *map(str, paths), "--json", str(out)]) == 0
    text = capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert f"{doc['differ']} of {doc['compared']} ops differ" in text
    # one false call is allowed as in the in-process test above: the figure itself (how
    # many ops two quiet processes disagree on) is measured by benchmarks/compare_noise.py
    assert doc["differ"] <= 1 + 0.1 * doc["compared"], text
