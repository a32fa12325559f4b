"""The training chapter (11), one topic in five modules over three layers, each named for its layer
(`<layer>.py` or `<layer>_<part>.py`; the layer rule holds inside the slice too:
tests/test_layers.py):

    core.py            the stages it trains and the backward's work from the shape (layer core)
    core_backward.py   the training step read back: phases, autograd nodes, memory (layer core)
    sources_step.py    one training step run live, and its memory (layer sources)
    sources_modes.py   live or recorded: steps, the memory sweep, snapshots (layer sources)
    chapter.py         the chapter's views, handed Profiles and recordings (layer chapters)

`helpers.training` is this package, and its names are the chapter's
(`helpers.training.peak_chart` is `helpers.training.chapter.peak_chart`), loaded on first use, so
importing `helpers.training.core` loads nothing above it. The notebook's fetchers
(`helpers.profile_training`, `helpers.snapshots`, ...) are sources_modes' names."""

# the slice's own modules, named for their layers: imported as modules, never looked up in chapter.py
_LAYERS = ("core", "sources", "views", "occupancy", "chapter")


def __getattr__(name: str):
    if name.startswith("__") or name.split("_")[0] in _LAYERS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import chapter
    return getattr(chapter, name)
