"""The replay set: traces recorded live on a real GPU, committed under notebooks/traces/<gpu>/
(`ReplaySet`)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..core import config
from ..core.config import DEFAULT_GPU, REPLAY_DIR, ROOT  # noqa: F401  (re-exported for tools)
from ..core.ncu_tables import shown
from ..core.profile import Profile, TraceError
from ..core.replay_set import ReplaySet
from ..core.stages import DEFAULT_SHAPE, Shape, get_stage


def trace_path(stage: str, shape: Shape = DEFAULT_SHAPE, gpu: str | None = None,
               root: Path | None = None) -> Path:
    return ReplaySet(config.replay_gpu(gpu), root).trace(stage, shape)


def recorded() -> pd.DataFrame:
    """Every recorded trace of every replay set: GPU folder, stage and shape (one row each)."""
    rows = []
    for folder in sorted(p for p in config.replay_root().iterdir() if p.is_dir()):
        for stage, shape, path in ReplaySet(folder.name).traces():
            rows.append({"gpu": folder.name, "stage": stage, **shape.as_dict(), "path": path})
    return pd.DataFrame(rows, columns=["gpu", "stage", "batch", "heads", "seq", "head_dim",
                                       "dtype", "causal", "path"])


def recorded_shapes(stage: str, gpu: str | None = None) -> list[Shape]:
    """The shapes at which `stage` was recorded in `gpu`'s replay set (the configured one by default)."""
    return ReplaySet.configured(gpu).shapes(stage)


def replay(stage: str, shape: Shape = DEFAULT_SHAPE, gpu: str | None = None) -> Profile:
    """Load the recorded profile of `stage` at `shape` from `gpu`'s replay set."""
    get_stage(stage)
    replay_set = ReplaySet.configured(gpu)
    path = trace_path(stage, shape, replay_set.gpu)
    if not path.exists():
        shapes = replay_set.shapes(stage)
        if shapes:
            raise TraceError(
                f"No {replay_set.gpu} recording of {stage} at {shape.key}. In replay the recorded shapes are: "
                f"{', '.join(s.key for s in shapes)}. Pick one of them, or run live on a GPU.")
        raise TraceError(f"No recorded trace at {shown(path)}. Record one on a GPU with "
                         f"`python tools/record.py --stages {stage}`, or restore the replay "
                         f"set with `git checkout -- notebooks/traces`.")
    return Profile.load(path)
