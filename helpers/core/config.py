"""Every setting the package reads from the environment, and where every recording lives.

    ATTN_PROFILED_MODE         "auto" (default), "live" or "replay": how a notebook gets its data
    ATTN_PROFILED_REPLAY_GPU   which GPU's replay set to read (default "h200"): the traces, the
                               Nsight Compute counters, the ceilings, the "Your own model" traces
                               and the shared-memory experiment all switch together
    ATTN_PROFILED_CACHE        where live measurements are cached, one folder per GPU and torch
                               (default: <tmp>/attention_profiled); ATTN_PROFILED_NCU_CACHE, its
                               former name, still works
    LOCAL_KERNELS              the Hub kernels' local override (read by `kernels`; part of the
                               hub kernel's cache key here)

Every recording path goes through `recording_path(kind, name, gpu)`. Nothing else in helpers
reads os.environ (tests/test_layers.py checks it)."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]   # the repository
REPLAY_DIR = ROOT / "notebooks" / "traces"   # <gpu>/ is one GPU's replay set
DEFAULT_GPU = "h200"
MODES = ("auto", "live", "replay")

# what each kind of recording is, under REPLAY_DIR/<gpu>/: (folder, suffix)
KINDS = {
    "trace": ("", ".json.gz"),           # a stage's profiler trace: <stage>__<shape>.json.gz
    "ncu": ("ncu", ""),                  # Nsight Compute: <name>.csv, .ncu-rep, provenance.json
    "ceilings": ("", ".json"),           # the GPU's measured ceilings: ceilings.json
    "own_model": ("own_model", ".json.gz"),
    "experiment": ("experiments", ".json.gz"),   # the shared-memory cliff: smem_cliff.json.gz
}


def mode_setting() -> str:
    """ATTN_PROFILED_MODE as set (default "auto"), not yet checked."""
    return os.environ.get("ATTN_PROFILED_MODE", "auto")


def replay_gpu(gpu: str | None = None) -> str:
    """The GPU whose replay set is read: `gpu` if given, else ATTN_PROFILED_REPLAY_GPU, else h200."""
    return gpu or os.environ.get("ATTN_PROFILED_REPLAY_GPU") or DEFAULT_GPU


def recording_dir(kind: str, gpu: str | None = None) -> Path:
    folder, _ = KINDS[kind]
    base = REPLAY_DIR / replay_gpu(gpu)
    return base / folder if folder else base


def recording_path(kind: str, name: str, gpu: str | None = None) -> Path:
    """Where the recording `name` of `kind` (see KINDS) lives for `gpu` (the replay GPU by default).

    A name that already ends in a suffix (`provenance.json` in ncu/) is taken as it is."""
    _, suffix = KINDS[kind]
    if suffix and not name.endswith(suffix):
        name += suffix
    return recording_dir(kind, gpu) / name


def cache_root() -> Path:
    """Where live measurements are cached across notebooks of a session (one folder per GPU and
    torch below it)."""
    root = os.environ.get("ATTN_PROFILED_CACHE") or os.environ.get("ATTN_PROFILED_NCU_CACHE")
    return Path(root) if root else Path(tempfile.gettempdir()) / "attention_profiled"


def local_kernels() -> str | None:
    return os.environ.get("LOCAL_KERNELS")


def subprocess_env() -> dict:
    """The environment for a child Python process that imports this package (ncu's profiled
    process): this one's, with the repository first on PYTHONPATH."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env
