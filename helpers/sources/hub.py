"""The hub_flash page's trace: FlashAttention-2 from the Hub live if `kernels` can load it here,
else its replay, else sdpa_flash's as a labelled stand-in."""
from __future__ import annotations

from ..core.hub_kernel import STAGE, status
from ..core.profile import Profile, TraceError
from ..core.stages import DEFAULT_SHAPE, Shape
from .modes import profile_stage


def fetch_hub_flash(shape: Shape = DEFAULT_SHAPE, mode: str = "auto") -> tuple[Profile, str, bool]:
    """(the trace, the Hub's loading status line, whether it is sdpa_flash's stand-in).

    Prints the loading status first, on every machine (a CPU one too), so a reader sees the
    Hub's real answer before the replay banner."""
    line = status()
    print(line)
    try:
        return profile_stage(STAGE, shape, mode), line, False
    except TraceError as err:
        print(f"{err} Showing sdpa_flash's trace instead, labelled as sdpa_flash.")
        return profile_stage("sdpa_flash", shape, mode), line, True
