"""The "Your own model" chapter's experiments: code nobody here wrote, through the book's lens.

Each experiment builds a model and its inputs on CUDA and returns the callable that one step
runs: `torch.nn.TransformerEncoderLayer` (d_model 512, 8 heads, ff 2048, batch_first, bf16) in a
forward and a training step, each with one line changed; and, where `transformers` imports,
Hugging Face's GPT-2 from a default config (random init, nothing downloaded).
`profile_experiment` profiles one live with `profile_code` where CUDA is present, and otherwise
loads its recording (notebooks/traces/<gpu>/own_model/<name>.json.gz) with `load_trace`: the
same Profile either way. tools/record_own_model.py records them from these definitions.
"""
from __future__ import annotations

import functools
import importlib
import importlib.util
from pathlib import Path
from typing import Callable

from ..sources.anytrace import load_trace
from ..core.errors import StageUnavailable, TraceError
from ..sources.modes import cuda_available, fetch
from ..core.profile import Profile
from ..core import replay_set
# the experiments themselves are facts, in core; tools/record_own_model.py reads them from here too
from .core import D_MODEL, EXPERIMENTS, FF, HEADS, LAYER, get_experiment  # noqa: F401

def _encoder_step(batch: int, seq: int, train: bool, fast_path: bool) -> Callable[[], None]:
    import torch
    layer = torch.nn.TransformerEncoderLayer(D_MODEL, HEADS, FF, batch_first=True, device="cuda",
                                             dtype=torch.bfloat16)
    x = torch.randn(batch, seq, D_MODEL, device="cuda", dtype=torch.bfloat16)
    if train:
        layer.train()
        opt = torch.optim.AdamW(layer.parameters(), lr=1e-4)

        def step() -> None:
            loss = layer(x).float().pow(2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        return step
    layer.eval()

    def forward() -> None:
        # the one line that differs: torch's fused inference path for the layer, on or off
        torch.backends.mha.set_fastpath_enabled(fast_path)
        try:
            with torch.no_grad():
                layer(x)
        finally:
            torch.backends.mha.set_fastpath_enabled(True)
    return forward


def _gpt2_step(batch: int, seq: int) -> Callable[[], None]:
    import torch
    from transformers import GPT2Config, GPT2Model
    config = GPT2Config()
    model = GPT2Model(config).to("cuda", torch.bfloat16).eval()
    ids = torch.randint(0, config.vocab_size, (batch, seq), device="cuda")

    def forward() -> None:
        with torch.no_grad():
            model(input_ids=ids)
    return forward




@functools.lru_cache(maxsize=None)
def import_problem(package: str) -> str | None:
    """Why `package` can't be used here, in the reader's words, or None where it imports. Being
    installed is not enough: transformers, say, refuses to import beside a huggingface_hub it
    does not support, which a `pip install kernels` can bring."""
    if importlib.util.find_spec(package) is None:
        return f"{package} is not installed here (pip install {package})"
    try:
        importlib.import_module(package)
    except Exception as err:  # noqa: BLE001 - any failure to import is the reason, told once
        said = (str(err).strip().splitlines() or [type(err).__name__])[0]
        return f"{package} is installed here but does not import ({type(err).__name__}: {said})"
    return None


def make_step(name: str) -> Callable[[], None]:
    """Build the experiment's model and inputs on CUDA; return the callable one step runs."""
    e = get_experiment(name)
    problem = import_problem(e.needs) if e.needs else None
    if problem:
        raise StageUnavailable(f"{name} needs {e.needs}: {problem}; the book does not require it.")
    if name == "hf_gpt2_forward":
        return _gpt2_step(e.batch, e.seq)
    return _encoder_step(e.batch, e.seq, e.train, e.fast_path)


def recording(name: str, gpu: str | None = None) -> Path:
    return replay_set.recording_path("own_model", name, gpu)


def profile_experiment(name: str, mode: str = "auto", quiet: bool = False, gpu: str | None = None,
                       fresh: bool = False) -> Profile:
    """One experiment's Profile: profiled live where CUDA is present (profile_code), its
    recording otherwise (load_trace); one line says which. In "auto" mode an experiment that
    cannot run here (transformers missing) is replayed instead, with the reason (modes.fetch).
    `gpu`: that GPU's recording. Live, it is profiled once a session (kept in the session's
    cache, helpers.sources.live_cache) and reused; `fresh=True` profiles it again."""
    e = get_experiment(name)

    def live() -> Profile:
        from ..sources import live_cache

        def measure() -> Profile:
            step = make_step(name)
            from ..sources.own_code import profile_code  # torch.profiler: only where it runs live
            return profile_code(step, annotation=e.name, quiet=True)
        prof = live_cache.profile("own_model", name, measure, fresh=fresh)
        if not quiet:
            print(prof.banner())
        return prof
    return fetch("trace", "replay" if gpu else mode, live, lambda: _recorded(name, e, quiet, gpu), quiet=quiet)


def _recorded(name: str, e, quiet: bool, gpu: str | None) -> Profile:
    path = recording(name, gpu)
    if not path.exists():
        raise TraceError(f"No recording of {name} at {path}. Record it on a GPU with "
                         f"`python tools/record_own_model.py`"
                         + ("" if cuda_available() else ", or run this notebook on a CUDA GPU") + ".")
    prof = load_trace(path, annotation=e.name, name=e.name, quiet=True)
    if not quiet:
        print(prof.banner().replace("Loaded", "Replaying", 1))
    return prof


def available(name: str, gpu: str | None = None) -> bool:
    """Whether the experiment has a Profile to show here: a recording, or live with what it needs."""
    e = get_experiment(name)
    if recording(name, gpu).exists():
        return True
    return cuda_available() and (e.needs is None or import_problem(e.needs) is None)


def profile(name: str, mode: str = "auto", gpu: str | None = None, fresh: bool = False) -> Profile | None:
    """The experiment's Profile (live or replayed, with its banner); None, with the reason, where
    it has none here (the Hugging Face model, without transformers and without a recording)."""
    if not available(name, gpu):
        e = get_experiment(name)
        why = (import_problem(e.needs) if e.needs and cuda_available() else None) or "no CUDA GPU"
        print(f"{e.title} ({name}): no recording here, and it cannot run live ({why}).")
        return None
    return profile_experiment(name, mode, gpu=gpu, fresh=fresh)
