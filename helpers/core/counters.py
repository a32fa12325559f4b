"""The `Counters` of a page: Nsight Compute's counters of one forward of each (stage, shape), all
live or all recorded, with where they come from. helpers.sources.counters collects them; the
counters chapter reads them."""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from .errors import TraceError
from .ncu_tables import short_version
from .stages import DEFAULT_SHAPE, Shape


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

    def stage(self, stage: str, shape: Shape = DEFAULT_SHAPE) -> pd.DataFrame:
        try:
            return self.kernels[(stage, shape.key)]
        except KeyError:
            raise TraceError(f"No counters of {stage} at {shape.key} were collected; pass it to "
                             f"counters.collect().") from None

    @property
    def stages(self) -> list[str]:
        return list(dict.fromkeys(s for s, _ in self.kernels))

    def banner(self) -> str:
        p = self.provenance
        if self.mode == "live":
            return (f"Measured live with {short_version(p.get('ncu'))} on {self.gpu}: "
                    f"{len(self.kernels)} forwards, one ncu process for the page.")
        return (f"Replaying Nsight Compute's counters recorded on {p.get('gpu', self.gpu)} "
                f"(sm {p.get('capability', '?')}, {p.get('sm_count', '?')} SMs) on {p.get('date', '?')[:10]} "
                f"with {short_version(p.get('ncu'))} and torch {p.get('torch', '?')}.\nNot live here: {self.reason}.")


def calibrations(prov: dict) -> list[dict]:
    """The calibration matmuls a provenance names (dtype, m, n, k, FLOPs)."""
    return list(prov.get("calibration", []))
