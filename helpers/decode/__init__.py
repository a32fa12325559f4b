"""The decode chapter (08b), one topic in four modules over three layers, each named for its layer
(tests/test_layers.py):

    core.py            a decode recording read as tables, and the decisions drawn from it (layer core)
    sources.py         the workloads at decode, run live on a GPU by tools/record_decode.py (layer sources)
    sources_replay.py  the session's decode recording: this GPU's replay set's decode/ (layer sources)
    chapter.py         the chapter's views: guesses, tables, charts, glue, handed a DecodeSet (layer chapters)

`helpers.decode` is this package, and its names are the chapter's (`helpers.decode.bandwidth_chart`
is `helpers.decode.chapter.bandwidth_chart`), loaded on first use. The notebook gets its recording
from its Session (`s.decode()`)."""

# the slice's own modules, named for their layers: imported as modules, never looked up in chapter.py
_LAYERS = ("core", "sources", "views", "occupancy", "chapter")


def __getattr__(name: str):
    if name.startswith("__") or name.split("_")[0] in _LAYERS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import chapter
    return getattr(chapter, name)
