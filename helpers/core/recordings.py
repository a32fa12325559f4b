"""The replay set read as Profiles, with nothing but core: a stage's recorded trace at a shape,
from the GPU's replay set (`ReplaySet`), or None where there is none. The live or replay decision
and its errors belong to helpers.sources.replay."""
from __future__ import annotations

from .profile import Profile, TraceError
from .replay_set import ReplaySet
from .stages import DEFAULT_SHAPE, STAGES, Shape


def recorded_profile(stage: str, shape: Shape = DEFAULT_SHAPE, gpu: str | None = None) -> Profile | None:
    """The recorded Profile of `stage` at `shape`, or None where the replay set has none."""
    path = ReplaySet.configured(gpu).trace(stage, shape)
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
    return ReplaySet.configured(gpu).ncu_shapes(stage)
