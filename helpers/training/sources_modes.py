"""The training chapter's live-or-replay decisions: a training step profiled live on a GPU or
its recording; the memory sweep (always the recording: the search takes minutes); the memory
snapshots; the in-place experiment, run here."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import torch

from . import core_backward as bw
from ..core import config, replay_set
from ..core.errors import TraceError
from ..core.profile import Profile
from ..core.stages import DEFAULT_SHAPE, Shape, stages_where
from ..sources import ncu
from ..sources.modes import live_or_recorded, resolve_mode, stages_banner
from .sources_step import SNAPSHOT_SHAPE, TRAINING_STAGES, inplace_under_autograd, memory_snapshot

RECORD_COMMAND = bw.RECORD_COMMAND


# --- the recordings ---------------------------------------------------------------------------------

def trace_path(stage: str, shape: Shape = DEFAULT_SHAPE, gpu: str | None = None) -> Path:
    return replay_set.recording_path("training", f"{stage}__{shape.key}.json.gz", gpu)


def load_step(stage: str, shape: Shape = DEFAULT_SHAPE, gpu: str | None = None) -> Profile:
    path = trace_path(stage, shape, gpu)
    if not path.exists():
        raise TraceError(f"No recorded training step of {stage} at {shape.key} ({path}). Record it on a "
                         f"GPU with `{RECORD_COMMAND} --stages {stage}`, or restore the replay set with "
                         f"`git checkout -- notebooks/traces`.")
    return Profile.load(path)


def load_memory(gpu: str | None = None) -> dict:
    path = replay_set.recording_path("training", "memory.json", gpu)
    if not path.exists():
        raise TraceError(f"No recorded memory sweep at {path}. Record it on a GPU with `{RECORD_COMMAND}`.")
    return json.loads(path.read_text())


def snapshot_path(stage: str, gpu: str | None = None) -> Path:
    found = sorted(replay_set.recording_dir("training", gpu).glob(f"snapshot__{stage}__*.pickle.gz"))
    if not found:
        raise TraceError(f"No recorded memory snapshot of {stage} under {replay_set.recording_dir('training', gpu)}. "
                         f"Record it on a GPU with `{RECORD_COMMAND}`.")
    return found[0]


def load_snapshot(stage: str, gpu: str | None = None) -> bytes:
    """The snapshot's pickle as `_dump_snapshot` wrote it (the recording keeps it gzipped), checked
    to be plain data (`backward.read_snapshot`: a snapshot that would run code is refused here,
    before the book reads it or offers it for download)."""
    path = snapshot_path(stage, gpu)
    data = gzip.decompress(path.read_bytes())
    bw.read_snapshot(data, where=f"The memory snapshot {path}")
    return data


def ncu_backward(gpu: str | None = None, shape: Shape = DEFAULT_SHAPE) -> dict:
    """Each stage's backward kernels under ncu, from the one recording of all of them."""
    base = replay_set.recording_path("training", f"ncu/backward__{shape.key}", gpu)
    csv, log = base.with_suffix(".csv"), base.with_suffix(".json")
    if not csv.exists() or not log.exists():
        raise TraceError(f"No Nsight Compute recording of the backwards at {csv}. Record it on a GPU with "
                         f"`{RECORD_COMMAND}`.")
    return bw.split_ncu(ncu.kernels(ncu.read_csv(csv)), json.loads(log.read_text()))


def training_counters(gpu: str | None = None, shape: Shape = DEFAULT_SHAPE) -> dict:
    """What the chapter's roofline needs, from the recordings (an ncu run of every backward takes
    minutes): each stage's backward (tools/record_training.py) and forward (tools/record_ncu.py)
    kernels, the forwards' calibration matmuls with their provenance, the copy roof (the recorded
    ceilings.json) and the ridge: the bf16 calibration matmul's FLOP/s over the copy's bytes/s."""
    backward = ncu_backward(gpu, shape)
    forward = {s: ncu.load(s, shape, gpu) for s in backward}
    prov = ncu.provenance(gpu)
    calibration = {c["name"]: ncu.kernels(ncu.read_csv(ncu.recording_dir(gpu) / f"{c['name']}.csv"))
                   for c in prov.get("calibration", [])}
    from ..sources import ceilings
    roof = ceilings.load(gpu).set_index("ceiling")
    copy = float(roof.loc["device-to-device copy", "value"])
    # the ridge as chapter 9 draws it: the bf16 calibration matmul's TFLOP/s (ncu, the points' timer)
    # over the copy's TB/s (helpers.core.quantities)
    from ..core import quantities as q
    pipes = q.pipe_roofs(calibration, prov.get("calibration", []))
    ridge = q.ridge(pipes.get(q.TENSOR_PIPE, float(roof.loc["bfloat16 matmul", "value"])), copy)
    # the reader's terms: where and when; the maintainers' commands are on the run-it-yourself page
    print(f"Nsight Compute's counters recorded on {prov.get('gpu')} with torch {prov.get('torch')} on "
          f"{str(prov.get('date'))[:10]}: the forwards with chapter 9's recording, the backwards with the "
          "training steps'.")
    return {"backward": backward, "forward": forward, "calibration": calibration, "provenance": prov,
            "gpu": config.replay_gpu(gpu), "ridge": ridge, "copy TB/s": copy}


# --- live or replay -----------------------------------------------------------------------------------


def profile_training(stage: str, shape: Shape = DEFAULT_SHAPE, mode: str = "auto", quiet: bool = False,
                     gpu: str | None = None, fresh: bool = False):
    """One profiled training step of `stage`: live on a GPU (capture(..., step=TRAINING_STEP)), else
    the recorded one; in "auto" mode a stage this GPU can't run is replayed, with the reason.
    `gpu`: that GPU's recording. Live, a step is profiled once a session (kept in the session's
    cache, helpers.sources.live_cache) and reused; `fresh=True` profiles it again."""
    def live() -> Profile:
        from ..sources import live_cache
        from ..sources.capture import capture
        from .sources_step import TRAINING_STEP
        return live_cache.profile("training", f"{stage}__{shape.key}",
                                  lambda: capture(stage, shape, step=TRAINING_STEP), fresh=fresh)
    return live_or_recorded(stage, "replay" if gpu else mode, live, lambda: load_step(stage, shape, gpu),
                            "training step", quiet)


def profile_trainings(stages=TRAINING_STAGES, shape: Shape = DEFAULT_SHAPE, mode: str = "auto",
                      gpu: str | None = None, fresh: bool = False) -> dict:
    """One training step per stage; one line says what was replayed or profiled, where and when
    (as profile_stages does for the forwards), and which were measured earlier and reused."""
    profiles = {s: profile_training(s, shape, mode, quiet=True, gpu=gpu, fresh=fresh) for s in stages}
    print(stages_banner(profiles).replace("Replaying ", "Replaying the training steps of ", 1))
    return profiles


def memory_recording(gpu: str | None = None) -> dict:
    """The recorded seq sweep, largest seq per stage and snapshots' marks (too slow for a page:
    the search runs a stage until the GPU runs out of memory). Prints where it comes from."""
    memory = load_memory(gpu)
    p = memory.get("provenance", {})
    print(f"The memory sweep recorded on {p.get('gpu')} (sm {p.get('capability')}, "
          f"{p.get('total_memory_bytes', 0) / 2**30:.0f} GiB) on {str(p.get('date'))[:10]} with torch {p.get('torch')}.")
    return memory


def snapshots(stages=stages_where(snapshot=True), mode: str = "auto", memory: dict | None = None,
              gpu: str | None = None) -> dict:
    """{stage: (snapshot pickle bytes, marks, where)}: taken live on a GPU, else the recordings
    (`gpu`: that GPU's)."""
    out = {}
    live = gpu is None and resolve_mode(mode) == "live"
    for stage in stages:
        if live:
            data, marks = memory_snapshot(stage, SNAPSHOT_SHAPE)
            out[stage] = (data, marks, f"taken just now on {torch.cuda.get_device_name(0)} at {SNAPSHOT_SHAPE.key}")
        else:
            memory = memory or load_memory(gpu)
            marks = memory.get("snapshots", {}).get(stage, {})
            p = memory.get("provenance", {})
            out[stage] = (load_snapshot(stage, gpu), marks,
                          f"recorded on {p.get('gpu')} on {str(p.get('date'))[:10]} at {marks.get('shape', '')}")
    return out


def inplace_here() -> list[dict]:
    """The in-place experiment, run right here: on the GPU where there is one, else on the CPU
    (autograd's rule about saved tensors is the same on every device)."""
    return inplace_under_autograd(device="cuda" if torch.cuda.is_available() else "cpu")
