"""Which GPU each Profile of a page was measured on, so that a page never compares two GPUs as if
they were one. Live, a stage this GPU cannot run (flash on a T4) falls back to its recording, made
on another GPU: its figures are that GPU's. `elsewhere` names such stages; `sides` says, in words,
where each side of a comparison ran."""
from __future__ import annotations

from collections import Counter
from typing import Mapping, Sequence

from .profile import Profile


def where(prof: Profile) -> str:
    """"live on <GPU>" or "recorded on <GPU>"."""
    return f"{'live' if prof.mode == 'live' else 'recorded'} on {prof.provenance.gpu}"


def home_gpu(profiles: Mapping[str, Profile | None]) -> str | None:
    """The page's own GPU: the one its live profiles ran on, else the one most of them were
    recorded on (the first such, on a tie)."""
    given = [p for p in profiles.values() if p is not None]
    live = [p.provenance.gpu for p in given if p.mode == "live"]
    counted = Counter(live or [p.provenance.gpu for p in given])
    return counted.most_common(1)[0][0] if counted else None


def elsewhere(profiles: Mapping[str, Profile | None]) -> dict[str, str]:
    """{stage: its GPU} for every profile measured on another GPU than the page's own."""
    home = home_gpu(profiles)
    return {name: p.provenance.gpu for name, p in profiles.items()
            if p is not None and p.provenance.gpu != home}


def mixed(profiles: Mapping[str, Profile | None]) -> bool:
    """Whether the profiles come from more than one GPU."""
    return len({p.provenance.gpu for p in profiles.values() if p is not None}) > 1


def sides(profiles: Mapping[str, Profile | None]) -> str:
    """"sdpa_flash recorded on NVIDIA H200; naive and inplace live on Tesla T4": each GPU once."""
    groups: dict[str, list[str]] = {}
    for name, p in profiles.items():
        if p is not None:
            groups.setdefault(where(p), []).append(name)
    return "; ".join(f"{', '.join(names)} {on}" for on, names in groups.items())


# --- the one mark every view puts on a stage measured on another GPU ------------------------------

def as_profiles(profiles: Mapping[str, Profile | None] | Sequence[Profile]) -> dict[str, Profile | None]:
    """A page's profiles by stage, whether handed as a mapping or a list (charts take lists)."""
    if isinstance(profiles, Mapping):
        return dict(profiles)
    return {p.stage: p for p in profiles}


def marks(profiles: Mapping[str, Profile | None] | Sequence[Profile]) -> dict[str, str]:
    """{stage: its mark} for every stage measured on another GPU than the page's own: "recorded on
    NVIDIA H200, not on Tesla T4". A page of one GPU gets {}. Every table row, chart trace and
    guess that shows such a stage beside the others carries this mark, word for word."""
    given = as_profiles(profiles)
    home = home_gpu(given)
    return {name: f"{where(given[name])}, not on {home}" for name in elsewhere(given)}


def measured_column(profiles: Mapping[str, Profile | None] | Sequence[Profile]) -> dict[str, str] | None:
    """A table's "measured on" column, {stage: words}, where its stages come from more than one GPU:
    each stage's `where`, a stage of another GPU its `marks` entry. None on one GPU (no column)."""
    given = {k: p for k, p in as_profiles(profiles).items() if p is not None}
    if not mixed(given):
        return None
    marked = marks(given)
    return {name: marked.get(name, where(p)) for name, p in given.items()}


def caption_note(profiles: Mapping[str, Profile | None] | Sequence[Profile]) -> str:
    """The sentence a table's caption or a chart's subtitle adds where its stages come from two
    GPUs ("" on one): which ran where, and that their gap is partly the GPUs'."""
    given = {k: p for k, p in as_profiles(profiles).items() if p is not None}
    if not mixed(given):
        return ""
    return (f"Two GPUs: {sides(given)}; a gap between stages of different GPUs is partly the GPUs' own, "
            f"not the stages'.")


def hatched_note(profiles: Mapping[str, Profile | None] | Sequence[Profile], drawn: str = "hatched") -> str:
    """A chart subtitle's words for its marked stages: "hatched: sdpa_flash, recorded on NVIDIA
    H200, not on Tesla T4" (one clause per other GPU); "" on one GPU."""
    by_mark: dict[str, list[str]] = {}
    for name, mark in marks(profiles).items():
        by_mark.setdefault(mark, []).append(str(name))
    return "; ".join(f"{drawn}: {', '.join(names)}, {mark}" for mark, names in by_mark.items())
