"""Every plotly chart of the built book, checked as Chromium draws it, at 1400×900 and 390×844
(issue 28): points inside the drawn axis ranges, no axis running more than a decade (log) or 50%
(linear) past its data and reference marks, annotations and shapes where they are meant to be
(on a log axis plotly reads an annotation in log10 units: the 10^139 axis of chapter 11), every
category labelled, title and legend inside the chart, no axis title over another text, and on a
phone no toolbar over the title.

The checks live in tools/check_charts.py (also a tool: `python tools/check_charts.py _build/html`),
plain code that reads the drawn state (`_fullLayout`, `calcdata`, the SVG) and imports nothing
of helpers/. The first test plants each kind of bug in a small chart of its own and sees the
checks catch it, so that a check that cannot fail does not pass for one that works."""
from __future__ import annotations

import importlib.util

import pytest

from conftest import ROOT
from test_browser import LAPTOP, PAGES, PHONE, book, page_params, server, shared_visit  # noqa: F401  (fixtures)

pytestmark = pytest.mark.browser

_spec = importlib.util.spec_from_file_location("check_charts", ROOT / "tools" / "check_charts.py")
cc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cc)

PLOTLY = "_static/vendor/plotly/plotly-cartesian.min.js"

# one figure a planted bug, each as plain plotly.js (nothing of the book's), and the check that
# must say so
GOOD_LOG = {"data": [{"x": [512, 1024, 2048, 4096], "y": [0.5, 2, 8, 32], "type": "scatter"}],
            "layout": {"xaxis": {"type": "log"}, "yaxis": {"type": "log"}}}
PLANTED = {
    # the chapter 11 bug: a memory line's label at its value in GiB on a log axis (read as 10^141)
    "placed": {"data": GOOD_LOG["data"], "layout": {**GOOD_LOG["layout"],
               "shapes": [{"type": "line", "xref": "x domain", "x0": 0, "x1": 1, "yref": "y", "y0": 141, "y1": 141}],
               "annotations": [{"xref": "x domain", "x": 1, "yref": "y", "y": 141, "text": "H200: 141 GiB",
                                "showarrow": False}]}},
    # an axis fixed far past its data
    "extent": {"data": [{"x": [1, 2, 3], "y": [2, 5, 9], "type": "scatter"}], "layout": {"yaxis": {"range": [0, 100]}}},
    # points the fixed range cuts off
    "points": {"data": [{"x": [1, 2, 3], "y": [2, 5, 90], "type": "scatter"}], "layout": {"yaxis": {"range": [0, 10]}}},
    # thirty bars with long names: plotly labels every other one on a phone
    "categories": {"data": [{"x": [f"{i}. elementwise kernel" for i in range(30)], "y": list(range(1, 31)),
                             "type": "bar"}], "layout": {}},
    # a title where plotly's toolbar sits
    "modebar": {"data": GOOD_LOG["data"], "layout": {**GOOD_LOG["layout"], "title": {
        "text": "GPU time of each kernel, per forward", "x": 0, "xanchor": "left", "yref": "container", "y": 1,
        "yanchor": "top", "pad": {"t": 8}}}},
}


def _draw(page, base: str, figures: list[dict], width: int) -> list[dict]:
    page.set_content(f"<!doctype html><html><head><script src='{base}/{PLOTLY}'></script></head><body>"
                     + "".join(f"<div id='g{i}' class='plotly-graph-div' style='width:{width - 32}px;height:420px'>"
                               "</div>" for i in range(len(figures))) + "</body></html>")
    page.evaluate("(figs) => Promise.all(figs.map((f, i) => Plotly.newPlot('g' + i, f.data, f.layout)))", figures)
    return page.evaluate(cc.PROBE_JS)


def test_the_checks_catch_each_planted_bug(browser, server):  # noqa: F811
    context = browser.new_context(viewport={"width": PHONE[0], "height": PHONE[1]})
    page = context.new_page()
    try:
        drawn = _draw(page, server, [GOOD_LOG] + list(PLANTED.values()), PHONE[0])
    finally:
        context.close()
    assert cc.check_chart(drawn[0], PHONE[0]) == [], "a clean log-log chart must pass"
    for (check, _), chart in zip(PLANTED.items(), drawn[1:]):
        problems = cc.check_chart(chart, PHONE[0])
        assert any(p.startswith(check + ":") for p in problems), f"planted '{check}' not caught: {problems}"
    # the chapter 11 bug in numbers: the axis drawn past 10^100
    assert max(drawn[1]["axes"]["y"]["range"]) > 100


def test_every_chart_page_is_read(book):  # noqa: F811
    """The pages of the build that hold a chart are among the pages the test below reads."""
    pages = cc.chart_pages(book)
    assert len(pages) >= 10, f"only {len(pages)} pages of the build hold a chart: {pages}"
    assert set(pages) <= set(PAGES), f"chart pages no test reads: {sorted(set(pages) - set(PAGES))}"


@pytest.mark.parametrize("size", [LAPTOP, PHONE], ids=["1400", "390"])
@pytest.mark.parametrize("path", page_params(PAGES))
def test_every_chart_reads_as_drawn(shared_visit, book, path, size):  # noqa: F811
    """Every chart of the page at this width, as drawn (every fold opened): the page is the load
    test_browser's checks share (shared_visit: light theme, one load per page and width)."""
    holds = "plotly-graph-div" in (book / path).read_text(encoding="utf-8", errors="replace")
    v = shared_visit(path, "light", size)
    charts = v.once("charts drawn", lambda v: cc.probe_open_page(v.page))
    rows = [{"chart": c["index"], "title": c["title"], "problems": cc.check_chart(c, size[0]), "drawn": c}
            for c in charts]
    # a page whose HTML holds a chart drew it; a probe that reads nothing passes nothing
    assert bool(rows) == holds, f"{path}: {len(rows)} charts drawn, the HTML {'holds' if holds else 'holds none'}"
    empty = [f"{path} #{r['chart']}" for r in rows if not r["drawn"].get("axes") or not r["drawn"].get("traces")]
    assert not empty, f"charts without axes or data: {empty}"
    bad = [f"{path} #{r['chart']} '{r['title'][:50]}': " + "; ".join(r["problems"]) for r in rows if r["problems"]]
    assert not bad, f"{len(bad)} of {len(rows)} charts at {size[0]} px:\n" + "\n".join(bad)
