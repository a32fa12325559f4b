"""The book's two timers of a call, live: what a caller pays per call, and triton's do_bench.

* `caller_loop` (the caller's timer): after a warm-up, N back-to-back calls between two CUDA
  events, no flush and no synchronization inside, divided by N; repeated R times. That is what a
  loop pays per call: the CPU's launch work and the GPU's work overlap, so the time per call is
  whichever of the two is longer, and nothing is hidden. The R repeats give its spread.
* `do_bench_quantiles` (triton.testing.do_bench): before every timed call do_bench zeroes a
  256 MB buffer, so each call starts with a cold L2 and the CPU's work for the call is hidden
  behind the flush: it is the GPU-side time of one cold call, not what a loop pays.

Both are what `tools/record_timers.py` records into a replay set's `timers.json` and what a live
capture records beside its trace.
"""
from __future__ import annotations

import math
import time
from typing import Callable

LOOP_REPEATS = 7          # R: the spread of the caller's timer comes from these
LOOP_TARGET_US = 20_000   # each repeat runs about this long (at least MIN_CALLS calls)
MIN_CALLS, MAX_CALLS = 10, 2000
DO_BENCH_QUANTILES = (0.2, 0.5, 0.8)


def caller_loop(fn: Callable[[], object], repeats: int = LOOP_REPEATS, calls: int | None = None) -> dict:
    """`fn` called back to back: {"loop_calls": N, "loop_us": [µs per call, one per repeat]}.

    N is chosen from one synchronized call so that a repeat lasts about LOOP_TARGET_US; the
    warm-up is one repeat's worth of calls, so the launch queue and the clocks are in their
    steady state when the first timed repeat starts."""
    import torch
    torch.cuda.synchronize()
    started = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    one_us = (time.perf_counter() - started) * 1e6
    if calls is None:
        calls = int(min(MAX_CALLS, max(MIN_CALLS, math.ceil(LOOP_TARGET_US / max(one_us, 1.0)))))
    for _ in range(calls):  # warm-up
        fn()
    torch.cuda.synchronize()
    per_call = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        per_call.append(start.elapsed_time(end) * 1000 / calls)
    return {"loop_calls": calls, "loop_us": per_call}


def do_bench_quantiles(fn: Callable[[], object]) -> list[float] | None:
    """triton.testing.do_bench's 20th, 50th and 80th percentiles in µs; None without Triton."""
    try:
        from triton.testing import do_bench
    except ImportError:
        return None
    ms = do_bench(fn, warmup=25, rep=200, quantiles=list(DO_BENCH_QUANTILES))
    return [float(x) * 1000 for x in ms]


def both(fn: Callable[[], object]) -> dict:
    """The caller's loop and do_bench of the same call, as one record of timers.json."""
    record = caller_loop(fn)
    record["do_bench_us"] = do_bench_quantiles(fn)
    return record
