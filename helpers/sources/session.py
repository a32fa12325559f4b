"""`Session(gpu, mode)`: the one live-or-recorded policy, its fallback and its reason.

Every acquisition asks a Session: the stages' forwards, the training steps, Nsight Compute's
counters, the ceilings, the "Your own model" experiments, the shared-memory experiment and the
hub page. It decides once (`decide` → `Decision(mode, reason)`) and holds the replay set it
falls back to (`ReplaySet`), so one GPU has one spelling and one folder:

    s = Session()                     # live where this process sees a CUDA GPU, else the configured set
    s = Session("h200")               # that GPU's recordings, whatever this machine is
    s.decision.reason                 # why live or replay, in words
    s.stages(["naive", "sdpa_flash"])   # Profiles, with the one-line banner

`fetch(what, live, recorded)` is the policy itself: `live()` where the decision is live, else
`recorded()`; in "auto" mode a live attempt that cannot run here (StageUnavailable, or what the
caller names in `fallback_on`) falls back to the recording and says why; in "live" mode it raises.
A Session named for a GPU (`Session("h200")`) always replays that GPU's set."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence, TypeVar

from ..core.errors import StageUnavailable
from ..core.replay_set import ReplaySet
from ..core.stages import DEFAULT_SHAPE, Shape, stages_where
from . import modes
from .modes import Decision, decide

T = TypeVar("T")


@dataclass
class Session:
    """One GPU's acquisition: live here, or `gpu`'s replay set (default: the configured one)."""

    gpu: str | None = None
    mode: str = "auto"
    decision: Decision = field(init=False)
    replay_set: ReplaySet = field(init=False)

    def __post_init__(self) -> None:
        self.replay_set = ReplaySet.configured(self.gpu)
        if self.gpu is not None:   # a named GPU's recordings: replay, whatever this machine is
            self.decision = Decision("replay", f"the {self.gpu} replay set was asked for")
        else:
            self.decision = decide(self.mode)

    @property
    def live(self) -> bool:
        return self.decision.live

    @property
    def reason(self) -> str:
        """Why live or replay, in words: the `Decision`'s reason."""
        return self.decision.reason

    def fetch(self, what: str, live: Callable[[], T], recorded: Callable[[], T],
              fallback_on: tuple[type[BaseException], ...] = (StageUnavailable,), quiet: bool = False) -> T:
        """The policy (modes.fetch) under this session's mode: `live()` where live, else
        `recorded()`; in "auto" a live attempt raising one of `fallback_on` falls back, saying why."""
        return modes.fetch(what, self._mode(), live, recorded, fallback_on, quiet)

    # --- what a page asks for ---------------------------------------------------------------
    def stage(self, stage: str, shape: Shape = DEFAULT_SHAPE, quiet: bool = False, fresh: bool = False):
        """A stage's Profile at `shape` (modes.profile_stage under this session's policy)."""
        return modes.profile_stage(stage, shape, self.mode, quiet=quiet, fresh=fresh, gpu=self.gpu)

    def stages(self, stages: Sequence[str], shape: Shape = DEFAULT_SHAPE, fresh: bool = False) -> dict:
        """Several stages at one shape, with the one-line banner."""
        return modes.profile_stages(stages, shape, self.mode, fresh=fresh, gpu=self.gpu)

    def training(self, stages: Sequence[str] | None = None, shape: Shape = DEFAULT_SHAPE) -> dict:
        """One training step per stage (default: every stage the registry marks has_training)."""
        from .training_modes import TRAINING_STAGES, profile_trainings
        return profile_trainings(tuple(stages or TRAINING_STAGES), shape, self._mode(), gpu=self.gpu)

    def memory(self) -> dict:
        """The training chapter's recorded memory sweep (always a recording: too slow for a page)."""
        from .training_modes import memory_recording
        return memory_recording(self.replay_set.gpu)

    def snapshots(self, stages: Sequence[str] = stages_where(snapshot=True), memory: dict | None = None) -> dict:
        """The memory snapshots: taken live, else recorded."""
        from .training_modes import snapshots
        return snapshots(tuple(stages), self._mode(), memory, gpu=self.gpu)

    def training_counters(self) -> dict:
        """ncu's backward and forward tables of the training chapter, with the calibration."""
        from .training_modes import training_counters
        return training_counters(self.replay_set.gpu)

    def counters(self, stages: Sequence[str], sweep: Sequence[Shape] = (),
                 sweep_stages: Sequence[str] | None = None, quiet: bool = False):
        """Nsight Compute's counters of the stages' forwards (sources.counters.collect)."""
        from .counters import collect
        return collect(stages, sweep, sweep_stages, mode=self._mode(), gpu=self.gpu, quiet=quiet)

    def ceilings(self):
        """(the replay set's recorded ceilings, this GPU's measured ones and its name, or None):
        the two tables roofline.load_ceilings chooses between."""
        from .ceilings import fetch_live, load
        return load(self.replay_set.gpu), (None if self.gpu is not None else fetch_live(self.mode))

    def own_model(self, name: str):
        """A "Your own model" experiment's Profile, live or its recording (None, with why, where neither)."""
        from .own_model import profile
        return profile(name, self._mode(), gpu=self.gpu)

    def smem_cliff(self):
        """The shared-memory experiment: (events, provenance, the line saying where they come from)."""
        from .smem_cliff import fetch_smem_cliff
        return fetch_smem_cliff(self._mode(), gpu=self.gpu)

    def hub_flash(self, shape: Shape = DEFAULT_SHAPE):
        """The hub_flash page's trace: (Profile, the Hub's status line, loaded here, sdpa_flash's stand-in)."""
        from .hub import fetch_hub_flash
        return fetch_hub_flash(shape, self._mode(), gpu=self.gpu)

    def _mode(self) -> str:
        return "replay" if self.gpu is not None else self.mode

    def __str__(self) -> str:
        return f"{self.decision} on {self.replay_set}"
