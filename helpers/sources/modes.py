"""Live or replay: where CUDA is present a stage is profiled live, else its recorded trace is loaded."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, Sequence, TypeVar

from ..core import config
from ..core.config import MODES
from ..core.measured_on import elsewhere
from ..core.profile import Profile, TraceError
from .replay import recorded_shapes, replay
from ..core.stages import DEFAULT_SHAPE, STAGES, Shape, StageUnavailable, get_stage


T = TypeVar("T")

# without one of these device files no GPU is visible to this process (NVIDIA's, or ROCm's that
# torch.cuda also drives), and replay need not import torch to find that out (~2 s of CPU)
GPU_DEVICE_FILES = ("/dev/nvidiactl", "/dev/nvidia0", "/dev/kfd")


def cuda_available() -> bool:
    if not any(os.path.exists(f) for f in GPU_DEVICE_FILES):
        return False
    import torch
    return torch.cuda.is_available()


@dataclass(frozen=True)
class Decision:
    """Live or replay, and why: the one decision every source makes (stages, counters, ceilings,
    the own-model experiments, the shared-memory experiment), printable in a banner or a note."""

    mode: str      # "live" or "replay"
    reason: str    # in words: "this process sees a CUDA GPU", "ATTN_PROFILED_MODE=replay", ...

    @property
    def live(self) -> bool:
        return self.mode == "live"

    def __str__(self) -> str:
        return f"{self.mode} ({self.reason})"


def decide(mode: str = "auto") -> Decision:
    """"live" where CUDA is present, else "replay"; ATTN_PROFILED_MODE overrides "auto".
    mode="live" without CUDA raises StageUnavailable (the way out: replay)."""
    asked = mode
    if mode == "auto":
        mode = config.mode_setting()
        if mode != "auto":
            asked = f"ATTN_PROFILED_MODE={mode}"
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if mode == "auto":
        return (Decision("live", "this process sees a CUDA GPU") if cuda_available() else
                Decision("replay", "this process sees no CUDA GPU"))
    if mode == "live" and not cuda_available():
        raise StageUnavailable("mode='live' needs a CUDA GPU and this process sees none; "
                               "use mode='replay' to load the recorded traces.")
    return Decision(mode, f"{asked} was asked for" if asked.startswith("ATTN") else f"mode={mode!r} was asked for")


def resolve_mode(mode: str = "auto") -> str:
    """"live" where CUDA is present, else "replay"; ATTN_PROFILED_MODE overrides "auto"."""
    return decide(mode).mode


def fetch(what: str, mode: str, live: Callable[[], T], recorded: Callable[[], T],
          fallback_on: tuple[type[BaseException], ...] = (StageUnavailable,), quiet: bool = False) -> T:
    """The one live-or-recorded policy (a `Session`'s): `live()` where `decide(mode)` says live,
    else `recorded()`. In "auto" mode a live attempt that raises one of `fallback_on` (a stage this
    GPU can't run: flash on a T4, say) falls back to `recorded()`, saying why ("<why> Showing the
    recorded <what> instead."); asked for "live", it raises."""
    if resolve_mode(mode) != "live":
        return recorded()
    try:
        return live()
    except fallback_on as err:
        if mode == "live":
            raise
        if not quiet:
            print(f"{err} Showing the recorded {what} instead.")
        return recorded()


def live_or_recorded(stage: str, mode: str, live: Callable[[], Profile], recorded: Callable[[], Profile],
                     what: str = "trace", quiet: bool = False) -> Profile:
    """A stage's Profile through `fetch`, with its one-line banner unless quiet."""
    get_stage(stage)
    prof = fetch(what, mode, live, recorded)
    if not quiet:
        print(prof.banner())
    return prof


def profile_stage(stage: str, shape: Shape = DEFAULT_SHAPE, mode: str = "auto",
                  quiet: bool = False, fresh: bool = False, gpu: str | None = None) -> Profile:
    """Profile `stage` live, or replay its recorded trace; print which, in one line.
    Live, a stage is profiled once a session and every page reuses that measurement (so two
    pages show the same numbers); `fresh=True` profiles it again.

    `gpu` names a replay set (a `ReplaySet` slug, "h200"): that GPU's recording, whatever this
    machine is, so one page can set two GPUs side by side. None: live here, or the configured
    replay set (ATTN_PROFILED_REPLAY_GPU)."""
    if gpu is not None:
        get_stage(stage)
        prof = replay(stage, shape, gpu)
        if not quiet:
            print(prof.banner())
        return prof

    def live() -> Profile:
        from .capture import capture_cached  # torch.profiler: only where it runs live
        return capture_cached(stage, shape, fresh=fresh)
    return live_or_recorded(stage, mode, live, lambda: replay(stage, shape), "trace", quiet)


def profile_stages(stages, shape: Shape = DEFAULT_SHAPE, mode: str = "auto",
                   fresh: bool = False, gpu: str | None = None) -> dict[str, Profile]:
    """Several stages at one shape, by name; one line says what was replayed or profiled, where
    and when (one line per recording machine, where they differ). Live, each stage's measurement
    of this session is reused unless `fresh`. `gpu`: that GPU's replay set (see profile_stage)."""
    profiles = {name: profile_stage(name, shape, mode, quiet=True, fresh=fresh, gpu=gpu) for name in stages}
    print(stages_banner(profiles))
    return profiles


def stages_banner(profiles: dict[str, Profile]) -> str:
    """'Replaying naive, inplace: recorded on <GPU> on <date> with torch …' (one line a page),
    the stages grouped by how and where they were measured."""
    groups: dict[tuple[str, str], list[str]] = {}
    for name, prof in profiles.items():
        groups.setdefault((prof.mode, prof.provenance.description), []).append(name)
    lines = []
    for (how, where), names in groups.items():
        listed = ", ".join(names)
        lines.append(f"Replaying {listed}: recorded on {where}." if how == "replay"
                     else f"Profiled {listed} live on {where}.")
    others = elsewhere(profiles)
    if others and any(p.mode == "live" for p in profiles.values()):
        by_gpu: dict[str, list[str]] = {}
        for name, gpu in others.items():
            by_gpu.setdefault(gpu, []).append(name)
        for gpu, names in by_gpu.items():
            lines.append(f"{', '.join(names)} could not run on this GPU: {'its' if len(names) == 1 else 'their'} "
                         f"figures are the {gpu}'s recording, and every comparison with the stages profiled "
                         f"here compares two GPUs (the verdicts name each side's).")
    reused = [name for name, prof in profiles.items() if prof.reused]
    if reused:
        lines.append(f"{', '.join(reused)}: measured earlier this session and reused, as every page "
                     f"shows one measurement of a stage (fresh=True profiles again).")
    return "\n".join(lines)


def closing_stages(mode: str = "auto") -> list[str]:
    """Every registered stage the closing table can show, in the registry's order: live, all of
    them (one this GPU can't run is replayed); in replay, those recorded at the default shape."""
    if resolve_mode(mode) == "live":
        return list(STAGES)
    return [s for s in STAGES if DEFAULT_SHAPE in recorded_shapes(s)]


def load_stages(stages: Sequence[str], mode: str = "auto", gpu: str | None = None) -> dict[str, Profile]:
    """Each stage profiled live (on a GPU) or replayed; a stage this GPU cannot run is replayed
    from the recording, and the one-line banner says which is which. `gpu`: that GPU's replay set."""
    profiles, notes = {}, []
    for stage in stages:
        try:
            profiles[stage] = profile_stage(stage, mode=mode, quiet=True, gpu=gpu)
        except StageUnavailable as err:
            try:
                profiles[stage] = profile_stage(stage, mode="replay", quiet=True, gpu=gpu)
                notes.append(f"{stage} cannot run here ({err}); replaying its recording")
            except TraceError:
                notes.append(f"{stage} cannot run here and has no recording: left out")
        except TraceError:
            notes.append(f"{stage} has no recording: left out")
    print(stages_banner(profiles))
    for note in notes:
        print(f"  {note}")
    return profiles
