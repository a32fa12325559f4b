"""The shared-memory cliff experiment, one topic in three layers, one module per layer named for its
layer (the layer rule holds inside the slice too: tests/test_layers.py):

    core.py        its design: the kernel's threads and shared memory, the ranges (layer core)
    sources.py     running it under the profiler, or reading its recording (layer sources)
    occupancy.py   its trace read back, Kineto's occupancy recomputed (layer occupancy)

`helpers.smem_cliff` is this package, and its names are the occupancy module's
(`helpers.smem_cliff.summarize_smem_cliff`), loaded on first use, so importing
`helpers.smem_cliff.core` loads nothing above it."""

# the slice's own modules, named for their layers: imported as modules, never looked up in occupancy.py
_LAYERS = ("core", "sources", "views", "occupancy", "chapter")


def __getattr__(name: str):
    if name.startswith("__") or name.split("_")[0] in _LAYERS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import occupancy
    return getattr(occupancy, name)
