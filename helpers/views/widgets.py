"""The shape sweep and the shape explorer of the closing chapter.

The guesses are no widgets: they are judged in the reader's browser (views/guess.py). The shape
explorer is a widget only live (it profiles a shape the reader types, which needs a kernel); in
replay, and so in the static book, it is one HTML output: the recorded shapes in a <select>, each
with its table computed here, shown by a few lines of inline script. No page of the book loads the
ipywidgets manager.
"""
from __future__ import annotations

import html
from typing import Callable, Sequence

import pandas as pd
from IPython.display import display

from ..core.profile import Profile
from ..core.progress import progress
from ..core.stages import DEFAULT_SHAPE, DTYPES, Shape

def sweep(stages, shapes, fetch: Callable[[str, Shape], Profile], live: bool = False) -> pd.DataFrame:
    """Profile every stage at every shape with `fetch(stage, shape)` (helpers.sweep hands it
    profile_stage); one summary row per pair. A progress bar only `live` (a replay is quick, and
    the static book draws no widget)."""
    rows = []
    with progress(len(stages) * len(shapes), "profiling", enabled=live) as bar:
        for shape in shapes:
            for stage in stages:
                prof = fetch(stage, shape)
                rows.append({"stage": stage, **shape.as_dict(), **prof.summary().drop("stage").to_dict()})
                bar.update(1)
    return pd.DataFrame(rows)


SHOWN = ["gpu_events", "gpu_time_us", "cpu_time_us", "do_bench_us"]


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


def shape_explorer(stages, fetch: Callable[[str, Shape], Profile], recorded: Sequence[Shape] | None = None):
    """Pick a shape and re-profile the stages with `fetch(stage, shape)`. Live (`recorded` None):
    any shape, a widget form; in replay: the `recorded` ones (helpers.shape_explorer decides which),
    precomputed here and picked in the browser."""
    if recorded is not None:
        shapes = sorted(recorded, key=lambda s: (s.head_dim, s.seq))
        tables = {s.key: sweep(stages, [s], fetch).set_index("stage")[SHOWN] for s in shapes}
        return RecordedShapes(tables, DEFAULT_SHAPE.key if DEFAULT_SHAPE.key in tables else shapes[0].key)
    import ipywidgets as w
    out = w.Output()
    controls = {name: w.IntText(value=getattr(DEFAULT_SHAPE, name), description=name)
                for name in ("batch", "heads", "seq", "head_dim")}
    controls["dtype"] = w.Dropdown(options=sorted(DTYPES), value=DEFAULT_SHAPE.dtype, description="dtype")
    read = lambda: Shape(**{k: c.value for k, c in controls.items()})  # noqa: E731
    boxes = list(controls.values())
    button = w.Button(description="Profile", button_style="primary", icon="play")

    def run(_=None):
        out.clear_output()
        with out:
            try:
                shape = read()
                table = sweep(stages, [shape], fetch, live=True)
            except (ValueError, RuntimeError) as err:  # bad shape, backend unavailable: say why
                print(err)
                return
            display(table.set_index("stage")[SHOWN])

    button.on_click(run)
    return w.VBox(boxes + [button, out])
