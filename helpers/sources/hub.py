"""The hub_flash page's trace: FlashAttention-2 from the Hub live if `kernels` can load it here,
else its replay, else sdpa_flash's as a labelled stand-in."""
from __future__ import annotations

from ..core.hub_kernel import STAGE, loading
from ..core.profile import Profile, TraceError
from ..core.stages import DEFAULT_SHAPE, Shape
from .modes import profile_stage


def fetch_hub_flash(shape: Shape = DEFAULT_SHAPE, mode: str = "auto",
                    gpu: str | None = None) -> tuple[Profile, str, bool, bool]:
    """(the trace, the Hub's loading status in a reader's terms, whether the kernel loaded here,
    whether the trace is sdpa_flash's stand-in).

    Where the kernel loaded, prints where it came from; where it did not, the caller folds the
    reason under its replay line (helpers.hub.page), never an exception's text."""
    loaded, line = loading()
    if loaded:
        print(line)
    try:
        return profile_stage(STAGE, shape, mode, gpu=gpu), line, loaded, False
    except TraceError as err:
        print(f"{err} Showing sdpa_flash's trace instead, labelled as sdpa_flash.")
        return profile_stage("sdpa_flash", shape, mode, gpu=gpu), line, loaded, True
