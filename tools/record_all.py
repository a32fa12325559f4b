"""Record a GPU's whole replay set, whatever the stage registry marks:  python tools/record_all.py

One command for a new GPU (or a new stage): it runs, in turn, each recorder with the registry's
facts as its defaults, into notebooks/traces/<gpu_slug(device)>/ (helpers.core.replay_set):

    tools/record.py --sweep       every registered stage at the article's shape, Stage.swept ones at every sweep shape
    tools/record_ncu.py           Nsight Compute's counters of Stage.has_ncu stages (Stage.ncu_swept: every seq)
    tools/record_ceilings.py      the GPU's matmul and copy ceilings
    tools/record_training.py      a training step of Stage.has_training stages (Stage.training_ncu: its backward under ncu)
    tools/record_own_model.py     the "Your own model" experiments
    tools/smem_cliff.py           the shared-memory experiment

A recorder that cannot run here (no ncu, say) is reported and the others go on. Then select the
set with ATTN_PROFILED_REPLAY_GPU=<gpu> (or make it the default in helpers/core/config.py).
`--only record ncu` runs some of them; `--dry-run` prints the commands.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
STEPS = {
    "record": ["record.py", "--sweep"],
    "ncu": ["record_ncu.py"],
    "ceilings": ["record_ceilings.py"],
    "training": ["record_training.py"],
    "own_model": ["record_own_model.py"],
    "smem_cliff": ["smem_cliff.py"],
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=list(STEPS), default=list(STEPS))
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args(argv)
    failed = []
    for name in args.only:
        command = [sys.executable, str(TOOLS / STEPS[name][0]), *STEPS[name][1:]]
        print(f"== {name}: {' '.join(command[1:])}", flush=True)
        if args.dry_run:
            continue
        started = time.perf_counter()
        code = subprocess.call(command, cwd=TOOLS.parent)
        print(f"== {name}: exit {code} in {time.perf_counter() - started:.0f} s", flush=True)
        if code:
            failed.append(name)
    if failed:
        print(f"not recorded: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
