"""`Session(gpu, mode)`: the one live-or-recorded policy, its fallback and its reason.

Every acquisition asks a Session: the stages' forwards, the training steps, Nsight Compute's
counters, the ceilings, the "Your own model" experiments, the shared-memory experiment and the
hub page. It decides once (`decide` → `Decision(mode, reason)`) and holds the replay set it
falls back to (`ReplaySet`), so one GPU has one spelling and one folder:

    s = Session()                     # live where this process sees a CUDA GPU, else the configured set
    s = Session("h200")               # that GPU's recordings, whatever this machine is
    s.decision.reason                 # why live or replay, in words
    s.stages(["naive", "sdpa_flash"])   # Profiles, with the one-line banner

Chapters, views and occupancy never fetch: a notebook asks its session and hands them what it got
(Profiles, tables). Besides the stages: `counters`, `forwards(counters)` (the stages' forwards on
the counters' GPU), `timed(counters)` (09's timed forwards), `ceilings`, `grid`/`sweep` (stages
by shapes), `recorded` (the replay set's forwards, the calculator's presets), `shapes`,
`ncu_shapes`, `closing_stages`, `load_stages`, `smem_cliff`, `hub_flash`, `own_model`,
`own_model_trace`, `training`, `memory`, `snapshots`, `training_counters`, `inplace`.

`fetch(what, live, recorded)` is the policy itself: `live()` where the decision is live, else
`recorded()`; in "auto" mode a live attempt that cannot run here (StageUnavailable, or what the
caller names in `fallback_on`) falls back to the recording and says why; in "live" mode it raises.
A Session named for a GPU (`Session("h200")`) always replays that GPU's set."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence, TypeVar

from ..core.errors import StageUnavailable
from ..core.replay_set import ReplaySet
from ..core.stages import DEFAULT_SHAPE, STAGES, Shape, stages_where
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

    def training(self, stages: Sequence[str] | None = None, shape: Shape = DEFAULT_SHAPE, fresh: bool = False) -> dict:
        """One training step per stage (default: every stage the registry marks has_training);
        live, each is profiled once a session and reused (`fresh=True`: again)."""
        from ..training.sources_modes import TRAINING_STAGES, profile_trainings
        return profile_trainings(tuple(stages or TRAINING_STAGES), shape, self._mode(), gpu=self.gpu, fresh=fresh)

    def memory(self) -> dict:
        """The training chapter's recorded memory sweep (always a recording: too slow for a page)."""
        from ..training.sources_modes import memory_recording
        return memory_recording(self.replay_set.gpu)

    def snapshots(self, stages: Sequence[str] = stages_where(snapshot=True), memory: dict | None = None) -> dict:
        """The memory snapshots: taken live, else recorded."""
        from ..training.sources_modes import snapshots
        return snapshots(tuple(stages), self._mode(), memory, gpu=self.gpu)

    def decode(self):
        """The decode chapter's recording (helpers.decode.core.DecodeSet, or None where the set has
        none) and the line saying where it comes from: always a recording (its recording takes
        minutes on a GPU); live, this GPU's own replay set first."""
        from ..decode.sources_replay import fetch
        device = None
        if self.live and self.gpu is None:
            import torch
            device = torch.cuda.get_device_name(0)
        return fetch(self.gpu, device)

    def training_counters(self) -> dict:
        """ncu's backward and forward tables of the training chapter, with the calibration."""
        from ..training.sources_modes import training_counters
        return training_counters(self.replay_set.gpu)

    def counters(self, stages: Sequence[str], sweep: Sequence[Shape] = (),
                 sweep_stages: Sequence[str] | None = None, quiet: bool = True, metrics: str = "page",
                 recorded_sweep: bool = True):
        """Nsight Compute's counters of the stages' forwards (helpers.counters.sources.collect). Quiet by
        default: a page shows where they come from with `counters.show(...)` (a folded note);
        quiet=False prints it in words, outside a page. Live, ncu reads the `metrics` set ("page":
        what the pages read; "full": every work counter), and the `sweep` comes from this GPU's
        own replay set where it has one (`recorded_sweep`), labelled so."""
        from ..counters.sources import collect
        return collect(stages, sweep, sweep_stages, mode=self._mode(), gpu=self.gpu, quiet=quiet,
                       metrics=metrics, recorded_sweep=recorded_sweep)

    def ceilings(self):
        """(the replay set's recorded ceilings, this GPU's measured ones and its name, or None):
        the two tables roofline.load_ceilings chooses between. Where this GPU's are measured, a
        replay set without ceilings gives None; otherwise its missing recording raises TraceError."""
        from ..core.errors import TraceError
        from .ceilings import fetch_live, load
        measured = None if self.gpu is not None else fetch_live(self.mode)
        try:
            recorded = load(self.replay_set.gpu)
        except TraceError:
            if measured is None:
                raise
            recorded = None
        return recorded, measured

    def own_model(self, name: str, fresh: bool = False):
        """A "Your own model" experiment's Profile, live or its recording (None, with why, where
        neither); live, profiled once a session and reused (`fresh=True`: again)."""
        from ..own_model.sources import profile
        return profile(name, self._mode(), gpu=self.gpu, fresh=fresh)

    def smem_cliff(self, fresh: bool = False):
        """The shared-memory experiment: (events, provenance, the line saying where they come
        from); live, run once a session and reused (`fresh=True`: again)."""
        from ..smem_cliff.sources import fetch_smem_cliff
        return fetch_smem_cliff(self._mode(), gpu=self.gpu, fresh=fresh)

    def hopper(self):
        """The Hopper chapter's recording (helpers.hopper.sources.Recording): per kernel, the SASS
        instruction families it executed and holds; live, this GPU's own recording where it has one."""
        from ..hopper.sources import fetch
        return fetch(self._mode(), gpu=self.gpu)

    def hub_flash(self, shape: Shape = DEFAULT_SHAPE):
        """The hub_flash page's trace: (Profile, the Hub's status line, loaded here, sdpa_flash's stand-in)."""
        from .hub import fetch_hub_flash
        return fetch_hub_flash(shape, self._mode(), gpu=self.gpu)

    # --- what the closing chapter, the roofline and the occupancy pages ask for -------------
    def closing_stages(self) -> list[str]:
        """Every registered stage the closing table can show, in the registry's order: live, all of
        them (one this GPU can't run is replayed); in replay, those recorded at the default shape."""
        if self.live:
            return list(STAGES)
        return [s for s in STAGES if DEFAULT_SHAPE in self.replay_set.shapes(s)]

    def shapes(self, stage: str) -> list[Shape]:
        """The shapes at which `stage`'s forward was recorded in this session's replay set."""
        return self.replay_set.shapes(stage)

    def common_shapes(self, stages: Sequence[str]) -> list[Shape]:
        """The shapes recorded for every one of `stages`, by head_dim then sequence length."""
        shared = set.intersection(*(set(self.shapes(s)) for s in stages))
        return sorted(shared, key=lambda s: (s.head_dim, s.seq))

    def ncu_shapes(self, stage: str = "sdpa_flash") -> list[Shape]:
        """The shapes whose Nsight Compute counters were recorded for `stage`, shortest sequence first."""
        return self.replay_set.ncu_shapes(stage)

    def recorded(self, shape: Shape | None = None) -> list:
        """The replay set's recorded forwards at `shape` (default: the default shape): every stage
        with a recording, in the registry's order (a corrupt one is left out)."""
        from ..core.recordings import recorded_profiles
        return recorded_profiles(shape, self.replay_set.gpu)

    def load_stages(self, stages: Sequence[str]) -> dict:
        """Each stage live or replayed; one this GPU cannot run is replayed from its recording, and
        the one-line banner says which is which (modes.load_stages)."""
        return modes.load_stages(stages, self._mode(), gpu=self.gpu)

    def grid(self, stages: Sequence[str], shapes: Sequence[Shape], known: dict | None = None) -> dict:
        """{(stage, shape): Profile} for every shape and stage (shape by shape), profiled live or
        replayed, with a progress bar only live; a profile in `known` (by stage) at its own shape
        is used as it is."""
        from ..core.progress import progress
        known = known or {}
        out = {}
        with progress(len(stages) * len(shapes), "profiling", enabled=self.live) as bar:
            for shape in shapes:
                for stage in stages:
                    prof = known.get(stage)
                    out[(stage, shape)] = prof if prof is not None and prof.shape == shape else \
                        self.stage(stage, shape, quiet=True)
                    bar.update(1)
        return out

    def sweep(self, stages: Sequence[str], shapes: Sequence[Shape]):
        """Every stage at every shape (`grid`), one summary row per pair (core.sweep)."""
        from ..core.sweep import sweep_table
        return sweep_table(self.grid(stages, shapes))

    def shape_form(self, stages: Sequence[str]):
        """Live: a form that profiles the stages at any shape the reader types (ipywidgets)."""
        from .explorer import shape_form
        return shape_form(stages, lambda shape: self.grid(stages, [shape]))

    def forwards(self, c, known: dict | None = None) -> dict:
        """{stage: Profile} of every stage whose counters `c` holds at the default shape, from the
        GPU the counters come from: the one in `known` where it ran there at that shape, else
        profiled (live counters) or the replay set's recording (replayed counters). A stage with
        neither is left out."""
        from ..core.errors import TraceError
        known = known or {}
        mode = "auto" if c.mode == "live" else "replay"
        out = {}
        for stage in c.stages:
            if (stage, DEFAULT_SHAPE.key) not in c.kernels:
                continue
            prof = known.get(stage)
            if prof is None or prof.shape != DEFAULT_SHAPE or prof.provenance.gpu != c.gpu:
                try:
                    prof = modes.profile_stage(stage, DEFAULT_SHAPE, mode, quiet=True, gpu=self.gpu)
                except (StageUnavailable, TraceError):
                    continue
            out[stage] = prof
        return out

    def timed(self, c, quiet: bool = False) -> list:
        """The profiled forward of every (stage, shape) whose counters `c` holds, on the GPU the
        counters come from: live (torch.profiler and do_bench, with a progress bar) when they were
        measured live, else the replay set's traces recorded on that GPU. One without is left out."""
        from ..core.errors import TraceError
        from ..core.recordings import recorded_profile
        recorded = getattr(c, "recorded", {})   # live counters' sweep read from this GPU's replay set
        jobs = [(stage, Shape.from_key(key)) for stage, key in c.kernels if (stage, key) not in recorded]
        out = []
        if c.mode == "live":
            # the forwards whose counters came from this GPU's replay set: that set's times too
            for (stage, key), slug in recorded.items():
                try:
                    prof = recorded_profile(stage, Shape.from_key(key), slug)
                except TraceError:
                    prof = None
                if prof is not None:
                    out.append(prof)
            import ipywidgets as w
            from IPython.display import display

            from .capture import capture_cached
            bar = w.IntProgress(min=0, max=len(jobs), description="do_bench")
            display(bar)
            for stage, shape in jobs:
                try:
                    out.append(capture_cached(stage, shape))
                except Exception as err:  # noqa: BLE001 - a stage this GPU can't run has no timing
                    if not quiet:
                        print(f"  {stage} at {shape.key}: not timed here ({type(err).__name__}: {str(err)[:160]})")
                bar.value += 1
            bar.description = "done"
            return out
        for stage, shape in jobs:
            try:
                prof = recorded_profile(stage, shape, self.replay_set.gpu)
            except TraceError:
                continue
            if prof is not None and prof.provenance.gpu == c.gpu:
                out.append(prof)
        if not quiet and out:
            print(f"Replaying the profiler's and the timers' figures of {len(out)} forwards, recorded on "
                  f"{out[-1].provenance.description}.")
        return out

    def own_model_trace(self, name: str):
        """Where the replay set keeps a "Your own model" experiment's trace (a file load_trace reads)."""
        return self.replay_set.path("own_model", name)

    def inplace(self) -> list[dict]:
        """The in-place experiment, run right here: on the GPU where there is one, else on the CPU."""
        from ..training.sources_modes import inplace_here
        return inplace_here()

    def _mode(self) -> str:
        return "replay" if self.gpu is not None else self.mode

    def __str__(self) -> str:
        return f"{self.decision} on {self.replay_set}"
