"""compare's verdict on the labelled corpus (tools/verdict_corpus.py): pairs made the way users
make them, on tiny-cnn, each judged right.

One baseline profile A; every B is a fresh ``minigraph profile`` process with one known
cause (threads, build target, schedule, subnormal weights, a neighbour, another mode) or none.
The verdict must name that cause. benchmarks/verdict_accuracy.py runs rounds of the same
corpus on larger models and prints the confusion table.
"""
from __future__ import annotations

import cli_runner
import pytest

from verdict_corpus import CASES, run_corpus

# alone: the back-to-back pair must see no difference, and a neighbour would make one
pytestmark = [pytest.mark.subprocess, pytest.mark.alone]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return {r.case.name: r for r in run_corpus(tmp_path_factory.mktemp("corpus"),
                                               cli=cli_runner.run)}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_verdict_names_the_cause(results, case):
    res = results[case.name]
    if res.skipped:
        pytest.skip(f"this machine cannot make the case: {res.skipped}")
    said = "; ".join(f"{f['cls']} ({f['share']:.0%}): {f['evidence']}" for f in res.findings)
    assert res.right, f"{case.name}: verdict {res.verdict!r}, expected one of " \
                      f"{sorted(res.expect)} (A's machine busy: {res.a_busy:.2f} CPUs); " \
                      f"findings: {said}"


def test_a_made_cause_leads_and_says_its_setting(results):
    """The threads pair's evidence names the setting that differs, with both values."""
    res = results["--threads 1"]
    if res.skipped:
        pytest.skip(res.skipped)
    first = res.findings[0]
    assert first["cls"] == "threads" and "(A) vs 1 (B)" in first["evidence"]
    assert first["confirm"]
