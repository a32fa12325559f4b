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

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .anytrace import load_trace
from ..core.errors import StageUnavailable, TraceError
from .modes import cuda_available, resolve_mode
from ..core.profile import Profile
from ..core import config

D_MODEL, HEADS, FF = 512, 8, 2048
LAYER = (f"torch.nn.TransformerEncoderLayer({D_MODEL}, {HEADS}, {FF}, batch_first=True, "
         f"device='cuda', dtype=torch.bfloat16)")


@dataclass(frozen=True)
class Experiment:
    name: str             # the record_function annotation, and the recording's file name
    title: str
    code: str             # what one step runs, as the reader reads it
    what_changed: str     # against the experiment it is compared with
    batch: int
    seq: int
    train: bool
    fast_path: bool = True
    needs: str | None = None      # an optional package the live run needs ("transformers")
    guess_events: int = 0         # the guess from reading the code: GPU events per step...
    guess_bound: str = "GPU"      # ...and what bounds the step, "CPU" or "GPU"
    guess_reason: str = ""


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


EXPERIMENTS = {e.name: e for e in [
    Experiment("encoder_forward", "A forward pass",
               f"layer = {LAYER}.eval()\nx = torch.randn(32, 256, {D_MODEL}, device='cuda', dtype=torch.bfloat16)\n"
               "with torch.no_grad():\n    layer(x)",
               "the base: eval, no_grad, so torch takes its fused fast path", 32, 256, False,
               guess_events=10, guess_bound="GPU",
               guess_reason="one kernel per line of the layer's forward: the attention's input projection, "
                            "attention, output projection, residual add, layer norm, the two linears and "
                            "the activation between them, a second residual add and layer norm; 8,192 "
                            "tokens of 512 features keep the GPU busy"),
    Experiment("encoder_forward_slow", "The same forward, fast path off",
               "torch.backends.mha.set_fastpath_enabled(False)  # the one line changed\n"
               "with torch.no_grad():\n    layer(x)",
               "torch.backends.mha.set_fastpath_enabled(False): the layer runs its Python forward, op by op",
               32, 256, False, fast_path=False, guess_events=10, guess_bound="GPU",
               guess_reason="the same math, so the same kernels; a fused path saves CPU time, not GPU work"),
    Experiment("encoder_train_step", "A training step",
               f"layer = {LAYER}.train()\nopt = torch.optim.AdamW(layer.parameters(), lr=1e-4)\n"
               f"x = torch.randn(4, 128, {D_MODEL}, device='cuda', dtype=torch.bfloat16)\n"
               "loss = layer(x).float().pow(2).mean()\nloss.backward()\nopt.step()\nopt.zero_grad(set_to_none=True)",
               "training: forward, backward and an AdamW step, at a small batch (4 × 128 tokens)",
               4, 128, True, guess_events=40, guess_bound="GPU",
               guess_reason="backward costs about twice the forward, so three times the forward's kernels, "
                            "plus the loss and a few for the optimizer; a GPU does training, so it is the "
                            "bottleneck"),
    Experiment("encoder_train_step_big", "The same training step, a bigger batch",
               f"x = torch.randn(64, 512, {D_MODEL}, device='cuda', dtype=torch.bfloat16)  # the one line changed",
               "64 × 512 tokens instead of 4 × 128: 64 times the work per kernel, the same kernels",
               64, 512, True, guess_events=40, guess_bound="GPU",
               guess_reason="the same code launches the same kernels; each has 64 times the work"),
    Experiment("hf_gpt2_forward", "Hugging Face's GPT-2, a forward pass",
               "from transformers import GPT2Config, GPT2Model\n"
               "model = GPT2Model(GPT2Config()).to('cuda', torch.bfloat16).eval()  # random init, nothing downloaded\n"
               "ids = torch.randint(0, 50257, (8, 256), device='cuda')\nwith torch.no_grad():\n    model(input_ids=ids)",
               "a model from another library: 12 GPT-2 blocks, 8 × 256 tokens", 8, 256, False,
               needs="transformers", guess_events=120, guess_bound="GPU",
               guess_reason="twelve blocks of about ten kernels each"),
]}


def get_experiment(name: str) -> Experiment:
    if name not in EXPERIMENTS:
        raise ValueError(f"Unknown experiment {name!r}; the chapter's are: {', '.join(EXPERIMENTS)}")
    return EXPERIMENTS[name]


def make_step(name: str) -> Callable[[], None]:
    """Build the experiment's model and inputs on CUDA; return the callable one step runs."""
    e = get_experiment(name)
    if e.needs and importlib.util.find_spec(e.needs) is None:
        raise StageUnavailable(f"{name} needs {e.needs}, which is not installed here "
                               f"(pip install {e.needs}); the book does not require it.")
    if name == "hf_gpt2_forward":
        return _gpt2_step(e.batch, e.seq)
    return _encoder_step(e.batch, e.seq, e.train, e.fast_path)


def recording(name: str, gpu: str | None = None) -> Path:
    return config.recording_path("own_model", name, gpu)


def profile_experiment(name: str, mode: str = "auto", quiet: bool = False) -> Profile:
    """One experiment's Profile: profiled live where CUDA is present (profile_code), its
    recording otherwise (load_trace); one line says which. In "auto" mode an experiment that
    cannot run here (transformers missing) is replayed instead, with the reason."""
    e = get_experiment(name)
    if resolve_mode(mode) == "live":
        try:
            step = make_step(name)
        except StageUnavailable as err:
            if mode == "live":
                raise
            if not quiet:
                print(f"{err} Showing the recorded trace instead.")
        else:
            from .own_code import profile_code  # torch.profiler: only where it runs live
            return profile_code(step, annotation=e.name, quiet=quiet)
    path = recording(name)
    if not path.exists():
        raise TraceError(f"No recording of {name} at {path}. Record it on a GPU with "
                         f"`python tools/record_own_model.py`"
                         + ("" if cuda_available() else ", or run this notebook on a CUDA GPU") + ".")
    prof = load_trace(path, annotation=e.name, name=e.name, quiet=True)
    if not quiet:
        print(prof.banner().replace("Loaded", "Replaying", 1))
    return prof


def available(name: str) -> bool:
    """Whether the experiment has a Profile to show here: a recording, or live with what it needs."""
    e = get_experiment(name)
    if recording(name).exists():
        return True
    return cuda_available() and (e.needs is None or importlib.util.find_spec(e.needs) is not None)
