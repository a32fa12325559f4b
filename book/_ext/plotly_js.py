"""Load plotly.js once for the whole book, from _static, with no network.

Charts are rendered with include_plotlyjs=False (helpers/pages/charts.py), so each page carries only its
figures' data; this puts the plotly.js that ships with the installed plotly package beside them.
Pages load it only where it is needed: a page that draws a chart (4.7 MB that the intro, the
glossary, the search page or the occupancy calculator, which draws its own SVG, have no use for).
"""
from pathlib import Path

import plotly
from sphinx.util.fileutil import copy_asset_file

PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def copy_plotly_js(app, exception):
    if exception is None and app.builder.format == "html":
        copy_asset_file(str(PLOTLY_JS), str(Path(app.outdir) / "_static"))


def add_plotly_js(app, pagename, templatename, context, doctree):
    if "Plotly.newPlot" in context.get("body", ""):
        app.add_js_file("plotly.min.js")


def setup(app):
    app.connect("html-page-context", add_plotly_js)
    app.connect("build-finished", copy_plotly_js)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
