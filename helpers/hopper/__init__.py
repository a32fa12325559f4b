"""What Hopper adds (chapter 7b), one topic in four layers, one module per layer named for it
(tests/test_layers.py):

    core.py      instruction families, the recorder's files parsed, the verdicts (layer core)
    sources.py   the replay set's hopper/ recording read; its fallback, the ncu tables' tensor pipes
    views.py     the families chart (layer views)
    chapter.py   the page's tables, guesses and glue, handed the recording (layer chapters)

`helpers.hopper` is this package, and its names are the chapter's: `helpers.hopper.families_table`
is `helpers.hopper.chapter.families_table`, loaded on first use."""

_LAYERS = ("core", "sources", "views", "occupancy", "chapter")


def __getattr__(name: str):
    if name.startswith("__") or name.split("_")[0] in _LAYERS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import chapter
    return getattr(chapter, name)
