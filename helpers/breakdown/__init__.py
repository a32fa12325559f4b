"""Where a step's GPU time goes (HTA's breakdowns per profiler step), one topic in two layers, one
module per layer named for its layer (the layer rule holds inside the slice too:
tests/test_layers.py):

    core.py    the definitions: windows, busy, idle, gaps and their causes (layer core)
    views.py   the tables and charts of any Profile (layer views)

`helpers.breakdown` is this package, and its names are the views'
(`helpers.breakdown.step_table` is `helpers.breakdown.views.step_table`), loaded on first use, so
importing `helpers.breakdown.core` loads nothing above it."""

# the slice's own modules, named for their layers: imported as modules, never looked up in views.py
_LAYERS = ("core", "sources", "views", "occupancy", "chapter")


def __getattr__(name: str):
    if name.startswith("__") or name.split("_")[0] in _LAYERS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import views
    return getattr(views, name)
