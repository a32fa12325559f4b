"""The `Counters` of a page: Nsight Compute's counters of one forward of each (stage, shape), all
live or all recorded, with where they come from. helpers.counters.sources collects them; the
counters chapter reads them."""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from ..core.errors import TraceError
from ..core.ncu_tables import short_version
from ..core.stages import DEFAULT_SHAPE, Shape


@dataclass
class Counters:
    """The counters of one forward of each (stage, shape), all live or all recorded."""

    mode: str                                    # "live" or "replay"
    gpu: str                                     # the GPU they were read on
    provenance: dict
    kernels: dict[tuple[str, str], pd.DataFrame]  # (stage, shape key) -> ncu.kernels()
    calibration: dict[str, pd.DataFrame]         # calibration name -> ncu.kernels()
    reason: str = ""                             # why replay, when it is
    notes: list[str] = field(default_factory=list)
    default_shape: Shape = DEFAULT_SHAPE
    # live counters only: (stage, shape key) -> the replay set of this same GPU it was read from
    # instead of measured now (the roofline's sequence sweep); the notes say so
    recorded: dict[tuple[str, str], str] = field(default_factory=dict)

    def stage(self, stage: str, shape: Shape = DEFAULT_SHAPE) -> pd.DataFrame:
        try:
            return self.kernels[(stage, shape.key)]
        except KeyError:
            raise TraceError(f"No counters of {stage} at {shape.key} were collected; pass it to "
                             f"the session's counters().") from None

    @property
    def stages(self) -> list[str]:
        return list(dict.fromkeys(s for s, _ in self.kernels))

    def banner(self) -> str:
        p = self.provenance
        if self.mode == "live":
            live = len(self.kernels) - len(self.recorded)
            also = f", and {len(self.recorded)} recorded earlier on this GPU" if self.recorded else ""
            return (f"Measured live with {short_version(p.get('ncu'))} on {self.gpu}: "
                    f"{live} forwards, one ncu process for the page{also}.")
        return (f"Replaying Nsight Compute's counters recorded on {p.get('gpu', self.gpu)} "
                f"(sm {p.get('capability', '?')}, {p.get('sm_count', '?')} SMs) on {p.get('date', '?')[:10]} "
                f"with {short_version(p.get('ncu'))} and torch {p.get('torch', '?')}.")

    def why_not_live(self) -> str:
        """Why the counters are replayed, in a reader's terms (folded under the banner)."""
        reason = self.reason
        if "not on PATH" in reason and "no CUDA GPU" in reason:
            return ("This machine has neither an NVIDIA GPU nor Nsight Compute (ncu), the profiler "
                    "that reads the hardware counters, so the page shows the counters recorded on a GPU.")
        if "not on PATH" in reason:
            return ("Nsight Compute (ncu), the profiler that reads the hardware counters, is not "
                    "installed here, so the page shows the counters recorded on a GPU.")
        if "no CUDA GPU" in reason:
            return "This machine has no NVIDIA GPU to count on, so the page shows the counters recorded on one."
        if "asked for" in reason:
            return "The recording was asked for (mode='replay')."
        if " did not run under ncu" in reason:
            return ("The page's forwards could not run under Nsight Compute on this GPU, and a page "
                    "shows one GPU's counters for every stage, so it shows the counters recorded on a GPU.")
        if PERMISSION_ERROR in reason:
            return (f"The GPU's driver does not let this user read the performance counters "
                    f"({PERMISSION_ERROR}; an administrator can allow it), so the page shows the "
                    f"counters recorded on a GPU.")
        return ("Nsight Compute could not read the counters here (reading them often needs "
                "administrator permission, ERR_NVGPUCTRPERM), so the page shows the counters recorded on a GPU.")


PERMISSION_ERROR = "ERR_NVGPUCTRPERM"   # ncu's word when the driver keeps the counters to admins


def calibrations(prov: dict) -> list[dict]:
    """The calibration matmuls a provenance names (dtype, m, n, k, FLOPs)."""
    return list(prov.get("calibration", []))
