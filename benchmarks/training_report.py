"""Write benchmarks/results/training_h200.md from the training chapter's recordings (no GPU needed):

    python benchmarks/training_report.py

Every figure comes from notebooks/traces/h200/training/ (tools/record_training.py recorded them)."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from helpers.training import chapter as v  # noqa: E402
from helpers.training import core_backward as bw  # noqa: E402
from helpers.training import sources_modes as tm  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "training_h200.md"


def md(df) -> str:
    return df.to_markdown(index=False)


def main() -> int:
    profs = {s: tm.load_step(s) for s in v.STAGES}
    mem = tm.load_memory()
    p = mem["provenance"]
    t = v.timer_table(profs)
    ph = v.phases_table(profs).set_index("stage")
    t["forward kernels"] = t["stage"].map(ph["forward kernels"])
    t["backward kernels"] = t["stage"].map(ph["backward kernels"])
    t["backward / forward GPU"] = t["stage"].map(ph["backward / forward"])
    held = v.held_table(profs)[["stage", "held MiB", "saved beyond inputs MiB"]]
    lad = bw.ladder(mem)
    peak = (lad[lad.status == "ok"].pivot(index="stage", columns="seq", values="peak_bytes") / 2**30)
    peak = peak.reindex(list(v.STAGES)).round(2)
    growth = bw.growth(lad).groupby("stage").last()["ratio"].round(2)
    work = v.ncu_work(tm.training_counters())
    OUT.write_text(f"""# Training attention on the H200: one training step per stage

Written by `python benchmarks/training_report.py` from the recordings under
`notebooks/traces/h200/training/`, which `{mem['command'].strip()}` made (through
`tools/device_training_run.sh`) on {p['gpu']} (sm {p['capability']}, {p['sm_count']} SMs,
{p['total_memory_bytes'] / 2**30:.0f} GiB), driver {p['driver']}, torch {p['torch']}, CUDA {p['cuda']},
cuDNN {p['cudnn']}, on {p['date'][:10]}. Shape B=8 H=16 S=1024 D=64 bf16 causal unless a column says
otherwise. One step: the forward under autograd (`attn_fwd`), then `out.backward(grad_out)` with a
fixed grad_output (`attn_bwd`). The run's log: `training_record_h200.log`; per stage:
`training_step_h200.csv`.

## GPU time of one training step: profiler against do_bench

The profiler's figure is the sum of the step's GPU events (median of 3 active steps); do_bench is
`triton.testing.do_bench(step, warmup=25, rep=200)`'s median; CUDA events, the median of 20 steps
between two events.

{md(t)}

Where do_bench is longer than the profiler's sum, the GPU waited between the step's few short
kernels for the host to launch the next: the events around the step count the gaps, the
profiler's sum of kernel durations does not.

## What autograd keeps, and peak memory against seq

Held between forward and backward at S=1024 (allocated after the forward minus before; the
output included; "saved beyond inputs" from saved_tensors_hooks, not listed for compiled graphs):

{md(held)}

Peak memory of one training step above its inputs, GiB, at each seq the search ran:

{md(peak.reset_index())}

Growth of the peak at the last doubling of seq: {", ".join(f"{s} {r}×" for s, r in growth.reindex(list(v.STAGES)).items())}.

## The largest seq that fits (B=8, H=16, D=64, bf16, causal)

Powers of two from 512, each try on fresh inputs, memory freed between tries;
`torch.OutOfMemoryError` ends the search (the last seq that ran is the largest that fits). The
search's cap was seq 65,536: the fused stages reached it without running out of memory (a lower
bound); the last column is where each stage's fitted model fills the GPU's memory.

{md(v.max_seq_table(mem))}

## Nsight Compute: the backward beside the forward

The seven non-compiled backwards under one ncu process ({mem.get('ncu', {}).get('seconds', '?')} s); FLOPs are the tensor
pipe's counters times the calibration matmuls' FLOPs per unit (the forwards' recording, chapter 9):

{md(work)}
""")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
