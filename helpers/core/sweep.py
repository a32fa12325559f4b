"""The shape sweep as a table: one summary row per (stage, shape) of profiles already fetched
(a `Session.grid`). Pure: the closing chapter's sweep, its shape explorer and the live form all
read it."""
from __future__ import annotations

from typing import Mapping

import pandas as pd

from .measured_on import marks
from .profile import Profile
from .stages import Shape

# the columns the shape explorer shows, per stage
SHOWN = ["gpu_events", "gpu_time_us", "cpu_time_us", "do_bench_us"]


def sweep_table(grid: Mapping[tuple[str, Shape], Profile]) -> pd.DataFrame:
    """One row per (stage, shape) of `grid`, in its order: the stage, the shape's fields, the
    profile's summary, and `elsewhere`: measured_on's mark where it was measured on another GPU
    than the grid's own (live, a stage this GPU cannot run is replayed), else ""."""
    marked = marks(grid)
    return pd.DataFrame([{"stage": stage, **shape.as_dict(), **prof.summary().drop("stage").to_dict(),
                          "elsewhere": marked.get((stage, shape), "")}
                         for (stage, shape), prof in grid.items()])


def by_shape(grid: Mapping[tuple[str, Shape], Profile]) -> dict[Shape, pd.DataFrame]:
    """The sweep split by shape: {shape: its stages' SHOWN columns, indexed by stage}, in `grid`'s order."""
    shapes = list(dict.fromkeys(shape for _, shape in grid))
    return {shape: sweep_table({k: p for k, p in grid.items() if k[1] == shape}).set_index("stage")[SHOWN]
            for shape in shapes}
