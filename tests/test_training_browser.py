"""Chapter 11 in headless Chromium, offline (every request outside the book is aborted and counted
as a problem): the memory timeline draws from the snapshot, the snapshot downloads as the pickle
that was recorded, memory_viz is a link (opened by the reader, never fetched by the page), and the
page reads at 1400 and 390 px. The book comes from test_browser's fixtures (ATTN_PROFILED_BOOK_HTML
to reuse a build). Screenshots go next to the build, in _build/screenshots/."""
from __future__ import annotations

import base64
import gzip
from pathlib import Path

import pytest

from conftest import ROOT
from test_browser import LAPTOP, PHONE, book, server, shoot, visit  # noqa: F401  (fixtures)

pytestmark = pytest.mark.browser
PAGE = "notebooks/11_training.html"
TRAINING = ROOT / "notebooks" / "traces" / "h200" / "training"

PLOT_NAMES_JS = """() => [...document.querySelectorAll('.plotly-graph-div')].map(gd => ({
  // a title wrapped to the screen (charts.fit_layout, chart_fit.js) reads as one line
  title: ((gd._fullLayout && gd._fullLayout.title && gd._fullLayout.title.text) || '').replace(/<br>/g, ' '),
  traces: (gd._fullData || []).map(t => ({name: t.name, points: (t.x || []).length})),
  drawn: gd.querySelectorAll('.trace .js-line, .trace .point').length}))"""


@pytest.mark.parametrize("size", [LAPTOP, PHONE], ids=["1400", "390"])
def test_the_training_page_offline(visit, book, size):  # noqa: F811
    v = visit(PAGE, "light", size)
    plots = v.page.evaluate(PLOT_NAMES_JS)
    timeline = [p for p in plots if p["title"].startswith("Memory over one training step")]
    assert len(timeline) == 1
    names = {t["name"]: t["points"] for t in timeline[0]["traces"]}
    # one line per snapshot, as many points as the recorded allocator events it draws
    from helpers.training.core_backward import snapshot_timeline
    for stage in ("naive", "sdpa_flash"):
        data = gzip.decompress(next(TRAINING.glob(f"snapshot__{stage}__*.pickle.gz")).read_bytes())
        assert names[stage] == len(snapshot_timeline(data))
    assert timeline[0]["drawn"] >= 2
    peak = [p for p in plots if p["title"].startswith("Peak memory of one training step")]
    assert peak and peak[0]["drawn"] > 0
    # the snapshots download as the recorded pickles, byte for byte
    links = v.page.locator("a.ap-snapshot-download")
    assert links.count() == 2
    for i in range(2):
        href, name = links.nth(i).get_attribute("href"), links.nth(i).get_attribute("download")
        stage = name.split("__")[1]
        recorded = gzip.decompress(next(TRAINING.glob(f"snapshot__{stage}__*.pickle.gz")).read_bytes())
        assert base64.b64decode(href.split(",", 1)[1]) == recorded
    # memory_viz: a link the reader opens in a new tab, nothing the page fetches
    viz = v.page.locator("a.ap-memory-viz")
    assert viz.count() == 2 and viz.first.get_attribute("href") == "https://pytorch.org/memory_viz"
    assert viz.first.get_attribute("target") == "_blank"
    # the training step's trace: a file of the build, the recorded trace byte for byte
    trace = v.page.locator("a.ap-trace-download")
    assert trace.count() == 1
    served = (Path(book) / "notebooks" / trace.get_attribute("href")).resolve()
    name = trace.get_attribute("download")
    assert name.startswith("training__") and served.read_bytes() == (TRAINING / name.removeprefix("training__")).read_bytes()
    width = v.page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= size[0] + 1, f"the page is {width}px wide at {size[0]}px"
    shots = Path(book).parent / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    shoot(v.page, shots / f"11_training_{size[0]}.png")
    assert not v.problems, v.problems
