"""The LLM profile's page draws what the document holds: the user's figures, every op of both
phases with its layer, the kernels inside attention; one self-contained file."""
from __future__ import annotations

import json
import re
from pathlib import Path

from minigraph.readers.documents import load_document
from minigraph.report.html import llm_page
from minigraph.results.llm import Figures

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden" / "llm-profile.json"


def test_the_page_holds_every_op_and_the_figures():
    prof = load_document(GOLDEN).value
    page = llm_page.render(prof)
    assert page.startswith("<!DOCTYPE html>") and not re.search(r'(src|href)="https?:', page)
    f = Figures.of(prof)
    assert f"{f.ttft_ms:.1f} ms" in page and "time to first token" in page
    for ph in prof.phases:
        assert f'id="phase-{ph.name}"' in page
        for o in ph.ops:
            assert o.label.replace("'", "&#x27;") in page
        for kernel in ph.inside_ns:
            assert kernel.replace("'", "&#x27;").replace("(", "(") in page
    assert any(o.layer for ph in prof.phases for o in ph.ops)


def test_a_profile_draws_itself_in_a_notebook():
    import minigraph.api  # noqa: F401  (the notebook's import: registers the renderers)
    frame = load_document(GOLDEN).value._repr_html_()
    assert frame.startswith("<iframe") and "minigraph LLM profile" in frame
    assert json.loads(GOLDEN.read_text())["format"] == "minigraph-llm-profile/1"
