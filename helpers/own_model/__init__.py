"""The "Your own model" chapter (10), one topic in three layers, one module per layer named for its
layer (the layer rule holds inside the slice too: tests/test_layers.py):

    core.py      its experiments, as facts: the code the reader reads, batch, seq (layer core)
    sources.py   building and profiling them live, else loading their recordings (layer sources)
    chapter.py   the chapter's guesses and views, handed the Profiles (layer chapters)

`helpers.own_model` is this package, and its names are the chapter's
(`helpers.own_model.questions` is `helpers.own_model.chapter.questions`), loaded on first use, so
importing `helpers.own_model.core` loads nothing above it."""

# the slice's own modules, named for their layers: imported as modules, never looked up in chapter.py
_LAYERS = ("core", "sources", "views", "occupancy", "chapter")


def __getattr__(name: str):
    if name.startswith("__") or name.split("_")[0] in _LAYERS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import chapter
    return getattr(chapter, name)
