"""The replay set's GPU, named in the book's prose by the configured set itself.

Pages say where their replayed traces come from in their first output line; the prose of the
Markdown pages (the introduction, the kernel names) names the GPU too. Typed there, it stayed
"H200" when another GPU's set was selected (ATTN_PROFILED_REPLAY_GPU, the README's GPU recipe).
Here it is a MyST substitution, ``{{ replay_gpu }}``, filled at ``config-inited`` from the
configured replay set's own provenance (helpers.core.replay_set.ReplaySet.identity):
"NVIDIA H200", or "SYNTHETIC copy of NVIDIA H200" for a test's copy. ``replay_product`` is the
product ("H200"); ``replay_sm``, ``replay_sms`` and ``replay_torch`` its compute capability, SM
count and torch as its recordings say; ``recorded_gpus`` every GPU with a set in the repository.
"""
from __future__ import annotations

import sys
from pathlib import Path


def facts(gpu: str | None = None) -> dict:
    """The substitutions, from the configured replay set's own recordings: its GPU's device name
    and product, its compute capability, SM count and torch (the first stage trace's provenance),
    and every GPU with a recorded set in the repository (synthetic copies left out)."""
    import gzip
    import json

    from helpers.core import config
    from helpers.core.replay_set import ReplaySet

    chosen = ReplaySet.configured(gpu)
    identity = chosen.identity
    prov: dict = {}
    for _, _, path in chosen.traces()[:1]:
        with gzip.open(path, "rt") as f:
            prov = json.load(f).get("provenance", {})
    root = Path(config.replay_root())
    sets = [ReplaySet(p.name) for p in sorted(root.iterdir()) if p.is_dir()] if root.is_dir() else []
    real = [r.identity.device_name for r in sets if r.traces() and not r.identity.synthetic]
    listed = ", ".join(real[:-1]) + f" and {real[-1]}" if len(real) > 1 else "".join(real)
    return {"replay_gpu": identity.device_name, "replay_product": identity.product,
            "replay_sm": str(prov.get("capability") or "unknown"),
            "replay_sms": str(prov.get("sm_count") or "unknown"),
            "replay_torch": str(prov.get("torch") or "unknown"),
            "recorded_gpus": listed or "no GPU yet", "recorded_sets": str(len(real))}


def fill(app, config) -> None:
    root = str(Path(app.srcdir).resolve())
    if root not in sys.path:  # this checkout's helpers, as the notebooks import them
        sys.path.insert(0, root)
    subs = dict(config.myst_substitutions or {})
    subs.update(facts())
    config.myst_substitutions = subs


def setup(app):
    app.connect("config-inited", fill)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
