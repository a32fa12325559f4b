"""Nsight Compute's counters, one topic in three layers, one module per layer named for its layer
(the layer rule holds inside the slice too: tests/test_layers.py):

    core.py      the `Counters` of a page and the calibrations (layer core)
    sources.py   collecting them: live under ncu, else the replay set's recordings (layer sources)
    chapter.py   the counters chapter's views, handed `Counters` (layer chapters)

`helpers.counters` is this package, and its names are the chapter's: `helpers.counters.show` is
`helpers.counters.chapter.show`, loaded on first use, so importing `helpers.counters.core` loads
nothing above it."""

# the slice's own modules, named for their layers: imported as modules, never looked up in chapter.py
_LAYERS = ("core", "sources", "views", "occupancy", "chapter")


def __getattr__(name: str):
    if name.startswith("__") or name.split("_")[0] in _LAYERS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import chapter
    return getattr(chapter, name)
