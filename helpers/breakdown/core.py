"""Where a step's GPU time goes: busy against idle, and idle split by cause.

What Holistic Trace Analysis (HTA) computes for a whole trace (its temporal and idle-time
breakdowns), computed here per profiler step, from a Profile's `gpu_events` table. The GPU is
one device: every stream together.

Definitions (the same as HTA's where HTA has one):

* a step's **window** is its GPU span: from the start of the first GPU event launched in the step
  to the end of the last one (events belong to the step of their launch, by correlation id);
* **busy** is the union of the step's GPU events over the window (two overlapping kernels on two
  streams count once); **compute** the union of its kernels alone; **idle** is the rest of the
  window: `idle = span - busy`;
* each **gap** (a stretch of the window with nothing running) ends when a GPU event starts. Its
  cause is read from that event's launch call on the CPU:
  - **waiting for the host**: the launch call began after the GPU went idle: the GPU had nothing
    queued, it waited for the CPU to issue the next piece of work (HTA's "host wait");
  - **waiting on other GPU work**: the launch had been issued before the gap began, yet the event
    did not start: it waited on something on the GPU side (work on another stream, an event or a
    synchronization, the hardware's own gap between back-to-back kernels; HTA's "kernel wait"
    and "other" together).
  A gap whose next event has no launch in the trace (launched before the profiler started) is
  "unknown". `idle = host + other + unknown`, exactly.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

CAUSES = {"host": "waiting for the host", "gpu": "waiting on other GPU work", "unknown": "unknown"}
BREAKDOWN_COLUMNS = ["step", "gpu_events", "start_us", "end_us", "span_us", "busy_us", "compute_us",
                     "idle_us", "host_wait_us", "other_wait_us", "unknown_wait_us", "busy_pct",
                     "idle_pct", "host_wait_pct", "other_wait_pct"]
GAP_COLUMNS = ["step", "start_us", "end_us", "idle_us", "cause", "next_event", "next_category",
               "next_stream", "launch_start_us", "launched_by", "aten_op", "top_aten_op"]


def merged(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of intervals, as sorted disjoint (start, end) arrays."""
    if len(starts) == 0:
        return np.array([]), np.array([])
    order = np.argsort(starts, kind="stable")
    s, e = np.asarray(starts, float)[order], np.asarray(ends, float)[order]
    reach = np.maximum.accumulate(e)
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > reach[:-1]      # an interval opens where nothing before reaches it
    first = np.flatnonzero(new)
    last = np.r_[first[1:] - 1, len(s) - 1]
    return s[first], reach[last]


def busy_us(events: pd.DataFrame) -> float:
    """Time covered by at least one of `events` (the union of their intervals)."""
    s, e = merged(events["start_us"].to_numpy(float), events["end_us"].to_numpy(float))
    return float((e - s).sum())


def idle_gaps(events: pd.DataFrame) -> pd.DataFrame:
    """One row per gap between `events` (every stream together), with its cause."""
    if events.empty:
        return pd.DataFrame(columns=GAP_COLUMNS)
    # the event that ends a gap: the earliest to start, and of those the earliest launched
    ordered = events.sort_values(["start_us", "launch_start_us"], kind="stable", na_position="last")
    s = ordered["start_us"].to_numpy(float)
    reach = np.maximum.accumulate(ordered["end_us"].to_numpy(float))
    after = np.flatnonzero(s[1:] > reach[:-1]) + 1
    nxt = ordered.iloc[after]
    gap_start = reach[after - 1]
    launch = nxt["launch_start_us"].to_numpy(float)
    cause = np.where(np.isnan(launch), "unknown", np.where(launch > gap_start, "host", "gpu"))
    return pd.DataFrame({
        "step": nxt["step"].to_numpy(), "start_us": gap_start, "end_us": s[after],
        "idle_us": s[after] - gap_start, "cause": cause, "next_event": nxt["name"].to_numpy(),
        "next_category": nxt["category"].to_numpy(), "next_stream": nxt["stream"].to_numpy(),
        "launch_start_us": launch, "launched_by": nxt["launched_by"].to_numpy(),
        "aten_op": nxt["aten_op"].to_numpy(), "top_aten_op": nxt["top_aten_op"].to_numpy(),
    }, columns=GAP_COLUMNS)


def _figures(start: np.ndarray, end: np.ndarray, kernel: np.ndarray, launch: np.ndarray) -> dict:
    """The breakdown of one set of GPU events, given as arrays (see window_breakdown)."""
    if len(start) == 0:
        zeros = dict.fromkeys(["span_us", "busy_us", "compute_us", "idle_us", "host_wait_us",
                               "other_wait_us", "unknown_wait_us"], 0.0)
        return {"gpu_events": 0, "start_us": np.nan, "end_us": np.nan, **zeros,
                **dict.fromkeys(["busy_pct", "idle_pct", "host_wait_pct", "other_wait_pct"], np.nan)}
    lo, hi = float(start.min()), float(end.max())
    s, e = merged(start, end)
    busy = float((e - s).sum())
    ks, ke = merged(start[kernel], end[kernel])
    # gaps: the event that ends each one is the earliest to start, of those the earliest launched
    order = np.lexsort((np.where(np.isnan(launch), np.inf, launch), start))
    s_sorted, reach = start[order], np.maximum.accumulate(end[order])
    after = np.flatnonzero(s_sorted[1:] > reach[:-1]) + 1
    gap = s_sorted[after] - reach[after - 1]
    launched = launch[order][after]
    host = float(gap[launched > reach[after - 1]].sum())
    other = float(gap[launched <= reach[after - 1]].sum())
    unknown = float(gap[np.isnan(launched)].sum())
    span = hi - lo
    row = {"gpu_events": len(start), "start_us": lo, "end_us": hi, "span_us": span, "busy_us": busy,
           "compute_us": float((ke - ks).sum()),
           # the complement, not the gaps' sum, so that busy + idle is the span to the last bit
           "idle_us": span - busy, "host_wait_us": host, "other_wait_us": other, "unknown_wait_us": unknown}
    for key in ("busy", "idle", "host_wait", "other_wait"):
        row[f"{key}_pct"] = 100 * row[f"{key}_us"] / span if span > 0 else np.nan
    return row


def _arrays(events: pd.DataFrame) -> tuple[np.ndarray, ...]:
    return (events["start_us"].to_numpy(float), events["end_us"].to_numpy(float),
            (events["category"] == "kernel").to_numpy(bool),
            events["launch_start_us"].to_numpy(float))


def window_breakdown(events: pd.DataFrame) -> dict:
    """Span, busy, compute and idle by cause of one set of GPU events (one step, or several)."""
    return _figures(*_arrays(events))


def step_breakdown(gpu: pd.DataFrame, steps) -> pd.DataFrame:
    """One row per step: its GPU window, busy and idle time, idle by cause (BREAKDOWN_COLUMNS)."""
    start, end, kernel, launch = _arrays(gpu)
    values = gpu["step"].to_numpy(dtype=float, na_value=np.nan)
    rows = []
    for step in steps:
        at = np.flatnonzero(values == step)
        rows.append({"step": step, **_figures(start[at], end[at], kernel[at], launch[at])})
    return pd.DataFrame(rows, columns=BREAKDOWN_COLUMNS)
