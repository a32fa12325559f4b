"""Live or replay: where CUDA is present a stage is profiled live, else its recorded trace is loaded."""
from __future__ import annotations

from ..core import config
from ..core.config import MODES
from ..core.profile import Profile
from .replay import replay
from ..core.stages import DEFAULT_SHAPE, Shape, StageUnavailable, get_stage


def cuda_available() -> bool:
    import torch
    return torch.cuda.is_available()


def resolve_mode(mode: str = "auto") -> str:
    """"live" where CUDA is present, else "replay"; ATTN_PROFILED_MODE overrides "auto"."""
    if mode == "auto":
        mode = config.mode_setting()
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if mode == "auto":
        mode = "live" if cuda_available() else "replay"
    if mode == "live" and not cuda_available():
        raise StageUnavailable("mode='live' needs a CUDA GPU and this process sees none; "
                               "use mode='replay' to load the recorded traces.")
    return mode


def profile_stage(stage: str, shape: Shape = DEFAULT_SHAPE, mode: str = "auto",
                  quiet: bool = False) -> Profile:
    """Profile `stage` live, or replay its recorded trace; print which, in one line.

    In "auto" mode a stage this GPU can't run (flash on a T4, say) is replayed instead, with
    the reason; in "live" mode it raises StageUnavailable."""
    get_stage(stage)
    if resolve_mode(mode) == "live":
        from .capture import capture  # torch.profiler: only where it runs live
        try:
            prof = capture(stage, shape)
        except StageUnavailable as err:
            if mode == "live":
                raise
            print(f"{err} Showing the recorded trace instead.")
            prof = replay(stage, shape)
    else:
        prof = replay(stage, shape)
    if not quiet:
        print(prof.banner())
    return prof


def profile_stages(stages, shape: Shape = DEFAULT_SHAPE, mode: str = "auto") -> dict[str, Profile]:
    """Several stages at one shape, by name, each with its banner."""
    return {name: profile_stage(name, shape, mode) for name in stages}
