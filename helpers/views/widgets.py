"""The shape sweep and the shape explorer of the closing chapter.

The guesses are no widgets: they are judged in the reader's browser (views/guess.py). The shape
explorer is a widget only live (it profiles a shape the reader types, which needs a kernel: the
session's form, helpers.sources.explorer); in replay, and so in the static book, it is one HTML
output: the recorded shapes in a <select>, each with its table computed here from the profiles it
is handed, shown by a few lines of inline script. No page of the book loads the ipywidgets manager.
"""
from __future__ import annotations

import html
from typing import Mapping

import pandas as pd

from ..core.profile import Profile
from ..core.stages import DEFAULT_SHAPE, Shape
from ..core.sweep import SHOWN, by_shape, sweep_table  # noqa: F401  (the sweep's table, core's)


class RecordedShapes:
    """The replay set's shapes in a <select>, each with its stages' table (one HTML output)."""

    def __init__(self, tables: dict[str, pd.DataFrame], initial: str):
        self.tables, self.initial = tables, initial

    def to_html(self) -> str:
        from .render import html_table
        options = "".join(f'<option value="{html.escape(k)}"{" selected" if k == self.initial else ""}>'
                          f"{html.escape(k)}</option>" for k in self.tables)
        panels = "".join(f'<div class="ap-shape" data-shape="{html.escape(k)}"{"" if k == self.initial else " hidden"}>'
                         f"{html_table(t)}</div>" for k, t in self.tables.items())
        script = ("<script>(function (root) { var pick = root.querySelector('select');"
                  " pick.addEventListener('change', function () {"
                  " root.querySelectorAll('.ap-shape').forEach(function (p) {"
                  " p.hidden = p.dataset.shape !== pick.value; }); }); })"
                  "(document.currentScript.parentElement);</script>")
        return (f'<div class="ap-shape-explorer"><label>Recorded shape '
                f'<select aria-label="recorded shape">{options}</select></label>'
                f"<p><small>In replay the shapes are those recorded on the GPU; live, any shape.</small></p>"
                f"{panels}{script}</div>")

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/html": self.to_html(), "text/plain": self.tables[self.initial].to_string()}


def shape_explorer(grid: Mapping[tuple[str, Shape], Profile]) -> RecordedShapes:
    """The recorded shapes in a <select>, each with its stages' table, precomputed here from
    `grid` (a Session's `grid` of the stages at the shapes recorded for all of them) and picked
    in the browser. Live, helpers.shape_explorer shows the session's form instead."""
    tables = {shape.key: table for shape, table in by_shape(grid).items()}
    return RecordedShapes(tables, DEFAULT_SHAPE.key if DEFAULT_SHAPE.key in tables else next(iter(tables)))
