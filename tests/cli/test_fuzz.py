"""Property-based fuzzing of the readers (graph.json, param blobs, saved profiles in JSON and
msgpack, every other saved document, TVM's own reports), time-bounded for the test suite;
tools/fuzz.py is the long-run version. Property:
any input either parses into something every consumer can use, or raises a MinigraphError."""
from __future__ import annotations

import json
from typing import Callable

import fuzz  # noqa: E402
import msgpack
import pytest
from fuzz_mutate import mutate_bytes, mutate_doc, value_paths  # noqa: E402
from fuzz_seeds import GRAPH_SEEDS, PROFILE_SEED  # noqa: E402
from hypothesis import HealthCheck, given, settings, strategies as st

from minigraph.errors import InputError, MinigraphError

FAST = settings(max_examples=250, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
JSON = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats()
                    | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=12)


def _only_minigraph_errors(run: Callable[[bytes], None], data: bytes) -> None:
    try:
        run(data)
    except MinigraphError:
        pass


def _byte_edits(rnd, data: bytes, run) -> None:
    """One to three random byte edits of ``data``, then ``run`` on it: a minigraph error or
    nothing, never another exception."""
    for _ in range(rnd.randrange(1, 4)):
        data = mutate_bytes(rnd, data)
    _only_minigraph_errors(run, data)


@FAST
@given(st.randoms(use_true_random=False), st.sampled_from(range(len(GRAPH_SEEDS))))
def test_graph_mutations(rnd, which: int) -> None:
    doc = mutate_doc(rnd, GRAPH_SEEDS[which], refs=True)
    _only_minigraph_errors(fuzz.run_graph, json.dumps(doc).encode())


@FAST
@given(st.randoms(use_true_random=False), st.sampled_from(range(len(GRAPH_SEEDS))))
def test_graph_byte_edits(rnd, which: int) -> None:
    _byte_edits(rnd, json.dumps(GRAPH_SEEDS[which]).encode(), fuzz.run_graph)


@FAST
@given(st.randoms(use_true_random=False), st.sampled_from(range(len(fuzz.PARAMS_SEEDS))))
def test_param_blob_edits(rnd, which: int) -> None:
    _byte_edits(rnd, fuzz.PARAMS_SEEDS[which], fuzz.run_params)


@FAST
@given(st.binary(max_size=300))
def test_param_blob_arbitrary_bytes(data: bytes) -> None:
    _only_minigraph_errors(fuzz.run_params, fuzz.PARAMS_SEEDS[0][:16] + data)


@FAST
@given(st.data(), JSON)
def test_profile_json_with_foreign_values(data, value) -> None:
    """Any JSON value anywhere in a valid profile: clean rejection or a renderable profile."""
    doc = json.loads(json.dumps(PROFILE_SEED))
    cur, key = data.draw(st.sampled_from(value_paths(doc)))
    cur[key] = value
    _only_minigraph_errors(fuzz.run_profile, json.dumps(doc).encode())


@FAST
@given(st.randoms(use_true_random=False))
def test_profile_json_mutations(rnd) -> None:
    _only_minigraph_errors(fuzz.run_profile, fuzz.mutated(rnd, PROFILE_SEED, fuzz._json))


@FAST
@given(st.randoms(use_true_random=False))
def test_profile_msgpack_mutations(rnd) -> None:
    _only_minigraph_errors(fuzz.run_msgpack, fuzz.mutated(rnd, PROFILE_SEED, fuzz._msgpack))


@FAST
@given(st.binary(max_size=400))
def test_profile_msgpack_arbitrary_bytes(data: bytes) -> None:
    _only_minigraph_errors(fuzz.run_msgpack, b"\x8b" + data)  # a map header: the loader's path
    _only_minigraph_errors(fuzz.run_profile, data)


@pytest.mark.parametrize("blob", [b"\xc1", b"\x91" * 5000, b"\x81\x01\x02", b"\xd6\xff" + bytes(4),
                                  b"\xdf\xff\xff\xff\xff", b"\x81\xa1a\xc4\x01x"])
def test_msgpack_limits_and_strict_types(blob: bytes) -> None:
    with pytest.raises(InputError):
        fuzz.files.from_msgpack(blob, "x")


@FAST
@given(st.randoms(use_true_random=False), st.sampled_from(range(len(fuzz.DOCUMENT_SEEDS))))
def test_saved_document_mutations(rnd, which: int) -> None:
    """Diagnoses, fleets, comparisons, kernel comparisons, protocol results (issue #24)."""
    encode = fuzz._json if rnd.random() < 0.75 else fuzz._msgpack
    _only_minigraph_errors(fuzz.run_document, fuzz.mutated(rnd, fuzz.DOCUMENT_SEEDS[which],
                                                           encode))


@FAST
@given(st.data(), JSON, st.sampled_from(range(len(fuzz.DOCUMENT_SEEDS))))
def test_saved_documents_with_foreign_values(data, value, which: int) -> None:
    doc = json.loads(json.dumps(fuzz.DOCUMENT_SEEDS[which]))
    cur, key = data.draw(st.sampled_from(value_paths(doc)))
    cur[key] = value
    _only_minigraph_errors(fuzz.run_document, json.dumps(doc).encode())


@FAST
@given(st.randoms(use_true_random=False), st.sampled_from(range(len(fuzz.TVM_REPORT_SEEDS))))
def test_tvm_report_byte_edits(rnd, which: int) -> None:
    _byte_edits(rnd, fuzz.TVM_REPORT_SEEDS[which], fuzz.run_tvm_report)


def test_every_seed_is_accepted_as_is() -> None:
    fuzz.check_seeds()


def test_valid_profile_round_trips_both_ways() -> None:
    fuzz.run_profile(json.dumps(PROFILE_SEED).encode())
    fuzz.run_msgpack(msgpack.packb(PROFILE_SEED))


def test_the_long_run_fuzzer_runs_clean(capsys) -> None:
    assert fuzz.main(["--cases", "1200", "--seed", "11"]) == 0
    out = capsys.readouterr().out
    assert "cases run: 1200, failures: 0" in out
