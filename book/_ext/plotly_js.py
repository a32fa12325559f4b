"""Load plotly.js once for the whole book, from _static, with no network: a partial bundle.

Charts are rendered with include_plotlyjs=False (helpers/views/charts.py), so each page carries
only its figures' data. The book draws bar, scatter and heatmap traces, all in plotly.js's
cartesian partial bundle (plotly.js-cartesian-dist-min from npm, vendored by book/_vendor/fetch.py
and written to _static/vendor/ by static_book): 1.5 MB where the full plotly.min.js that ships
with plotly.py is 4.8 MB. tests/test_browser.py lists the trace types of the built pages and
checks that the bundle registers every one.

The bundle must be the plotly.js version plotly.py writes its figures for: a mismatch is a
warning (so, under -W, a failed build). Pages load it only where it is needed: a page that draws
a chart (the intro, the glossary, the search page or the occupancy calculator, which draws its
own SVG, have no use for it).
"""
import json
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)

PACKAGE = "plotly.js-cartesian-dist-min"
BUNDLE = "vendor/plotly/plotly-cartesian.min.js"  # under _static
MANIFEST = Path(__file__).resolve().parent.parent / "_vendor" / "manifest.json"


def vendored_version() -> str | None:
    packages = json.loads(MANIFEST.read_text())["packages"]
    return next((p["version"] for p in packages if p["name"] == PACKAGE), None)


def check_version(app, config) -> None:
    from plotly.offline import get_plotlyjs_version
    wanted, vendored = get_plotlyjs_version(), vendored_version()
    if vendored != wanted:
        logger.warning(f"[plotly_js] book/_vendor holds {PACKAGE} {vendored}, but plotly.py writes "
                       f"figures for plotly.js {wanted}: set its version in book/_vendor/fetch.py "
                       f"and run it again")


def add_plotly_js(app, pagename, templatename, context, doctree):
    if "Plotly.newPlot" in context.get("body", ""):
        app.add_js_file(BUNDLE)


def setup(app):
    app.connect("config-inited", check_version)
    app.connect("html-page-context", add_plotly_js)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
