"""The replay set's GPU, named in the book's prose by the configured set itself.

Pages say where their replayed traces come from in their first output line; the prose of the
Markdown pages (the introduction, the kernel names) names the GPU too. Typed there, it stayed
"H200" when another GPU's set was selected (ATTN_PROFILED_REPLAY_GPU, the README's GPU recipe).
Here it is a MyST substitution, ``{{ replay_gpu }}``, filled at ``config-inited`` from the
configured replay set's own provenance (helpers.core.replay_set.ReplaySet.identity):
"NVIDIA H200", or "SYNTHETIC copy of NVIDIA H200" for a test's copy. ``replay_product`` is the
product ("H200").
"""
from __future__ import annotations

import sys
from pathlib import Path


def fill(app, config) -> None:
    root = str(Path(app.srcdir).resolve())
    if root not in sys.path:  # this checkout's helpers, as the notebooks import them
        sys.path.insert(0, root)
    from helpers.core.replay_set import ReplaySet

    identity = ReplaySet.configured().identity
    subs = dict(config.myst_substitutions or {})
    subs.update(replay_gpu=identity.device_name, replay_product=identity.product)
    config.myst_substitutions = subs


def setup(app):
    app.connect("config-inited", fill)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
