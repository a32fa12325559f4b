"""Profiling helpers shared by every notebook of *Attention, Profiled*: the public API.

    from helpers import profile_stage
    prof = profile_stage("naive")        # live on a GPU, else the recorded trace
    prof.kernels()                       # one forward's GPU events, names decoded

    from helpers import profile_code, load_trace
    prof = profile_code(model, x, annotation="my_model", no_grad=True)   # any callable, live
    prof = load_trace("trace.json.gz")   # any trace torch.profiler wrote, the same Profile

Three layers, each a subpackage; a lower one never imports a higher one (tests/test_layers.py):

    profiling/   the spine: stage registry → capture (live) or replay (recorded) → Profile → tables
    pages/       what the pages show: kernel tables, charts, guesses, verdicts, widgets, glue
    occupancy/   the occupancy calculator and what is built on it

This module is the top: it names what a notebook uses. The page modules load on first use, so
`import helpers` stays light (no plotly, no widgets) for scripts and tests.
"""
from __future__ import annotations

import importlib

from .profiling.anytrace import load_trace
from . import pages as _pages  # noqa: F401  (in a notebook: the book's table renderer, pages.render)
from .profiling.modes import MODES, cuda_available, profile_stage, profile_stages, resolve_mode
from .profiling.profile import Profile, Provenance, TraceError
from .profiling.replay import recorded_shapes
from .profiling.stages import (ARTICLE_STAGES, DEFAULT_SHAPE, STAGES, Shape, Stage, StageUnavailable,
                               get_stage)

# the namespaces notebooks call into, as `tables.kernel_table(prof)`: name -> module
MODULES = {
    "tables": "helpers.pages.tables",
    "charts": "helpers.pages.charts",
    "widgets": "helpers.pages.widgets",
    "claims": "helpers.pages.claims",
    "prose": "helpers.pages.prose",
    "hub": "helpers.pages.hub_flash",
    "compiled": "helpers.pages.compiled",
    "flex": "helpers.pages.flex",
    "guess": "helpers.views.guess",
    "counters": "helpers.pages.counters",
    "roofline": "helpers.pages.roofline",
    "perfetto": "helpers.pages.perfetto",
    "render": "helpers.pages.render",
    "occupancy_charts": "helpers.occupancy.charts",
    "occupancy_lessons": "helpers.occupancy.lessons",
    "occupancy_calculator": "helpers.occupancy.browser",
    "occupancy_truth": "helpers.occupancy.truth",
    "breakdown": "helpers.pages.breakdown",
    "own_model": "helpers.pages.own_model",
}
# functions that load on first use: profile_code imports torch, `import helpers` does not
FUNCTIONS = {"profile_code": "helpers.profiling.own_code"}


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
           "profile_code", "profile_stage", "profile_stages", "recorded_shapes", "resolve_mode", *MODULES]
