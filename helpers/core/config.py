"""Every setting the package reads from the environment, and where every recording lives.

    ATTN_PROFILED_MODE         "auto" (default), "live" or "replay": how a notebook gets its data
    ATTN_PROFILED_REPLAY_GPU   which GPU's replay set to read (default "h200"): the traces, the
                               Nsight Compute counters, the ceilings, the "Your own model" traces,
                               the shared-memory experiment and the training chapter all switch
                               together (helpers.core.replay_set.ReplaySet)
    ATTN_PROFILED_REPLAY_DIR   the folder holding the replay sets, one per GPU (default
                               notebooks/traces of the repository, else the copy an installed
                               wheel carries, helpers/replay_sets: a notebook opened alone, as
                               Colab opens it; a test points it at a temporary copy)
    ATTN_PROFILED_CACHE        where live measurements are cached, one folder per GPU and torch
                               (default: <tmp>/attention_profiled); ATTN_PROFILED_NCU_CACHE, its
                               former name, still works
    LOCAL_KERNELS              the Hub kernels' local override (read by `kernels`; part of the
                               hub kernel's cache key here)
    TORCHINDUCTOR_CACHE_DIR,   PyTorch's compile caches: a timed compile points them at an empty
    TRITON_CACHE_DIR           folder for its length (`environment`, used by
                               helpers.sources.capture.cold_compile_caches)

Every recording path goes through `ReplaySet(gpu)` (helpers/core/replay_set.py). Nothing else in
helpers reads os.environ (tests/test_layers.py checks it)."""
from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[2]   # the repository (installed from a wheel: site-packages' parent)
REPOSITORY_REPLAY_DIR = ROOT / "notebooks" / "traces"   # <gpu>/ is one GPU's replay set
PACKAGED_REPLAY_DIR = Path(__file__).resolve().parents[1] / "replay_sets"   # the wheel's copy (setup.py)


def default_replay_dir(repository: Path = REPOSITORY_REPLAY_DIR, packaged: Path = PACKAGED_REPLAY_DIR) -> Path:
    """The repository's notebooks/traces where it is there (a checkout: the book's build, a Space,
    an editable install), else the copy of it the installed package carries (Colab)."""
    return repository if repository.is_dir() or not packaged.is_dir() else packaged


REPLAY_DIR = default_replay_dir()
DEFAULT_GPU = "h200"
MODES = ("auto", "live", "replay")


def mode_setting() -> str:
    """ATTN_PROFILED_MODE as set (default "auto"), not yet checked."""
    return os.environ.get("ATTN_PROFILED_MODE", "auto")


def replay_gpu(gpu: str | None = None) -> str:
    """The GPU whose replay set is read: `gpu` if given, else ATTN_PROFILED_REPLAY_GPU, else h200."""
    return gpu or os.environ.get("ATTN_PROFILED_REPLAY_GPU") or DEFAULT_GPU


def replay_root() -> Path:
    """The folder of the replay sets, one per GPU: ATTN_PROFILED_REPLAY_DIR, else notebooks/traces
    (the packaged copy where the package was installed without the repository)."""
    root = os.environ.get("ATTN_PROFILED_REPLAY_DIR")
    return Path(root) if root else REPLAY_DIR


def cache_root() -> Path:
    """Where live measurements are cached across notebooks of a session (one folder per GPU and
    torch below it)."""
    root = os.environ.get("ATTN_PROFILED_CACHE") or os.environ.get("ATTN_PROFILED_NCU_CACHE")
    return Path(root) if root else Path(tempfile.gettempdir()) / "attention_profiled"


def cache_dir(gpu: str, torch_version: str) -> Path:
    """The one cache of live measurements for this GPU and torch, shared by every notebook of a
    session (ncu's counters, the ceilings, the roofline's timed forwards): chapter 09 reuses what
    05 and 07 measured."""
    import re
    return cache_root() / re.sub(r"[^a-z0-9.]+", "-", f"{gpu} torch {torch_version}".lower()).strip("-")


def local_kernels() -> str | None:
    return os.environ.get("LOCAL_KERNELS")


def subprocess_env() -> dict:
    """The environment for a child Python process that imports this package (ncu's profiled
    process): this one's, with the repository first on PYTHONPATH."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


@contextmanager
def environment(**values: str | None) -> Iterator[None]:
    """These environment variables set (None: unset) for the length of the block, then as they were:
    how a compile is pointed at other cache folders (capture.cold_compile_caches)."""
    saved = {key: os.environ.get(key) for key in values}

    def put(settings: dict) -> None:
        for key, value in settings.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    put(values)
    try:
        yield
    finally:
        put(saved)
