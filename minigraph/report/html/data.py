"""The Data section of the profile and diagnosis pages: where the values came from, the ops
whose operands hold subnormal, NaN or Inf values, and what the subnormal ones cost (the same
sentences as the text report, plus one table row per measured op)."""
from __future__ import annotations

from ...results.data import DataReport
from ..data import data_section
from ..units import dur
from .page import lines, section, table


def data_section_html(report: DataReport | None) -> str:
    """'' when the data says nothing beyond params as given."""
    text = data_section(report)
    if not text or report is None:
        return ""
    rows = [[str(c.index), c.name, dur(sorted(c.given_ns)[len(c.given_ns) // 2]),
             dur(sorted(c.flushed_ns)[len(c.flushed_ns) // 2]),
             f"{c.ratio:.2f}x [{c.ratio_lo:.2f}x, {c.ratio_hi:.2f}x]",
             "resolved" if c.resolved else "within the noise"] for c in report.costs]
    cost = table(["#", "op", "as given", "subnormals flushed", "ratio [90%]", ""], rows,
                 {0, 2, 3}) if rows else ""
    head, *body = text.splitlines()
    return section("data", "Data: what the kernels computed on", head, lines(
        [b.strip() for b in body]) + cost)
