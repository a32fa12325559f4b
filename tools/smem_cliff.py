"""Record the shared-memory cliff experiment on a GPU (helpers.smem_cliff.sources):

    python tools/smem_cliff.py [--out PATH]

By default it writes into this GPU's replay set: notebooks/traces/<gpu>/experiments/smem_cliff.json.gz
(ReplaySet.of_device(torch.cuda.get_device_name()).path("experiment", "smem_cliff")).
"""
from __future__ import annotations

import sys
from pathlib import Path

import argparse
import gzip
import json

# run as a file: the repository root first on sys.path, so `helpers` is this checkout's
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from helpers.core.replay_set import ReplaySet
from helpers.smem_cliff.occupancy import summarize_smem_cliff
from helpers.smem_cliff.sources import smem_cliff_events


def main() -> None:
    parser = argparse.ArgumentParser(description="Run the shared-memory cliff experiment.")
    parser.add_argument("--out", default=None, help="default: this GPU's replay set")
    parser.add_argument("--repeats", type=int, default=5)
    cli = parser.parse_args()
    if cli.out is None:
        import torch
        cli.out = str(ReplaySet.of_device(torch.cuda.get_device_name(0)).path("experiment", "smem_cliff"))
        Path(cli.out).parent.mkdir(parents=True, exist_ok=True)
    events = smem_cliff_events(cli.repeats, save_to=cli.out)
    with gzip.open(cli.out, "rt") as fh:
        prov = json.load(fh)["provenance"]
    print(f"{len(events)} events -> {cli.out}; {prov}")
    for row in summarize_smem_cliff(events, prov["capability"], prov["sm_count"]):
        print(row)


if __name__ == "__main__":
    main()
