"""Profiling helpers shared by every notebook of *Attention, Profiled*: the public API.

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

from .sources.anytrace import load_trace
from .sources.modes import MODES, cuda_available, profile_stage, profile_stages, resolve_mode
from .core.profile import Profile, Provenance, TraceError
from .sources.replay import recorded_shapes
from .core.stages import (ARTICLE_STAGES, DEFAULT_SHAPE, STAGES, Shape, Stage, StageUnavailable,
                               get_stage)

# the namespaces notebooks call into, as `tables.kernel_table(prof)`: name -> module
MODULES = {
    "tables": "helpers.views.tables",
    "charts": "helpers.views.charts",
    "widgets": "helpers.views.widgets",
    "guesses": "helpers.views.guesses",
    "claims": "helpers.chapters.claims",
    "prose": "helpers.views.prose",
    "hub": "helpers.chapters.hub_flash",
    "compiled": "helpers.chapters.compiled",
    "flex": "helpers.chapters.flex",
    "questions": "helpers.views.questions",
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
}
# functions that load on first use: profile_code imports torch, `import helpers` does not
FUNCTIONS = {"profile_code": "helpers.sources.own_code", "use_book_style": "helpers.views.style"}


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


__all__ = ["ARTICLE_STAGES", "DEFAULT_SHAPE", "MODES", "STAGES", "Profile", "Provenance", "Shape", "Stage",
           "StageUnavailable", "TraceError", "cuda_available", "get_stage", "load_trace",
           "profile_code", "profile_stage", "use_book_style", "profile_stages", "recorded_shapes", "resolve_mode", *MODULES]
