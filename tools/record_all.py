"""Record a GPU's whole replay set, whatever the stage registry marks:  python tools/record_all.py

One command for a new GPU (or a new stage): it runs, in turn, each recorder with the registry's
facts as its defaults, into notebooks/traces/<gpu_slug(device)>/ (helpers.core.replay_set):

    tools/record.py --sweep       every registered stage at the article's shape, Stage.swept ones at every sweep shape
    tools/record_timers.py        the caller's loop, do_bench and the busy time per call of every forward
                                  and training step recorded (timers.json)
    tools/record_ncu.py           Nsight Compute's counters of Stage.has_ncu stages (Stage.ncu_swept: every seq)
    tools/record_ceilings.py      the GPU's matmul and copy ceilings
    tools/record_training.py      a training step of Stage.has_training stages (Stage.training_ncu: its backward
                                  under ncu; Stage.snapshot: a memory snapshot)
    tools/record_hopper.py        per kernel of Stage.has_ncu forwards and Stage.training_ncu backwards, the SASS
                                  opcodes executed (ncu) and held (its listing): chapter 7b's hopper/
    tools/record_own_model.py     the "Your own model" experiments
    tools/smem_cliff.py           the shared-memory experiment
    tools/record_decode.py        decode (Stage.decodes): one query against a KV cache, a decode step eager and
                                  under CUDA graphs, the is_causal trap, ncu's bytes (decode/)

A recorder that cannot run here (no ncu, say) is reported and the others go on. Then select the
set with ATTN_PROFILED_REPLAY_GPU=<gpu> (or make it the default in helpers/core/config.py).
`--only record ncu` runs some of them; `--dry-run` prints the plan: each command and the stages
the registry gives it.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
sys.path.insert(0, str(TOOLS.parent))   # run as a file: this checkout's helpers

from helpers.core.stages import STAGES, stages_where  # noqa: E402

# the recorders, in turn; the stages each one records are queries of the registry (`plan`)
STEPS = ("record", "timers", "ncu", "ceilings", "training", "hopper", "own_model", "smem_cliff", "decode")


@dataclass(frozen=True)
class Step:
    """One recorder and what the registry marks for it: the stages it is handed (`--stages`), and
    in words, which of them it records at more than the article's shape."""

    name: str
    command: tuple[str, ...]                 # the script (in tools/) and its arguments
    stages: tuple[str, ...] = ()             # what it records, one stage each
    marks: dict = field(default_factory=dict)   # fact -> the stages it applies to


def plan(only=STEPS) -> list[Step]:
    """What a full recording runs, derived from the stage registry (every stage registered when it
    runs): a new stage's facts put it in the steps it belongs to, and nothing else is edited."""
    every = tuple(STAGES)
    ncu, training = stages_where(has_ncu=True), stages_where(has_training=True)
    steps = {
        "record": Step("record", ("record.py", "--sweep", "--stages", *every), every,
                       {"swept (every sweep shape)": stages_where(swept=True)}),
        "timers": Step("timers", ("record_timers.py", "--stages", *every), every,
                       {"swept (every sweep shape)": stages_where(swept=True),
                        "has_training (a training step too)": training}),
        "ncu": Step("ncu", ("record_ncu.py", "--stages", *ncu), ncu,
                    {"ncu_swept (every sweep seq)": stages_where(ncu_swept=True)}),
        "ceilings": Step("ceilings", ("record_ceilings.py",)),
        "training": Step("training", ("record_training.py", "--stages", *training), training,
                         {"training_ncu (backward under ncu)": stages_where(training_ncu=True),
                          "snapshot (memory snapshot)": stages_where(snapshot=True)}),
        "hopper": Step("hopper", ("record_hopper.py",), ncu,
                       {"training_ncu (backward under ncu)": stages_where(training_ncu=True)}),
        "own_model": Step("own_model", ("record_own_model.py",)),
        "smem_cliff": Step("smem_cliff", ("smem_cliff.py",)),
        "decode": Step("decode", ("record_decode.py",), stages_where(decodes=True)),
    }
    return [steps[name] for name in only]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=list(STEPS), default=list(STEPS))
    parser.add_argument("--dry-run", action="store_true", help="print the plan (each command and its stages), run nothing")
    args = parser.parse_args(argv)
    failed = []
    for step in plan(args.only):
        command = [sys.executable, str(TOOLS / step.command[0]), *step.command[1:]]
        print(f"== {step.name}: {' '.join(step.command)}", flush=True)
        if step.stages:
            print(f"   stages: {', '.join(step.stages)}", flush=True)
        for fact, stages in step.marks.items():
            print(f"   {fact}: {', '.join(stages) or 'none'}", flush=True)
        if args.dry_run:
            continue
        started = time.perf_counter()
        code = subprocess.call(command, cwd=TOOLS.parent)
        print(f"== {step.name}: exit {code} in {time.perf_counter() - started:.0f} s", flush=True)
        if code:
            failed.append(step.name)
    if failed:
        print(f"not recorded: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
