"""report/html/: self-contained HTML reports (inline SVG, a little inline CSS and script, no
URL ever requested) drawn from the same Profile / Diagnosis / comparison as the text reports.

One module per page (profile_page, diagnose_page, compare_page), the chart shapes they share
(charts: grouped bars and waterfalls; causes; protocols; timeline), the drawing kit (svg),
colours derived from the registries (palette) and the page shell (page).
Counterpart: none in TVM; its profiling ``Report`` rendered only ``table()``, ``csv()`` and
``json()``.
"""
