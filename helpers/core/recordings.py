"""The replay set read as Profiles, with nothing but core: a stage's recorded trace at a shape,
from the GPU's replay set (config.recording_path), or None where there is none. Views that show
what was recorded (the calculator's presets, the occupancy truth table) read it here; the live or
replay decision and its errors belong to helpers.sources.replay."""
from __future__ import annotations

from . import config
from .profile import Profile, TraceError
from .stages import DEFAULT_SHAPE, STAGES, Shape


def recorded_profile(stage: str, shape: Shape = DEFAULT_SHAPE, gpu: str | None = None) -> Profile | None:
    """The recorded Profile of `stage` at `shape`, or None where the replay set has none."""
    path = config.recording_path("trace", f"{stage}__{shape.key}", gpu)
    if not path.exists():
        return None
    return Profile.load(path)


def recorded_profiles(shape: Shape | None = None, gpu: str | None = None) -> list[Profile]:
    """The replay set at ``shape`` (default: the default shape): every stage with a recording,
    in the registry's order."""
    out = []
    for stage in STAGES:
        try:
            prof = recorded_profile(stage, shape or DEFAULT_SHAPE, gpu)
        except TraceError:   # a corrupt recording offers no kernels
            continue
        if prof is not None:
            out.append(prof)
    return out


def recorded_ncu_shapes(stage: str, gpu: str | None = None) -> list[Shape]:
    """The shapes at which `stage`'s Nsight Compute counters were recorded, by sequence length."""
    shapes = [Shape.from_key(p.name.removesuffix(".csv").split("__", 1)[1])
              for p in config.recording_dir("ncu", gpu).glob(f"{stage}__*.csv")]
    return sorted(shapes, key=lambda s: (s.head_dim, s.seq, s.batch, s.heads))
