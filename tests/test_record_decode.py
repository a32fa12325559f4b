"""tools/record_decode.py's busy time per call, on a hand-made trace: the GPU work a profiled step
launched counts, whenever it ran; a warm-up call's kernel that runs inside the recorded window does
not (an H100's cuDNN at batch 64, KV 32,768, 2026-12-07: four 10.7 ms kernels in three steps read as
14.3 ms a call until the count followed the launches)."""
from __future__ import annotations

import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import record_decode  # noqa: E402


def step(n: int, ts: float, dur: float, cat: str = "user_annotation") -> dict:
    return {"ph": "X", "cat": cat, "name": f"ProfilerStep#{n}", "ts": ts, "dur": dur}


def launch(ts: float, corr: int) -> dict:
    return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": ts, "dur": 5.0,
            "args": {"correlation": corr}}


def kernel(ts: float, dur: float, corr: int) -> dict:
    return {"ph": "X", "cat": "kernel", "name": "k", "ts": ts, "dur": dur, "args": {"correlation": corr}}


def test_the_busy_time_follows_the_launches_not_the_window():
    # warm-up call launched at t=0 (outside the steps), its kernel running 0..100 µs behind the CPU;
    # three profiled steps of 10 µs of CPU each, launching one 100 µs kernel each, run back to back
    events = [launch(0.0, 1), kernel(50.0, 100.0, 1)]
    for i, t in enumerate((20.0, 40.0, 60.0)):
        events += [step(i + 2, t, 10.0), step(i + 2, 150.0 + 100 * i, 100.0, cat="gpu_user_annotation"),
                   launch(t + 1, 10 + i), kernel(150.0 + 100 * i, 100.0, 10 + i)]
    busy, steps = record_decode.gpu_busy_per_step(events)
    assert steps == 3   # the GPU lane's copies of the steps are not steps
    assert busy == 100.0   # 300 µs of the steps' kernels over 3 steps; the warm-up's 100 µs left out
