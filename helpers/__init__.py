"""Profiling helpers shared by every notebook of *Attention, Profiled*: the public API.

    from helpers import Session
    s = Session()                        # live on a GPU, else the configured replay set; s.decision.reason
    s.stages(["naive", "sdpa_flash"])    # Profiles, with a one-line banner
    Session("h200").stage("naive")       # one GPU's recording, whatever this machine is

    from helpers import counters, roofline   # the pages' modules: handed data, never a fetcher
    c = counters.show(s.counters(["naive", "sdpa_flash"]))
    recorded, measured = s.ceilings()
    roof = roofline.load_ceilings(c, recorded, measured)

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
                 profile_code, Nsight Compute, the ceilings
    views/       what every page shows: kernel tables, charts, guesses, verdicts, widgets, glue
    occupancy/   the occupancy calculator and its views
    chapters/    one module per chapter's own code

A topic spread over several layers under one name is a feature slice: a package of its own,
one module per layer it spans, named for that layer (`core.py`, `core_<part>.py`, `sources.py`,
`views.py`, `occupancy.py`, `chapter.py`), and the same rule inside it (tests/test_layers.py):

    counters/    core, sources, chapter          smem_cliff/   core, sources, occupancy
    training/    core, core_backward, sources_step, sources_modes, chapter
    own_model/   core, sources, chapter          breakdown/    core, views
    hopper/      core, sources, views, chapter

`helpers.<slice>` is the slice's package, whose names are its page module's (`helpers.counters.show`
is `helpers.counters.chapter.show`), loaded on first use.

This module is the top: it names what a notebook uses. The page modules load on first use, so
`import helpers` stays light (no plotly, no widgets) for scripts and tests. It binds nothing into
them: a page's data comes from its `Session` and is handed to the page's functions as Profiles
and tables (tests/test_layers.py).
"""
from __future__ import annotations

import importlib
from pathlib import Path

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

# the namespaces notebooks call into, as `tables.kernel_table(prof)`: name -> module; the chapters'
# modules and the feature slices join under their own names below (_chapter_modules, _slices)
MODULES = {
    "tables": "helpers.views.tables",
    "charts": "helpers.views.charts",
    "widgets": "helpers.views.widgets",
    "prose": "helpers.views.prose",
    "hub": "helpers.chapters.hub_flash",
    "guess": "helpers.views.guess",
    "perfetto": "helpers.views.perfetto",
    "render": "helpers.views.render",
    "occupancy_charts": "helpers.occupancy.charts",
    "occupancy_calculator": "helpers.occupancy.browser",
}
# the layers; every other package of helpers/ is a feature slice (the docstring above)
_LAYERS = ("core", "sources", "views", "occupancy", "chapters")


def _chapter_modules() -> dict[str, str]:
    """Every module of helpers/chapters/ not named above, under its own name: a new chapter's module
    is `helpers.<name>` with no line here (the README's chapter recipe). Lists files; imports none."""
    named = set(MODULES.values())
    folder = Path(__file__).parent / "chapters"
    return {p.stem: f"helpers.chapters.{p.stem}" for p in sorted(folder.glob("*.py"))
            if p.stem != "__init__" and f"helpers.chapters.{p.stem}" not in named}


def _slices() -> dict[str, str]:
    """Every feature slice, a package of helpers/ that is not a layer, under its own name: a
    slice's package is `helpers.<name>`, its names its page module's. Lists folders; imports none."""
    here = Path(__file__).parent
    return {p.parent.name: f"helpers.{p.parent.name}" for p in sorted(here.glob("*/__init__.py"))
            if p.parent.name not in _LAYERS}


MODULES |= _chapter_modules()
MODULES |= _slices()
# functions that load on first use: profile_code imports torch, `import helpers` does not
FUNCTIONS = {"profile_code": "helpers.sources.own_code", "use_book_style": "helpers.views.style",
             "profile_training": "helpers.training.sources_modes",
             "profile_trainings": "helpers.training.sources_modes",
             "memory_recording": "helpers.training.sources_modes",
             "snapshots": "helpers.training.sources_modes", "inplace_here": "helpers.training.sources_modes",
             "training_counters": "helpers.training.sources_modes"}


def shape_explorer(session: Session, stages):
    """Pick a shape and see the stages again: live, the session's form (any shape, profiled on
    click); in replay, the shapes recorded for every one of them, each table computed from the
    session's profiles (`widgets.shape_explorer`, handed them)."""
    if session.live:
        return session.shape_form(stages)
    from .views import widgets
    return widgets.shape_explorer(session.grid(stages, session.common_shapes(stages)))


def __getattr__(name: str):
    if name in MODULES:
        module = importlib.import_module(MODULES[name])
        globals()[name] = module
        return module
    if name in FUNCTIONS:
        function = getattr(importlib.import_module(FUNCTIONS[name]), name)
        globals()[name] = function
        return function
    raise AttributeError(f"module 'helpers' has no attribute {name!r}")


__all__ = ["Session", "ReplaySet", "ARTICLE_STAGES", "DEFAULT_SHAPE", "MODES", "STAGES", "Decision", "Profile", "Provenance", "Shape", "Stage",
           "closing_stages", "decide", "shape_explorer",
           "StageUnavailable", "TraceError", "cuda_available", "get_stage", "load_trace",
           "profile_code", "profile_stage", "use_book_style", "profile_training", "profile_trainings",
           "memory_recording", "snapshots", "inplace_here", "training_counters", "profile_stages", "recorded_shapes", "resolve_mode", "stages_where", *MODULES]
