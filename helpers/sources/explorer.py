"""The shape explorer, live: a form that profiles the closing chapter's stages at any shape the
reader types (a kernel is needed, so it is a widget only live; in replay the page shows the
recorded shapes, precomputed, with views.widgets.shape_explorer)."""
from __future__ import annotations

from typing import Callable, Sequence

from ..core.profile import Profile
from ..core.stages import DEFAULT_SHAPE, DTYPES, Shape
from ..core.sweep import SHOWN, sweep_table


def shape_form(stages: Sequence[str], profile: Callable[[Shape], dict[tuple[str, Shape], Profile]]):
    """An ipywidgets form: the shape's fields and a button; on click, `profile(shape)` (a Session's
    grid of the stages at that shape) and its table, or why it could not run."""
    import ipywidgets as w
    from IPython.display import display
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
                table = sweep_table(profile(read()))
            except (ValueError, RuntimeError) as err:  # bad shape, backend unavailable: say why
                print(err)
                return
            display(table.set_index("stage")[SHOWN])

    button.on_click(run)
    return w.VBox(boxes + [button, out])
