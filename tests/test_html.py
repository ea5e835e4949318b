"""The HTML reports: built from real profiles and diagnoses, rendered in headless Chromium."""
from __future__ import annotations

import pytest
from browser import Browser, find, install


@pytest.fixture(scope="session")
def browser() -> Browser:
    """Headless Chromium: the one on PATH, else Debian's package installed now (root with
    apt-get), else the test is skipped saying why."""
    path = find()
    if path is None:
        path, why = install()
        if path is None:
            pytest.skip(f"no Chromium to render the HTML report: {why}")
    return Browser(path)


def test_browser_runs_scripts_and_draws_svg(browser, tmp_path):
    page = tmp_path / "p.html"
    page.write_text("<!doctype html><html><body><svg width='10' height='10'></svg>"
                    "<script>document.body.dataset.ran='yes'</script></body></html>")
    dom = browser.dump_dom(page)
    assert 'data-ran="yes"' in dom and "<svg" in dom
