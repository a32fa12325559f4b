"""The book's look, installed by one explicit call in each notebook's first cell
(`helpers.use_book_style()`, as d2l's `use_svg_display()`): importing helpers changes nothing.

What it installs: pandas' display options (kernel names are the lesson: never cut them short),
the book's plotly template and renderer (views.charts), and, in an IPython kernel, the table
renderer every DataFrame reaches the page through (views.render)."""
from __future__ import annotations

import sys

import pandas as pd

PANDAS_OPTIONS = {"display.max_colwidth": None, "display.max_columns": 40, "display.width": 250}


def use_book_style() -> None:
    """Install the book's pandas options, plotly template and renderer, and table renderer.
    Calling it again changes nothing more."""
    # plotly imports nbformat (its mimetype renderer checks the version), nbformat imports jsonschema,
    # and jsonschema builds an Earley parser for its IRI format checker (rfc3987_syntax) as it is
    # imported: a second of every kernel's first cell, for a check no kernel of the book runs
    # (jsonschema checks formats only when handed a FormatChecker). Left out where not yet loaded.
    sys.modules.setdefault("rfc3987_syntax", None)
    from . import charts, render
    for option, value in PANDAS_OPTIONS.items():
        pd.set_option(option, value)
    charts.install()
    render.install()
