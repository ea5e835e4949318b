"""report/html/: self-contained HTML reports (inline SVG, a little inline CSS and script, no
URL ever requested) drawn from the same Profile / Diagnosis / comparison as the text reports.

One module per page (profile_page, diagnose_page, compare_page), the chart shapes they share
(charts: grouped bars and waterfalls; causes; protocols; timeline), the drawing kit (svg),
colours derived from the registries (palette) and the page shell (page).
Counterpart: none in TVM; its profiling ``Report`` rendered only ``table()``, ``csv()`` and
``json()``.
"""
from __future__ import annotations

from ...analysis.diagnosis import read
from ...results.comparison import SavedComparison
from ...results.diagnosis import Diagnosis
from ...results.display import register_html
from ...results.fleet import Fleet
from ...results.llm import LLMProfile
from ...results.llm_diagnosis import LLMDiagnosis
from ...results.profile import Profile
from ...results.sweep import Sweep
from .. import fleet as fleet_report, saved
from ..llm_diagnosis import format_llm_diagnosis
from . import diagnose_page, llm_page, profile_page, sweep_page
from .page import document, section
from .svg import esc


def _text_page(title: str, text: str) -> str:
    """A result with no page of its own (a fleet, a saved comparison): its text report."""
    return document(title, "", [section("text", title, "", f"<pre>{esc(text)}</pre>")],
                    "text")


register_html(Profile, profile_page.render)
register_html(Diagnosis, lambda d: diagnose_page.render(d, read(d).att))
register_html(Fleet, lambda f: _text_page("minigraph fleet", fleet_report.render(f)))
register_html(Sweep, sweep_page.render)
register_html(SavedComparison,
              lambda c: _text_page("minigraph comparison", saved.render_comparison(c)))
register_html(LLMProfile, llm_page.render)
register_html(LLMDiagnosis,
              lambda d: _text_page("minigraph LLM diagnosis", format_llm_diagnosis(d)))
