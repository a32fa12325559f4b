"""`ReplaySet(gpu)`: the recordings of one GPU, in one place.

A replay set is a folder, ``notebooks/traces/<gpu>/``, named by the GPU's slug (`gpu_slug`:
"NVIDIA H200" -> "h200"). It owns:

- where every kind of recording lives under it (`KINDS`: the stages' traces, Nsight Compute's
  counters, the ceilings, the "Your own model" traces, the shared-memory experiment, the training
  chapter) and the ``<stage>__<shape>`` file naming (`trace`, `path`);
- the shapes recorded per stage (`shapes`, `ncu_shapes`) and every recorded trace (`traces`);
- the GPU's identity (`identity`): its slug, the device name the driver gave while recording
  and the product ("H200"), read from the recordings' own provenance, so a GPU has one spelling.

Which set a page reads is configuration (`config.replay_gpu`: ATTN_PROFILED_REPLAY_GPU, default
h200); `ReplaySet.configured()` is that set. Adding a GPU's set is a recording command, no code:
`python tools/record.py` writes ``notebooks/traces/<gpu_slug(device)>/``."""
from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from . import config
from .stages import DEFAULT_SHAPE, STAGES, Shape

# what each kind of recording is, under <root>/<gpu>/: (folder, suffix)
KINDS = {
    "trace": ("", ".json.gz"),           # a stage's profiler trace: <stage>__<shape>.json.gz
    "ncu": ("ncu", ""),                  # Nsight Compute: <name>.csv, .ncu-rep, provenance.json
    "ceilings": ("", ".json"),           # the GPU's measured ceilings: ceilings.json
    "timers": ("", ".json"),             # the caller's loop, do_bench and busy time per call: timers.json
    "own_model": ("own_model", ".json.gz"),
    "experiment": ("experiments", ".json.gz"),   # the shared-memory cliff: smem_cliff.json.gz
    "training": ("training", ""),        # training steps, memory.json, snapshots, ncu/ (names with suffix)
    "hopper": ("hopper", ""),            # per-kernel SASS opcode counts and listings (tools/record_hopper.py)
    "decode": ("decode", ""),            # decode.json, traces/, ncu/: one query against a KV cache (record_decode.py)
}


def gpu_slug(device_name: str) -> str:
    """A replay set's folder name for a GPU: 'NVIDIA H200' -> 'h200', 'Tesla T4' -> 't4'."""
    name = re.sub(r"^(nvidia|tesla)\s+", "", device_name.lower())
    return re.sub(r"[^a-z0-9]+", "-", name).strip("-")


def product_name(device_name: str) -> str:
    """The product a device name spells, as the occupancy tables key it: 'NVIDIA H200' -> 'H200'."""
    return re.sub(r"^(nvidia|tesla)\s+", "", device_name.strip(), flags=re.I)


def recording_key(stage: str, shape: Shape = DEFAULT_SHAPE) -> str:
    """The file name of a stage's recording at a shape, without its suffix: '<stage>__<shape>'."""
    return f"{stage}__{shape.key}"


def split_key(name: str) -> tuple[str, Shape]:
    """'<stage>__<shape>[.suffix]' -> (stage, Shape): the inverse of `recording_key`."""
    stem = name.split(".", 1)[0] if "." in name else name
    stage, key = stem.split("__", 1)
    return stage, Shape.from_key(key)


@dataclass(frozen=True)
class Identity:
    """One GPU, spelled three ways from one source: the folder, the driver, the product."""

    slug: str           # the replay set's folder: "h200"
    device_name: str    # torch.cuda.get_device_name while recording: "NVIDIA H200"
    product: str        # the occupancy tables' key: "H200"
    synthetic: bool = False   # a test's copy of another GPU's set, never a real measurement


@dataclass(frozen=True)
class ReplaySet:
    """The recordings of one GPU (its slug names the folder), under `root` (default: the
    configured folder of replay sets, notebooks/traces)."""

    gpu: str
    root: Path | None = None

    @classmethod
    def configured(cls, gpu: str | None = None) -> "ReplaySet":
        """`gpu`'s set, else the configured one (ATTN_PROFILED_REPLAY_GPU, default h200)."""
        return cls(config.replay_gpu(gpu))

    @classmethod
    def of_device(cls, device_name: str, root: Path | None = None) -> "ReplaySet":
        """The set a GPU with this driver name records into (the recording tools' target)."""
        return cls(gpu_slug(device_name), root)

    # where things live
    @property
    def folder(self) -> Path:
        return Path(self.root or config.replay_root()) / self.gpu

    def exists(self) -> bool:
        return self.folder.is_dir()

    def dir(self, kind: str) -> Path:
        """The folder holding recordings of `kind` (see KINDS)."""
        sub, _ = KINDS[kind]
        return self.folder / sub if sub else self.folder

    def path(self, kind: str, name: str) -> Path:
        """Where the recording `name` of `kind` lives. A name that already ends in the kind's
        suffix (`provenance.json` in ncu/) is taken as it is."""
        _, suffix = KINDS[kind]
        if suffix and not name.endswith(suffix):
            name += suffix
        return self.dir(kind) / name

    def trace(self, stage: str, shape: Shape = DEFAULT_SHAPE) -> Path:
        """A stage's recorded forward at a shape: <gpu>/<stage>__<shape>.json.gz."""
        return self.path("trace", recording_key(stage, shape))

    def ncu_table(self, name: str) -> Path:
        """Nsight Compute's raw CSV of a recorded forward or calibration: ncu/<name>.csv."""
        return self.path("ncu", f"{name}.csv")

    def ncu_report(self, stage: str, shape: Shape = DEFAULT_SHAPE) -> Path | None:
        """The `.ncu-rep` report of a stage's forward, where one was small enough to keep."""
        path = self.path("ncu", f"{recording_key(stage, shape)}.ncu-rep")
        return path if path.is_file() else None

    # what was recorded
    def traces(self) -> list[tuple[str, Shape, Path]]:
        """Every recorded stage trace: (stage, shape, path), by file name."""
        out = []
        for path in sorted(self.dir("trace").glob("*__*.json.gz")):
            stage, shape = split_key(path.name)
            out.append((stage, shape, path))
        return out

    def shapes(self, stage: str) -> list[Shape]:
        """The shapes at which `stage`'s forward was recorded."""
        return [shape for name, shape, _ in self.traces() if name == stage]

    def ncu_shapes(self, stage: str) -> list[Shape]:
        """The shapes at which `stage`'s Nsight Compute counters were recorded, by sequence length."""
        shapes = [split_key(p.name)[1] for p in self.dir("ncu").glob(f"{stage}__*.csv")]
        return sorted(shapes, key=lambda s: (s.head_dim, s.seq, s.batch, s.heads))

    def stages(self, shape: Shape = DEFAULT_SHAPE) -> list[str]:
        """The registered stages recorded at `shape`, in the registry's order."""
        return [s for s in STAGES if self.trace(s, shape).is_file()]

    # the GPU
    @cached_property
    def identity(self) -> Identity:
        """The GPU this set was recorded on, from its recordings' provenance (the first stage
        trace, else ncu's provenance.json, else the ceilings); the slug where none says."""
        device = self._recorded_device_name()
        synthetic = bool(device) and device.upper().startswith("SYNTHETIC")
        if not device:
            device = self.gpu
        return Identity(self.gpu, device, product_name(device.split(" of ", 1)[-1] if synthetic else device),
                        synthetic)

    def _recorded_device_name(self) -> str:
        for _, _, path in self.traces()[:1]:
            try:
                with gzip.open(path, "rt") as f:
                    return json.load(f).get("provenance", {}).get("gpu") or ""
            except (OSError, ValueError):
                pass
        for path in (self.path("ncu", "provenance.json"), self.path("ceilings", "ceilings")):
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            prov = data.get("provenance", data)
            name = prov.get("gpu") or prov.get("device") or ""
            if name:
                return name
        return ""

    def __str__(self) -> str:
        return f"the {self.gpu} replay set ({self.folder})"


def recording_path(kind: str, name: str, gpu: str | None = None) -> Path:
    """`ReplaySet.configured(gpu).path(kind, name)`: where a recording lives for `gpu` (the
    configured replay GPU by default)."""
    return ReplaySet.configured(gpu).path(kind, name)


def recording_dir(kind: str, gpu: str | None = None) -> Path:
    """`ReplaySet.configured(gpu).dir(kind)`."""
    return ReplaySet.configured(gpu).dir(kind)
