"""The HTML reports: built from real profiles and diagnoses of a tiny model by the real CLI,
rendered in headless Chromium (DOM after the page's script, screenshots at 1400x1000), and
checked for their charts, for asking nothing of the network, and for `show --html` giving the
very page `profile --html` wrote."""
from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import cli_runner
import numpy as np
import pytest
from browser import Browser, find, page_requests, parse, png_colours, png_size, which

from minigraph.cli import main
from minigraph.diagnose.attribution import attribute, attribution_of
from minigraph.readers.documents import load_profile
from minigraph.report.html import causes, compare_page, diagnose_page, palette, profile_page
from minigraph.report.html.timeline import Timeline, chart as timeline_chart
from minigraph.results.diagnosis import Diagnosis
from minigraph.results.modes import BY_NAME, PER_OP

CHANGES = ("slower", "faster")  # compare's verdicts that are changes (the rest are not)
FAST = ["--repeat", "3", "--budget-ms", "20", "--inrun-passes", "3", "--flush", "tvm",
        "--quiet"]


@pytest.fixture(scope="session")
def browser() -> Browser:
    """Headless Chromium from PATH (.ci/run installs Debian's package before the tests); on a
    machine without one the browser tests are skipped saying what they need."""
    path = which()
    if path is None:
        pytest.skip("no Chromium on PATH to render the HTML reports: install Debian's chromium "
                    "(apt-get install chromium), as .ci/run does")
    return Browser(path)


def cli(*argv: object, timeout: float = 600) -> str:
    """``python -m minigraph ...`` in a fresh process (a measurement owns its thread pool)."""
    done = cli_runner.run(argv, timeout=timeout)
    assert done.returncode == 0, done.stderr
    return done.stdout


def with_flops(profile_json: Path, build: Path, out: Path):
    """The saved profile with each op's FLOPs from build.json (what issue #13 records)."""
    prof = load_profile(profile_json)
    kernels = json.loads((build / "build.json").read_text())["kernels"]
    for op in prof.ops:
        op["flops"] = kernels.get(op["func_name"], {}).get("flops")
    out.write_text(profile_page.render(prof))
    return prof


@pytest.fixture(scope="module")
def reports(tiny_cnn, tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("html")
    cli("profile", tiny_cnn, *FAST, "--json", d / "a.json", "--html", d / "profile.html")
    cli("profile", tiny_cnn, "--mode", "warm", "--mode", "e2e", *FAST, "--json", d / "b.json")
    cli("diagnose", tiny_cnn, "--processes", "2", "--rungs", "a,b,f", "--gap-ms", "0",
        "--quiet", "--json", d / "diag.json", "--html", d / "diagnose.html")
    assert main(["compare", str(d / "a.json"), str(d / "b.json"), "--html",
                 str(d / "compare.html")]) == 0
    with_flops(d / "a.json", tiny_cnn, d / "flops.html")
    return {p.stem: p for p in d.iterdir()}


@pytest.fixture(scope="module")
def rendered(browser, reports, tmp_path_factory):
    """rendered(name) -> (DOM, URLs requested, screenshot) of a report page, from one start of
    Chromium per page: the tests below read a page's DOM and its picture."""
    d, cache = tmp_path_factory.mktemp("rendered"), {}

    def get(name: str) -> tuple[str, list[str], Path]:
        if name not in cache:
            cache[name] = browser.render(reports[name], d / f"{name}.png")
        return cache[name]

    return get


def test_browser_runs_scripts_and_sees_requests(browser, tmp_path):
    """The harness itself: scripts run before the DOM is dumped, and a page that does ask for
    a URL shows up in the request log (so an empty log below means something)."""
    page = tmp_path / "p.html"
    page.write_text("<!doctype html><html><body><svg width='10' height='10'></svg>"
                    "<img src='http://127.0.0.1:9/probe.png'>"
                    "<script>document.body.dataset.ran='yes'</script></body></html>")
    dom, urls = browser.load(page)
    assert 'data-ran="yes"' in dom and "<svg" in dom
    assert page_requests(urls) == ["http://127.0.0.1:9/probe.png"]


def test_reports_name_no_url(reports):
    for name in ("profile", "diagnose", "compare", "flops"):
        text = reports[name].read_text()
        assert text.startswith("<!DOCTYPE html>") and "<svg" in text
        assert not re.search(r"https?://|\bsrc=|\bhref=|@import|url\((?!#)", text), name


def test_show_html_reproduces_the_profiles_page(reports, tmp_path):
    assert main(["show", str(reports["a"]), "--html", str(tmp_path / "show.html")]) == 0
    assert (tmp_path / "show.html").read_bytes() == reports["profile"].read_bytes()
    assert main(["show", str(reports["diag"]), "--html", str(tmp_path / "d.html")]) == 0
    assert (tmp_path / "d.html").read_bytes() == reports["diagnose"].read_bytes()


def test_profile_page_in_chromium(browser, reports, tmp_path):
    dom, urls = browser.load(reports["flops"])
    assert page_requests(urls) == []
    els = parse(dom)
    prof = load_profile(reports["a"])
    modes = [m for m in PER_OP if prof.samples.get(m)]
    assert len(modes) == 5
    assert find(els, "body", **{"data-ready": "1"}), "the page's script did not finish"
    bars = [e for e in find(els, "rect", "bar") if e.inside("svg", "per-op", data_scale="log")]
    pairs = sorted((e.attrs["data-mode"], int(e.attrs["data-op"])) for e in bars)
    assert pairs == sorted((m, op["index"]) for m in modes for op in prof.ops)
    for e in find(els, "rect", "bar"):  # one colour per mode, in every chart
        if "data-mode" in e.attrs:
            assert e.attrs["fill"] == palette.MODE[e.attrs["data-mode"]]
    # the script turned every SVG <title> into a data-tip for its own tooltip
    assert all(e.attrs.get("data-tip", "").startswith(f"op {e.attrs['data-op']} ")
               and f"{e.attrs['data-mode']}: " in e.attrs["data-tip"] for e in bars)
    assert not [t for t in find(els, "title") if t.inside("svg")]
    steps = [e for e in find(els, "rect", "bar") if e.inside("svg", "reconcile")]
    # warm sum, overhead, cache state, in-run sum, its clock stamps, residual, e2e
    assert len(steps) == 7
    gflops = [e for e in find(els, "rect", "bar") if e.inside("svg", "gflops")]
    assert len(gflops) == 2 * len(prof.ops)
    spans = find(els, "rect", "span")
    if getattr(prof, "timeline", None):  # recorded passes: the main thread's op windows ...
        main_lanes = [e for e in spans if e.attrs["data-lane"].endswith(": main thread")]
        assert len(main_lanes) == len(prof.timeline) * len(prof.ops)
        assert "(not a recorded timeline)" not in dom
    else:  # ... else first-run and one-pass laid end to end, and said so
        assert len(spans) == 2 * len(prof.ops)
        assert "(not a recorded timeline)" in dom
    assert any("excess" in e.classes for e in find(els, "rect"))


def test_profile_page_tooltips_name_kernel_shapes_n_and_spread(rendered, reports):
    els = parse(rendered("profile")[0])
    prof = load_profile(reports["a"])
    labels = [e for e in find(els, "text", "row-label") if e.inside("svg", "per-op")]
    tips = [e.attrs.get("data-tip", "") for e in labels]
    assert len(tips) == 2 * len(prof.ops)  # log and linear versions of the chart
    op = prof.ops[0]
    tip = next(t for t in tips if t.startswith(f"op 0 {op['name']}"))
    assert f"kernel: {op['func_name']}" in tip and "shapes: float32[" in tip
    assert re.search(r"warm: median .+ IQR .+ n=\d+", tip)
    assert "first-run: " in tip and "(one sample)" in tip


def test_diagnose_page_in_chromium(rendered, reports):
    dom, urls, _ = rendered("diagnose")
    assert page_requests(urls) == []
    els = parse(dom)
    diag = Diagnosis.from_dict(json.loads(reports["diag"].read_text()))
    att = attribution_of(diag)
    totals = [e for e in find(els, "rect", "total") if e.inside("svg", "ladder")]
    assert [e.attrs["data-rung"] for e in totals] == ["a", "b", "f"]
    steps = [e for e in find(els, "rect", "step") if e.inside("svg", "ladder")]
    assert {e.attrs["data-cause"] for e in steps} == set(att.component_total)
    for e in steps:
        iv = att.component_total[e.attrs["data-cause"]]
        sure = iv.lo_ns > 0 or iv.hi_ns < 0
        assert e.attrs["data-resolved"] == str(sure).lower()
        assert (e.attrs["fill"] == palette.UNRESOLVED) == (not sure)
    causes_bars = [e for e in find(els, "rect", "bar") if e.inside("svg", "causes")]
    assert {int(e.attrs["data-op"]) for e in causes_bars} <= set(range(len(diag.ops)))
    per_op = [e for e in find(els, "rect", "bar")
              if e.inside("svg", "protocols-per-op", data_scale="log")]
    per_op_keys = {e.attrs["data-protocol"] for e in per_op}
    assert {"debug_executor.profile", "steady"} <= per_op_keys
    assert len(per_op) == len(per_op_keys) * len(diag.ops)
    ran = [p for p in diag.protocols if p["samples_ns"]]
    assert len([e for e in find(els, "rect", "bar") if e.inside("svg", "protocol-totals")]) \
        == len(ran)
    assert find(els, "table") and "page faults" in dom


def test_compare_page_in_chromium(rendered, reports):
    dom, urls, _ = rendered("compare")
    assert page_requests(urls) == []
    els = parse(dom)
    n = len(load_profile(reports["a"]).ops)
    points = find(els, "circle", "ratio")
    assert len(points) == n + 1  # every op and the e2e row
    assert all(("significant" in e.classes) == (e.attrs["data-verdict"] in CHANGES)
               for e in points)
    assert re.search(rf"\d+ of {n} ops differ", dom)


def test_screenshots_are_pictures(rendered):
    for name in ("profile", "diagnose", "compare"):
        png = rendered(name)[2]
        assert png_size(png) == (1400, 1000)
        assert png_colours(png) > 100, f"{name}: the screenshot looks blank"


def test_unresolved_components_are_never_drawn_as_costs():
    """A component whose interval includes zero: hatched 'unresolved' in the ladder and in the
    per-op causes, not a negative (or positive) bar of its own colour."""
    rng = np.random.default_rng(1)
    a = 3000 + rng.normal(0, 400, (8, 2))       # rung a: +1000 ns on op 0 (resolved) ...
    a[:, 0] += 1000
    b, e, f = (2000 + rng.normal(0, 400, (8, 2)) for _ in range(3))  # b -> e -> f: noise
    att = attribute({"a": a, "b": b, "e": e, "f": f})
    steps = diagnose_page.ladder_steps(att)
    cache = next(s for s in steps if not s.total and s.data["cause"] == "cache_residual")
    iv = att.component_total["cache_residual"]
    assert iv.lo_ns < 0 < iv.hi_ns and cache.colour == palette.UNRESOLVED
    assert cache.note == "unresolved"
    diag = Diagnosis([{"name": f"op{i}"} for i in range(2)], {})
    svg = causes.chart(diag, att, 2)
    pos, neg, unresolved = causes.split(att, 0)
    assert "pool_creation" in pos and "cache_residual" in unresolved
    assert 'data-cause="cache_residual"' not in svg and 'data-cause="unresolved"' in svg


def test_timeline_draws_recorded_spans_per_thread():
    ops = [{"name": f"op{i}", "kind": "conv2d"} for i in range(3)]
    lanes = {"main": [(0, 0.0, 1e6), (1, 1.2e6, 2e6), (2, 2.5e6, 4e6)], "worker 1": [(0, 0, 9e5)]}
    recorded = timeline_chart(Timeline(lanes, True, "one recorded pass"), ops)
    assert recorded.count('class="span"') == 4 and "not a recorded" not in recorded
    laid = timeline_chart(Timeline(lanes, False, "laid end to end"), ops)
    assert "(not a recorded timeline)" in laid


def test_mode_colours_come_from_the_registry():
    assert list(palette.MODE) == [m for m in BY_NAME]
    assert len(set(palette.MODE.values())) == len(palette.MODE)


@pytest.mark.subprocess  # a CLI process
def test_bad_html_path_fails_before_measuring(tiny_cnn, tmp_path):
    start = time.monotonic()
    done = cli_runner.run(["profile", tiny_cnn, "--html", tmp_path / "missing" / "p.html"],
                          timeout=120)
    assert done.returncode == 2 and "--html" in done.stderr and "does not exist" in done.stderr
    assert main(["compare", str(tmp_path / "x.json"), str(tmp_path / "y.json"), "--html",
                 str(tmp_path)]) == 2
    assert time.monotonic() - start < 60


def test_compare_page_marks_a_real_change():
    from minigraph.analysis.comparison import Comparison
    from minigraph.results.profile import Profile
    ops = [{"index": i, "name": f"op{i}", "func_name": "f", "kind": "conv2d", "hash": "h",
            "shapes": [], "layouts": {}} for i in range(3)]
    base = [1000.0 + i for i in range(20)]
    a = Profile(ops, {}, {"warm": [base, base, base]})
    b = Profile(ops, {}, {"warm": [[2 * x for x in base], base, [x + 1 for x in base]]})
    page = compare_page.render(Comparison(a, b))
    assert page.count('data-verdict="slower"') == 1 and page.count('class="ratio"') == 2
    assert "1 of 3 ops differ (1 slower, 0 faster)" in page


@pytest.mark.slow
def test_resnet18_reports_render_in_chromium(build_dir, browser, tmp_path):
    """The acceptance check: the three reports of ResNet-18 render with their charts, ask
    nothing of the network, and `show --html` re-draws the profile's page byte for byte.
    Set MINIGRAPH_HTML_DIR to keep the pages and their screenshots."""
    out, d = build_dir("resnet18"), tmp_path
    cli("profile", out, *FAST, "--json", d / "a.json", "--html",
        d / "profile.html")
    cli("profile", out, "--mode", "warm", "--mode", "e2e", *FAST, "--json", d / "b.json")
    # one process per rung (every rung drawn, as many intervals as one sample gives)
    cli("diagnose", out, "--processes", "1", "--gap-ms", "100", "--gap-repeat", "1",
        "--quiet", "--json", d / "diag.json", "--html", d / "diagnose.html")
    assert main(["compare", str(d / "a.json"), str(d / "b.json"), "--html",
                 str(d / "compare.html")]) == 0
    assert main(["show", str(d / "a.json"), "--html", str(d / "show.html")]) == 0
    assert (d / "show.html").read_bytes() == (d / "profile.html").read_bytes()
    n = len(load_profile(d / "a.json").ops)
    counts = {}
    for name in ("profile", "diagnose", "compare"):
        page = d / f"{name}.html"
        assert not re.search(r"https?://|\bsrc=|\bhref=|@import|url\((?!#)", page.read_text())
        dom, urls, png = browser.render(page, d / f"{name}.png")
        assert page_requests(urls) == []
        els = parse(dom)
        counts[name] = len(find(els, "rect")) + len(find(els, "path")) + len(find(els, "circle"))
        assert png_size(png) == (1400, 1000) and png_colours(png) > 100
        if name == "profile":
            bars = [e for e in find(els, "rect", "bar") if e.inside("svg", "per-op",
                                                                    data_scale="log")]
            assert len(bars) == 5 * n
        if name == "diagnose":
            rungs = [e.attrs["data-rung"] for e in find(els, "rect", "total")
                     if e.inside("svg", "ladder")]
            assert rungs == ["a", "b", "w", "c", "d", "e", "f"]
            assert len(find(els, "rect", "step")) >= 6
        if name == "compare":
            assert len(find(els, "circle", "ratio")) == n + 1
    assert all(c > 60 for c in counts.values()), counts  # dozens of bars and paths per page
    keep = os.environ.get("MINIGRAPH_HTML_DIR")
    if keep:
        for f in d.iterdir():
            if f.suffix in (".html", ".png", ".json"):
                shutil.copy(f, Path(keep) / f"resnet18-{f.name}")


@pytest.mark.parametrize("keep", [(), ("first-run",), ("warm",), ("in-run", "cold"),
                                  ("one-pass", "warm", "e2e")])
def test_profile_page_with_some_modes_only(reports, keep):
    """Each chart appears only when what it draws was measured, and nothing breaks."""
    prof = load_profile(reports["a"])
    prof.samples = {m: v for m, v in prof.samples.items() if m in keep}
    prof.timeline = {m: p for m, p in getattr(prof, "timeline", {}).items() if m in keep}
    if "e2e" not in keep:
        prof.e2e_ns = []
    page = profile_page.render(prof)
    per_op = page.count('class="bar" data-series=')
    assert ('class="hbars per-op"' in page) == bool(set(keep) - {"e2e"})
    assert per_op >= len([m for m in keep if m != "e2e"]) * len(prof.ops)
    assert ('class="waterfall reconcile"' in page) == ("e2e" in keep and "warm" in keep)
    assert ('class="timeline"' in page) == bool({"first-run", "one-pass"} & set(keep))


def test_timeline_reads_recorded_passes_when_the_profile_has_them(reports):
    """Profile.timeline (issue #14b: mode -> a real pass) is drawn instead of the fallback:
    the main thread's op windows as recorded, workers' CPU time inside each op."""
    from types import SimpleNamespace as NS

    from minigraph.report.html import timeline
    prof = load_profile(reports["a"])
    prof.timeline = {}
    assert timeline.recorded(prof) is None
    n = len(prof.ops)
    worker = NS(tid=7, name="python", role="other", op_cpu_ns=lambda i: 500 if i % 2 else 0)
    main_t = NS(tid=1, name="python", role="main", op_cpu_ns=lambda i: 900)
    prof.timeline = {"first-run": NS(op_start_ns=[1000 * i for i in range(n)],
                                     op_end_ns=[1000 * i + 900 for i in range(n)],
                                     threads=[main_t, worker])}
    tl = timeline.recorded(prof)
    assert tl.recorded and tl.lanes["first-run: main thread"][1] == (1, 1000.0, 1900.0)
    assert [s[0] for s in tl.lanes["first-run: python 7 (CPU in op)"]] == list(range(1, n, 2))
    page = profile_page.render(prof)
    assert 'data-recorded="true"' in page and "not a recorded timeline" not in page


def test_buttons_reorder_and_rescale_and_bars_show_tooltips(browser, reports, tmp_path):
    """Click 'time' and 'linear' on the per-op chart and move the mouse over a bar (a script
    appended to a copy of the page), then read the DOM: rows are laid out by warm median,
    largest first, the linear chart is shown, and the tooltip shows the bar's numbers."""
    page = tmp_path / "clicked.html"
    click = ("<script>var f=document.querySelector('svg.per-op').closest('.figure');"
             "f.querySelector('button[data-order=time]').click();"
             "f.querySelector('button[data-scale=lin]').click();"
             "var b=f.querySelector('svg[data-scale=lin] rect.bar'),r=b.getBoundingClientRect();"
             "b.dispatchEvent(new MouseEvent('mousemove',{bubbles:true,clientX:r.x+1,"
             "clientY:r.y+1}));</script></body>")
    page.write_text(reports["profile"].read_text().replace("</body>", click))
    els = parse(browser.dump_dom(page))
    fig = next(e for e in find(els, "div", "figure") if any(
        "per-op" in p.classes for p in find(els, "svg") if p.inside("div", "figure") is e))
    assert fig.attrs["data-scale"] == "lin"
    rows = [e for e in find(els, "g", "row") if e.inside("svg", "per-op", data_scale="lin")]
    ys = [float(re.search(r"translate\(0,([\d.]+)\)", r.attrs["transform"]).group(1))
          for r in rows]
    by_y = [r.attrs["data-k-time"] for _, r in sorted(zip(ys, rows), key=lambda t: t[0])]
    assert [float(k) for k in by_y] == sorted(float(k) for k in by_y)
    prof = load_profile(reports["a"])
    warm = [prof.median("warm", op["index"]) for op in prof.ops]
    top = next(r for _, r in sorted(zip(ys, rows), key=lambda t: t[0]))
    assert int(top.attrs["data-op"]) == max(range(len(warm)), key=lambda i: warm[i])
    tip = find(els, "div", id="tip")[0]  # hovering a bar shows its numbers
    assert "display: block" in tip.attrs["style"] and re.match(r"op \d+ ", tip.text)
