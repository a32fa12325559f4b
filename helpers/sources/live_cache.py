"""The session's cache of live measurements beyond the stages' forwards (which `capture_cached`
keeps): the training steps, the "Your own model" experiments and the shared-memory experiment.

One folder per GPU and torch (config.cache_dir, under ATTN_PROFILED_CACHE), a sub-folder per kind:

    <cache>/training/<stage>__<shape>.json.gz     a training step (capture(..., step=TRAINING_STEP))
    <cache>/own_model/<name>.json.gz               an experiment (profile_code)
    <cache>/experiments/smem_cliff.json.gz         the shared-memory experiment's events

A page that finds its measurement there shows it (a live Profile whose `reused` is True, its
banner says so) instead of profiling again; `fresh=True` measures again and replaces it. A broken
entry is measured again."""
from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Callable

from ..core import config, trace
from ..core.errors import TraceError
from ..core.profile import Profile, Provenance


def path(kind: str, name: str) -> Path:
    """Where this GPU's and torch's live measurement `name` of `kind` is kept."""
    from .capture import _device_key
    return config.cache_dir(*_device_key()) / kind / f"{name}.json.gz"


def load_profile(where: Path) -> Profile | None:
    """A kept live Profile, with its annotation and the trace's metadata as they were; None where
    there is none or it is broken."""
    if not where.exists():
        return None
    try:
        from ..core.tracefile import read_document
        document = read_document(where, show_progress=False)
        provenance = Provenance(**(document["provenance"] | {"mode": "live"}))
        metadata = {k: v for k, v in document.items() if k not in ("traceEvents", "provenance")}
        annotation = (provenance.extra or {}).get("annotation", trace.ANNOTATION)
        return Profile(document["traceEvents"], provenance, where, annotation, metadata)
    except (TraceError, OSError, EOFError, ValueError, KeyError, TypeError):
        return None


def profile(kind: str, name: str, measure: Callable[[], Profile], fresh: bool = False) -> Profile:
    """The kept live Profile of `name`, else `measure()`'s, kept for the next page or run."""
    where = path(kind, name)
    if not fresh:
        kept = load_profile(where)
        if kept is not None:
            return kept
    prof = measure()
    prof.save(where)
    return prof


def kept_document(kind: str, name: str) -> dict | None:
    """The kept JSON document of `name` (an experiment's events and provenance); None where there
    is none or it is broken (then it is measured again)."""
    where = path(kind, name)
    if not where.exists():
        return None
    try:
        with gzip.open(where, "rt", encoding="utf-8") as f:
            return json.load(f)
    except (OSError, EOFError, ValueError):
        return None


def keep_document(kind: str, name: str, document: dict) -> Path:
    """Keep a live experiment's JSON document for the next page or run."""
    where = path(kind, name)
    where.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(where, "wt", encoding="utf-8") as f:
        json.dump(document, f, separators=(",", ":"))
    return where
