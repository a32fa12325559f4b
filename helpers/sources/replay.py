"""The replay set: traces recorded live on a real GPU, committed under notebooks/traces/."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..core import config
from ..core.config import DEFAULT_GPU, REPLAY_DIR, ROOT  # noqa: F401  (re-exported for tools)
from ..core.profile import Profile, TraceError
from ..core.stages import DEFAULT_SHAPE, Shape, get_stage


def trace_path(stage: str, shape: Shape = DEFAULT_SHAPE, gpu: str | None = None,
               root: Path | None = None) -> Path:
    if root is not None:
        return root / config.replay_gpu(gpu) / f"{stage}__{shape.key}.json.gz"
    return config.recording_path("trace", f"{stage}__{shape.key}", gpu)


def recorded() -> pd.DataFrame:
    """Every recorded trace: GPU folder, stage and shape (one row each)."""
    rows = []
    for path in sorted(REPLAY_DIR.glob("*/*__*.json.gz")):
        stage, key = path.name.removesuffix(".json.gz").split("__")
        rows.append({"gpu": path.parent.name, "stage": stage, **Shape.from_key(key).as_dict(),
                     "path": path})
    return pd.DataFrame(rows, columns=["gpu", "stage", "batch", "heads", "seq", "head_dim",
                                       "dtype", "causal", "path"])


def recorded_shapes(stage: str, gpu: str | None = None) -> list[Shape]:
    gpu = config.replay_gpu(gpu)
    table = recorded()
    table = table[(table["stage"] == stage) & (table["gpu"] == gpu)]
    return [Shape(r.batch, r.heads, r.seq, r.head_dim, r.dtype, bool(r.causal))
            for r in table.itertuples()]


def replay(stage: str, shape: Shape = DEFAULT_SHAPE, gpu: str | None = None) -> Profile:
    """Load the recorded profile of `stage` at `shape`; print the one-line banner."""
    get_stage(stage)
    gpu = config.replay_gpu(gpu)
    path = trace_path(stage, shape, gpu)
    if not path.exists():
        shapes = recorded_shapes(stage, gpu)
        if shapes:
            raise TraceError(
                f"No {gpu} recording of {stage} at {shape.key}. In replay the recorded shapes are: "
                f"{', '.join(s.key for s in shapes)}. Pick one of them, or run live on a GPU.")
        raise TraceError(f"No recorded trace at {path}. Record one on a GPU with "
                         f"`python tools/record.py --stages {stage}`, or restore the replay "
                         f"set with `git checkout -- notebooks/traces`.")
    return Profile.load(path)
