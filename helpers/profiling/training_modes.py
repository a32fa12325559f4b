"""The training chapter's live-or-replay decisions: a training step profiled live on a GPU or
its recording; the memory sweep (always the recording: the search takes minutes); the memory
snapshots; the in-place experiment, run here."""
from __future__ import annotations

import torch

from .stages import DEFAULT_SHAPE, Shape, get_stage
from .training import SNAPSHOT_SHAPE, TRAINING_STAGES, inplace_under_autograd, memory_snapshot


def profile_training(stage: str, shape: Shape = DEFAULT_SHAPE, mode: str = "auto", quiet: bool = False):
    """One profiled training step of `stage`: live on a GPU (capture(..., training=True)), else
    the recorded one; in "auto" mode a stage this GPU can't run is replayed, with the reason."""
    from . import backward as bw
    from .errors import StageUnavailable
    from .modes import resolve_mode
    get_stage(stage)
    if resolve_mode(mode) == "live":
        from .capture import capture
        try:
            prof = capture(stage, shape, training=True)
        except StageUnavailable as err:
            if mode == "live":
                raise
            print(f"{err} Showing the recorded training step instead.")
            prof = bw.load_step(stage, shape)
    else:
        prof = bw.load_step(stage, shape)
    if not quiet:
        print(prof.banner())
    return prof


def profile_trainings(stages=TRAINING_STAGES, shape: Shape = DEFAULT_SHAPE, mode: str = "auto") -> dict:
    return {s: profile_training(s, shape, mode) for s in stages}


def memory_recording(gpu: str | None = None) -> dict:
    """The recorded seq sweep, largest seq per stage and snapshots' marks (too slow for a page:
    the search runs a stage until the GPU runs out of memory). Prints where it comes from."""
    from . import backward as bw
    from .replay import DEFAULT_GPU
    memory = bw.load_memory(gpu or DEFAULT_GPU)
    p = memory.get("provenance", {})
    print(f"The memory sweep recorded on {p.get('gpu')} (sm {p.get('capability')}, "
          f"{p.get('total_memory_bytes', 0) / 2**30:.0f} GiB) on {str(p.get('date'))[:10]} with torch {p.get('torch')} "
          f"by `{memory.get('command')}`.")
    return memory


def snapshots(stages=("naive", "sdpa_flash"), mode: str = "auto", memory: dict | None = None) -> dict:
    """{stage: (snapshot pickle bytes, marks, where)}: taken live on a GPU, else the recordings."""
    from . import backward as bw
    from .modes import resolve_mode
    out = {}
    live = resolve_mode(mode) == "live"
    for stage in stages:
        if live:
            data, marks = memory_snapshot(stage, SNAPSHOT_SHAPE)
            out[stage] = (data, marks, f"taken just now on {torch.cuda.get_device_name(0)} at {SNAPSHOT_SHAPE.key}")
        else:
            memory = memory or bw.load_memory()
            marks = memory.get("snapshots", {}).get(stage, {})
            p = memory.get("provenance", {})
            out[stage] = (bw.load_snapshot(stage), marks,
                          f"recorded on {p.get('gpu')} on {str(p.get('date'))[:10]} at {marks.get('shape', '')}")
    return out


def inplace_here() -> list[dict]:
    """The in-place experiment, run right here: on the GPU where there is one, else on the CPU
    (autograd's rule about saved tensors is the same on every device)."""
    return inplace_under_autograd(device="cuda" if torch.cuda.is_available() else "cpu")
