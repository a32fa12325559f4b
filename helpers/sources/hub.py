"""The hub_flash page's trace: FlashAttention-2 from the Hub live if `kernels` can load it here,
else its replay, else nothing, with one line saying what is missing and why (`Missing`)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..core import config
from ..core.hub_kernel import STAGE, loading
from ..core.replay_set import ReplaySet
from ..core.profile import Profile, TraceError
from ..core.stages import DEFAULT_SHAPE, Shape
from .modes import profile_stage


@dataclass(frozen=True)
class Missing:
    """No trace of the Hub's kernel here, live or in the selected set: what a reader is told, in
    one line. True as a truth value (the fourth item `fetch_hub_flash` hands back)."""

    device: str                  # the selected replay set's GPU
    elsewhere: tuple[str, ...]   # the sets that have the trace (their GPUs)
    loaded: bool                 # whether the kernel loaded on this machine

    def __bool__(self) -> bool:
        return True

    @property
    def line(self) -> str:
        """The one line a reader sees: what is missing, and why."""
        return (f"No trace of the Hub's FlashAttention-2 here: the {self.device} replay set holds no trace of it "
                f"(the machine that recorded it could not load the kernel), so this page compares nothing.")

    @property
    def where_else(self) -> str:
        """Where the trace can be had (folded under the line)."""
        other = (f"The {' and '.join(self.elsewhere)} replay set has it: select it with ATTN_PROFILED_REPLAY_GPU "
                 "(Run it yourself). " if self.elsewhere else "")
        here = "" if self.loaded else "This machine cannot load the kernel either. "
        return f"{here}{other}Live, on a GPU that can load the kernel, the page profiles it itself."


def fetch_hub_flash(shape: Shape = DEFAULT_SHAPE, mode: str = "auto",
                    gpu: str | None = None) -> tuple[Profile | None, str, bool, "Missing | bool"]:
    """(the trace or None, the Hub's loading status in a reader's terms, whether the kernel loaded
    here, `Missing` where the trace is missing, else False).

    Where the kernel loaded, prints where it came from; where it did not, the caller folds the
    reason under its replay line (helpers.hub.page), never an exception's text. Where neither a
    live run nor the selected set has the trace, the trace is None: the page says what is missing
    in one line (helpers.hub.page) and compares nothing in its place."""
    loaded, line = loading()
    if loaded:
        print(line)
    try:
        return profile_stage(STAGE, shape, mode, gpu=gpu), line, loaded, False
    except TraceError:
        device = ReplaySet.configured(gpu).identity.device_name
        return None, line, loaded, Missing(device, tuple(d for d in sets_with() if d != device), loaded)


def sets_with(stage: str = STAGE, shape: Shape = DEFAULT_SHAPE) -> list[str]:
    """The replay sets (their GPUs' device names, from their own provenance) that hold a trace of
    `stage` at `shape`: where a reader can select one that has it."""
    root = Path(config.replay_root())
    sets = [ReplaySet(p.name) for p in sorted(root.iterdir()) if p.is_dir()] if root.is_dir() else []
    return [r.identity.device_name for r in sets if r.trace(stage, shape).is_file() and not r.identity.synthetic]
