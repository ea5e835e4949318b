"""docs/executor-walkthrough.md is executed: every code block runs, in order, in a fresh process,
and every output it shows must be what the code prints (exactly where marked, numbers aside
elsewhere), so the lesson cannot drift from the code it teaches."""
from __future__ import annotations

from pathlib import Path

import pytest
from docblocks import differences, normalise, pairs, parse

pytestmark = pytest.mark.subprocess

DOC = Path(__file__).resolve().parents[2] / "docs" / "executor-walkthrough.md"


def test_the_walkthrough_runs_and_shows_what_it_prints(tmp_path):
    markdown = DOC.read_text()
    shown = pairs(parse(markdown))
    assert len(shown) >= 15 and all(text is not None for _, text in shown)
    problems, checked = differences(markdown, str(tmp_path))
    assert not problems, "\n\n".join(problems)
    assert len(checked) == len(shown)


def test_the_checker_catches_a_changed_word_but_not_a_changed_number():
    assert normalise("op 0 took 12.5 us, 1,024 faults") == normalise("op 3 took 7 us, 9 faults")
    assert normalise("op 0 took 12.5 us") == normalise("op 0 took 410 ns")  # a duration's scale
    assert normalise("op 0 took 12.5 us") != normalise("op 0 took 12.5 MiB")
