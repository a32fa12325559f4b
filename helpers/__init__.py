"""Profiling helpers shared by every notebook of *Attention, Profiled*: the public API.

    from helpers import Session
    s = Session()                        # live on a GPU, else the configured replay set; s.decision.reason
    s.stages(["naive", "sdpa_flash"])    # Profiles, with a one-line banner
    Session("h200").stage("naive")       # one GPU's recording, whatever this machine is

    from helpers import profile_stage
    prof = profile_stage("naive")        # live on a GPU, else the recorded trace
    prof.kernels()                       # one forward's GPU events, names decoded

    from helpers import profile_code, load_trace
    prof = profile_code(model, x, annotation="my_model", no_grad=True)   # any callable, live
    prof = load_trace("trace.json.gz")   # any trace torch.profiler wrote, the same Profile

Five layers, each a subpackage; a lower one never imports a higher one, and views, occupancy
and chapters never import sources (tests/test_layers.py):

    core/        config (every environment variable, recording paths), errors, the stage registry,
                 Profile and its tables, kernel-name decoders, pure analyses
    sources/     acquisition: the one live-or-replay decision, capture, replay, load_trace,
                 profile_code, the own-model experiments, Nsight Compute, the ceilings
    views/       what every page shows: kernel tables, charts, guesses, verdicts, widgets, glue
    occupancy/   the occupancy calculator and its views
    chapters/    one module per chapter's own code

This module is the top: it names what a notebook uses. The page modules load on first use, so
`import helpers` stays light (no plotly, no widgets) for scripts and tests.
"""
from __future__ import annotations

import importlib
import types

from .sources.anytrace import load_trace
from .sources.modes import (MODES, Decision, closing_stages, cuda_available, decide, profile_stage, profile_stages,
                            resolve_mode)
from .core.profile import Profile, Provenance, TraceError
from .sources.replay import recorded_shapes
from .sources.session import Session
from .core.replay_set import ReplaySet
from .core.stages import (ARTICLE_STAGES, DEFAULT_SHAPE, STAGES, Shape, Stage, StageUnavailable,
                               get_stage)
from .core.stages import stages_where   # every stage list a page needs: a query of the registry

# the namespaces notebooks call into, as `tables.kernel_table(prof)`: name -> module
MODULES = {
    "tables": "helpers.views.tables",
    "charts": "helpers.views.charts",
    "widgets": "helpers.views.widgets",
    "claims": "helpers.chapters.claims",
    "prose": "helpers.views.prose",
    "hub": "helpers.chapters.hub_flash",
    "compiled": "helpers.chapters.compiled",
    "flex": "helpers.chapters.flex",
    "guess": "helpers.views.guess",
    "counters": "helpers.chapters.counters",
    "roofline": "helpers.chapters.roofline",
    "perfetto": "helpers.views.perfetto",
    "render": "helpers.views.render",
    "occupancy_charts": "helpers.occupancy.charts",
    "occupancy_lessons": "helpers.chapters.occupancy_lessons",
    "occupancy_calculator": "helpers.occupancy.browser",
    "occupancy_truth": "helpers.chapters.occupancy_truth",
    "breakdown": "helpers.views.breakdown",
    "own_model": "helpers.chapters.own_model",
    "training": "helpers.chapters.training",
}
# functions that load on first use: profile_code imports torch, `import helpers` does not
FUNCTIONS = {"profile_code": "helpers.sources.own_code", "use_book_style": "helpers.views.style",
             "profile_training": "helpers.sources.training_modes",
             "profile_trainings": "helpers.sources.training_modes",
             "memory_recording": "helpers.sources.training_modes",
             "snapshots": "helpers.sources.training_modes", "inplace_here": "helpers.sources.training_modes",
             "training_counters": "helpers.sources.training_modes"}


def sweep(stages, shapes, mode: str = "auto"):
    """Profile every stage at every shape (live, or the recordings), with a progress bar; one
    summary row per pair (`widgets.sweep`, handed profile_stage)."""
    from .views import widgets
    return widgets.sweep(stages, shapes, lambda stage, shape: profile_stage(stage, shape, mode, quiet=True),
                         live=resolve_mode(mode) == "live")


def shape_explorer(stages):
    """Pick a shape and profile the stages again: live, any shape; in replay, the shapes recorded
    for every one of them (`widgets.shape_explorer`, handed profile_stage and those shapes)."""
    from .views import widgets
    recorded = None
    if resolve_mode() != "live":
        recorded = sorted(set.intersection(*(set(recorded_shapes(s)) for s in stages)),
                          key=lambda s: (s.head_dim, s.seq))
    return widgets.shape_explorer(stages, lambda stage, shape: profile_stage(stage, shape, quiet=True), recorded)


def profile_hub_flash(shape: Shape = DEFAULT_SHAPE, mode: str = "auto"):
    """The hub_flash page's trace (hub_flash live if `kernels` loads it, else its replay, else
    sdpa_flash's, labelled), as `hub.HubFlash`."""
    from .chapters.hub_flash import HubFlash
    from .core.hub_kernel import FIX
    from .sources.hub import fetch_hub_flash
    from .views.notes import not_live
    prof, line, loaded, stand_in = fetch_hub_flash(shape, mode)
    if not loaded:  # why not live, folded under one line, in the reader's terms
        from IPython.display import display
        display(not_live("The Hub's FlashAttention-2 kernel is not loaded on this machine; the page "
                         "shows its recorded trace.", line, FIX))
    return HubFlash(prof, line, stand_in)


def _quiet_profile(stage: str, shape: Shape, mode: str = "auto") -> Profile:
    return profile_stage(stage, shape, mode, quiet=True)


def _collect_counters(*args, quiet: bool = False, **kwargs):
    """sources.counters.collect, shown as a page shows it: replayed counters say where they were
    recorded in one line, with why they are not live folded under it (views.notes)."""
    from .sources import counters as collecting
    from .views.notes import show_counters
    result = collecting.collect(*args, quiet=True, **kwargs)
    if not quiet:
        show_counters(result)
    return result


def _bound() -> dict[str, dict]:
    """What a chapter's namespace fetches, bound here: the chapter module takes its acquisition as
    an argument and never imports sources; `helpers.flex.gap_sweep(...)` is handed profile_stage."""
    import functools

    from .chapters import counters, flex, occupancy_lessons, roofline
    from .sources import ceilings, modes, own_model, smem_cliff

    def capture(stage, shape):
        from .sources.capture import capture_cached
        return capture_cached(stage, shape)
    from .sources import counters as collecting
    return {
        "counters": {"collect": _collect_counters, "cache_dir": collecting.cache_dir,
                     "hbm_measured": functools.partial(counters.hbm_measured, fetch=_quiet_profile)},
        "roofline": {"load_ceilings": functools.partial(roofline.load_ceilings, fetch_live=ceilings.fetch_live,
                                                        recorded=ceilings.load),
                     "timings": functools.partial(roofline.timings, capture=capture)},
        "flex": {"gap_sweep": functools.partial(flex.gap_sweep, fetch=_quiet_profile)},
        "own_model": {"profile": own_model.profile, "recording": own_model.recording},
        "occupancy_lessons": {"load_stages": functools.partial(modes.load_stages, occupancy_lessons.STAGES),
                              "smem_cliff_events": smem_cliff.fetch_smem_cliff},
    }


class _Namespace(types.ModuleType):
    """A chapter's module with its acquisition bound (see _bound): every other name is the module's."""

    def __init__(self, module: types.ModuleType, bound: dict):
        super().__init__(module.__name__, module.__doc__)
        self.__dict__.update(bound)
        self._module = module

    def __getattr__(self, name: str):
        return getattr(self._module, name)

    def __dir__(self):
        return sorted(set(dir(self._module)) | set(self.__dict__))


def __getattr__(name: str):
    if name in MODULES:
        module = importlib.import_module(MODULES[name])
        bound = _bound().get(name) if name in ("counters", "flex", "occupancy_lessons", "own_model", "roofline") else None
        if bound:
            module = _Namespace(module, bound)
        globals()[name] = module
        return module
    if name in FUNCTIONS:
        function = getattr(importlib.import_module(FUNCTIONS[name]), name)
        globals()[name] = function
        return function
    raise AttributeError(f"module 'helpers' has no attribute {name!r}")


__all__ = ["Session", "ReplaySet", "ARTICLE_STAGES", "DEFAULT_SHAPE", "MODES", "STAGES", "Decision", "Profile", "Provenance", "Shape", "Stage",
           "closing_stages", "decide", "profile_hub_flash", "shape_explorer", "sweep",
           "StageUnavailable", "TraceError", "cuda_available", "get_stage", "load_trace",
           "profile_code", "profile_stage", "use_book_style", "profile_training", "profile_trainings",
           "memory_recording", "snapshots", "inplace_here", "training_counters", "profile_stages", "recorded_shapes", "resolve_mode", *MODULES]
__all__ += ["stages_where"]
