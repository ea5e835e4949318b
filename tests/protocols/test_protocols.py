"""TVM's measuring protocols side by side, on the tiny model: every protocol runs, vectors align
with the executor's ops, the Relax VM's calls map onto every kernel op, an injected clock makes
the one-pass sums exact, and a missing model.vm.so is a skip note, not an error."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from clocks import StepClock

from minigraph.artifacts.buildinfo import read_build
from minigraph.errors import InputError
from minigraph.protocols.measure import measure_protocols
from minigraph.protocols.relax_vm import graph_symbol, map_calls
from minigraph.protocols.settings import ProtocolSettings
from minigraph.report.protocols import format_protocols
from minigraph.results.protocols import KEYS, ProtocolResult, from_dict, to_dict
from minigraph.runtime.debug import DebugExecutor
from minigraph.runtime.opened import VmReference

FAST = ProtocolSettings(ri_number=2, ri_repeat=2, bench_number=2, bench_repeat=3, vm_number=2,
                        vm_repeat=3, vm_passes=2)
PER_OP = {"debug_executor.profile", "vm_profiler", "run_individual", "relax_vm_instrument",
          "debug_executor.no_params"}


def _vm(lib) -> VmReference:
    """model.vm.so with the build.json beside it."""
    return VmReference(lib, read_build(lib))


@pytest.fixture(scope="module")
def ex(tiny_cnn) -> DebugExecutor:
    ex = DebugExecutor.from_files(tiny_cnn / "model.so", tiny_cnn / "graph.json")
    ex.set_input("data", np.ones(ex.graph.shapes[0], "float32"))
    return ex


@pytest.fixture(scope="module")
def measured(ex, tiny_cnn):
    resets: list[int] = []
    res = measure_protocols(ex, vm=_vm(tiny_cnn / "model.vm.so"), threads=1,
                            reset=lambda: resets.append(1), settings=FAST)
    return {r.key: r for r in res}, resets


def test_every_protocol_runs_with_finite_positive_numbers(ex, measured):
    res, _ = measured
    assert tuple(res) == KEYS
    for r in res.values():
        assert not r.skipped, r.notes
        assert math.isfinite(r.total_ns) and r.total_ns > 0, r.key
        assert r.samples_ns and all(math.isfinite(x) and x > 0 for x in r.samples_ns), r.key
        if r.key in PER_OP:
            assert len(r.per_op_ns) == len(ex.ops), r.key
            assert all(v is not None and v > 0 for v in r.per_op_ns), r.key
        else:
            assert r.per_op_ns is None, r.key
    assert len(res["run_individual"].samples_ns) == FAST.ri_repeat
    assert len(res["benchmark_e2e"].samples_ns) == FAST.bench_repeat
    assert len(res["relax_vm_e2e"].samples_ns) == FAST.vm_repeat
    assert len(res["relax_vm_instrument"].samples_ns) == FAST.vm_passes


def test_one_pass_protocols_reset_the_pool_once_each(measured):
    _, resets = measured
    # debug_executor.profile, vm_profiler and the debug executor without params; no other
    assert len(resets) == 3


def test_run_individual_total_is_sum_of_per_op_means(measured):
    r = measured[0]["run_individual"]
    assert r.total_ns == pytest.approx(sum(r.per_op_ns))
    assert sum(r.samples_ns) / len(r.samples_ns) == pytest.approx(r.total_ns)


def test_vm_instrument_maps_every_kernel_op(ex, measured):
    r = measured[0]["relax_vm_instrument"]
    kernel_ops = [i for i, op in enumerate(ex.ops) if not op.func_name.startswith("__")]
    assert kernel_ops and all(r.per_op_ns[i] is not None for i in kernel_ops)
    assert not [n for n in r.notes if "not mapped" in n or "without a VM call" in n], r.notes
    assert any(n.startswith("callback cost:") for n in r.notes)
    assert r.total_ns == pytest.approx(sum(r.per_op_ns))


def test_injected_clock_gives_exact_one_pass_sums(ex, tiny_cnn):
    keys = ("debug_executor.profile", "vm_profiler", "benchmark_e2e", "relax_vm_instrument")
    res = {r.key: r for r in measure_protocols(ex, vm=_vm(tiny_cnn / "model.vm.so"), threads=1,
                                               keys=keys, clock=StepClock(1000),
                                               reset=lambda: None, settings=FAST)}
    n = len(ex.ops)
    for key in ("debug_executor.profile", "vm_profiler", "relax_vm_instrument"):
        assert res[key].per_op_ns == (1000.0,) * n, key
        assert res[key].total_ns == 1000.0 * n, key
    assert res["debug_executor.profile"].samples_ns == (1000.0 * n,)
    assert res["relax_vm_instrument"].samples_ns == (1000.0 * n,) * FAST.vm_passes
    # time_repeats: one clock step around `number` runs -> step / number per run, every repeat
    assert res["benchmark_e2e"].samples_ns == (1000.0 / FAST.bench_number,) * FAST.bench_repeat


@pytest.mark.parametrize("vm_lib", [None, "missing"])
def test_missing_vm_library_is_a_skip_note(ex, tmp_path, vm_lib):
    lib = None if vm_lib is None else tmp_path / "model.vm.so"
    res = measure_protocols(ex, vm=VmReference(lib, {}), threads=1, reset=lambda: None,
                            settings=FAST,
                            keys=("vm_profiler", "relax_vm_e2e", "relax_vm_instrument"))
    assert [r.key for r in res] == ["vm_profiler", "relax_vm_e2e", "relax_vm_instrument"]
    assert not res[0].skipped
    for r in res[1:]:
        assert r.skipped and math.isnan(r.total_ns) and r.per_op_ns is None
        assert r.notes[0].startswith("skipped: no Relax VM library")


def test_unusable_vm_library_is_a_skip_note(ex, tmp_path):
    bad = tmp_path / "model.vm.so"
    bad.write_bytes(b"not a shared library")
    res = measure_protocols(ex, vm=_vm(bad), threads=1, keys=("relax_vm_e2e",))
    assert res[0].skipped and res[0].notes[0].startswith(f"skipped: cannot use {bad}")


def test_unknown_protocol_is_an_input_error(ex):
    with pytest.raises(InputError, match="unknown protocol"):
        measure_protocols(ex, vm=VmReference(None, {}), threads=1, keys=("profile",))


def test_map_calls_by_symbol_and_occurrence_order():
    names = {"fused_a": "tvmgen_default_fused_a", "fused_a1": "tvmgen_default_fused_a",
             "fused_b1": "tvmgen_default_fused_b1"}
    ops = ["tvmgen_default_fused_a", "tvmgen_default_fused_b1", "tvmgen_default_fused_a",
           "tvmgen_default_fused_c"]
    mapped, left_ops, left_calls = map_calls(["fused_a", "fused_b1", "fused_a1", "weird"],
                                             ops, names)
    assert mapped == (0, 1, 2, None)
    assert left_ops == (3,) and left_calls == ("weird",)
    # without build.json: the compiler's naming rule, exact for non-deduplicated kernels
    assert graph_symbol("max_pool2d", {}) == "tvmgen_default_fused_max_pool2d"
    assert graph_symbol("fused_conv2d_add", {}) == "tvmgen_default_fused_conv2d_add"
    assert map_calls(["fused_a1"], ["tvmgen_default_fused_a"], {}) == ((None,), (0,),
                                                                      ("fused_a1",))


def test_json_round_trip(measured):
    res = tuple(measured[0].values())
    skipped = ProtocolResult("relax_vm_e2e", "skipped", None, math.nan, (), ("skipped: x",))
    back = from_dict(json.loads(json.dumps(to_dict(res + (skipped,)), allow_nan=False)))
    assert back[:-1] == res
    assert back[-1].skipped and math.isnan(back[-1].total_ns) and back[-1].notes == ("skipped: x",)
    with pytest.raises(InputError):
        from_dict({"format": "something-else"})
    with pytest.raises(InputError):
        from_dict({"format": "minigraph-protocols/1", "results": [{"key": "x"}]})


def test_format_protocols_orders_ops_by_spread_and_lists_totals():
    a = ProtocolResult("debug_executor.profile", "one pass", (1e6, 50e6, 2e6), 53e6, (53e6,))
    b = ProtocolResult("run_individual", "te", (1e6, 1e6, 9e6), 11e6, (11e6,), ("a note",))
    c = ProtocolResult("benchmark_e2e", "e2e", None, 20e6, (19e6, 21e6))
    d = ProtocolResult("relax_vm_e2e", "skipped", None, math.nan, (), ("skipped: no vm",))
    text = format_protocols([a, b, c, d], ["op_a", "op_b", "op_c"], top=2)
    lines = text.splitlines()
    body = [ln for ln in lines if ln.strip().startswith(("0 ", "1 ", "2 "))]
    assert [ln.split()[1] for ln in body] == ["op_b", "op_c"]  # spreads 49 ms, 7 ms; op_a cut
    assert "50.000" in body[0] and "9.000" in body[1]
    totals = {ln.split()[0]: ln.split()[1] for ln in lines if ln.split()[:1] and
              ln.split()[0] in {r.key for r in (a, b, c, d)} and len(ln.split()) == 3}
    assert totals == {"debug_executor.profile": "53.000", "run_individual": "11.000",
                      "benchmark_e2e": "20.000", "relax_vm_e2e": "-"}
    assert "note: skipped: no vm" in text and "note: a note" in text
