"""The "Your own model" chapter's experiments, as facts: what each one runs (its code as the reader
reads it), at which batch and seq, and what changed against the one before. Building and running
them is acquisition (helpers/own_model/sources.py); the chapter's pages read these."""
from __future__ import annotations

from dataclasses import dataclass

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


EXPERIMENTS = {e.name: e for e in [
    Experiment("encoder_forward", "A forward pass",
               f"layer = {LAYER}.eval()\nx = torch.randn(32, 256, {D_MODEL}, device='cuda', dtype=torch.bfloat16)\n"
               "with torch.no_grad():\n    layer(x)",
               "the base: eval, no_grad, so torch takes its fused fast path", 32, 256, False),
    Experiment("encoder_forward_slow", "The same forward, fast path off",
               "torch.backends.mha.set_fastpath_enabled(False)  # the one line changed\n"
               "with torch.no_grad():\n    layer(x)",
               "torch.backends.mha.set_fastpath_enabled(False): the layer runs its Python forward, op by op",
               32, 256, False, fast_path=False),
    Experiment("encoder_train_step", "A training step",
               f"layer = {LAYER}.train()\nopt = torch.optim.AdamW(layer.parameters(), lr=1e-4)\n"
               f"x = torch.randn(4, 128, {D_MODEL}, device='cuda', dtype=torch.bfloat16)\n"
               "loss = layer(x).float().pow(2).mean()\nloss.backward()\nopt.step()\nopt.zero_grad(set_to_none=True)",
               "training: forward, backward and an AdamW step, at a small batch (4 × 128 tokens)",
               4, 128, True),
    Experiment("encoder_train_step_big", "The same training step, a bigger batch",
               f"x = torch.randn(64, 512, {D_MODEL}, device='cuda', dtype=torch.bfloat16)  # the one line changed",
               "64 × 512 tokens instead of 4 × 128: the same code, 64 times the tokens",
               64, 512, True),
    Experiment("hf_gpt2_forward", "Hugging Face's GPT-2, a forward pass",
               "from transformers import GPT2Config, GPT2Model\n"
               "model = GPT2Model(GPT2Config()).to('cuda', torch.bfloat16).eval()  # random init, nothing downloaded\n"
               "ids = torch.randint(0, 50257, (8, 256), device='cuda')\nwith torch.no_grad():\n    model(input_ids=ids)",
               "a model from another library: 12 GPT-2 blocks, 8 × 256 tokens", 8, 256, False,
               needs="transformers"),
]}


def get_experiment(name: str) -> Experiment:
    if name not in EXPERIMENTS:
        raise ValueError(f"Unknown experiment {name!r}; the chapter's are: {', '.join(EXPERIMENTS)}")
    return EXPERIMENTS[name]
