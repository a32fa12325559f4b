"""Record this GPU's ceilings for the replay set:  python tools/record_ceilings.py

A bf16 matmul's TFLOP/s and a device-to-device copy's TB/s, timed with triton.testing.do_bench,
into notebooks/traces/<gpu>/ceilings.json with their provenance (helpers/sources/ceilings.py).
"""
from __future__ import annotations

import sys
from pathlib import Path

# run as a file: the repository root first on sys.path, so `helpers` is this checkout's
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from helpers.sources import ceilings  # noqa: E402
from helpers.sources.capture import device_provenance  # noqa: E402
from helpers.core.replay_set import ReplaySet  # noqa: E402
from helpers.core.stages import DEFAULT_SHAPE  # noqa: E402


def main() -> int:
    import torch

    if not torch.cuda.is_available():
        print("record_ceilings needs a CUDA GPU", file=sys.stderr)
        return 2
    table = ceilings.measure()
    provenance = device_provenance("ceilings", DEFAULT_SHAPE, "python tools/record_ceilings.py")
    provenance.pop("stage"), provenance.pop("shape")
    import triton
    provenance["triton"] = triton.__version__
    path = ceilings.save(table, provenance, ReplaySet.of_device(torch.cuda.get_device_name(0)).path("ceilings", "ceilings"))
    print(table.to_string(index=False))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
