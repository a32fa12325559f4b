"""Load plotly.js once for the whole book, from _static, with no network.

Charts are rendered with include_plotlyjs=False (helpers/charts.py), so each page carries only its
figures' data; this puts the plotly.js that ships with the installed plotly package beside them.
"""
from pathlib import Path

import plotly
from sphinx.util.fileutil import copy_asset_file

PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def copy_plotly_js(app, exception):
    if exception is None and app.builder.format == "html":
        copy_asset_file(str(PLOTLY_JS), str(Path(app.outdir) / "_static"))


def setup(app):
    app.add_js_file("plotly.min.js")
    app.connect("build-finished", copy_plotly_js)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
