"""Tables from a Kineto chrome trace: profiler steps, CPU ops, launches and GPU events.

Everything here is a pure function of the trace's event list, so live and replayed profiles
go through the same code. GPU events are tied to the launching runtime/driver call by CUPTI's
correlation id, and so to a profiler step and an op; never by time, because kernels launched
in the warm-up step can finish inside the first active step.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

ANNOTATION = "attn_fwd"
STEP_NAME = re.compile(r"^ProfilerStep#(\d+)$")
CPU_CATEGORIES = ("cpu_op", "user_annotation")
LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver")
GPU_CATEGORIES = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
# runtime/driver calls that put work on the GPU (others, like cudaStreamSynchronize, only wait)
LAUNCH_CALLS = re.compile(r"^(cuda|cu)(LaunchKernel|LaunchCooperativeKernel|Memcpy|Memset|GraphLaunch)")

STEP_COLUMNS = ["step", "start_us", "dur_us", "end_us"]
CPU_OP_COLUMNS = ["step", "name", "category", "depth", "parent", "start_us", "dur_us", "end_us",
                  "self_us", "external_id", "tid", "input_dims"]
LAUNCH_COLUMNS = ["step", "name", "category", "start_us", "dur_us", "correlation", "aten_op", "top_aten_op",
                  "tid"]
GPU_EVENT_COLUMNS = ["step", "name", "category", "start_us", "dur_us", "end_us", "stream",
                     "registers_per_thread", "shared_memory_bytes", "grid", "block",
                     "threads_per_block", "grid_blocks", "est_occupancy_pct", "bytes",
                     "correlation", "launched_by", "aten_op", "top_aten_op", "launch_start_us"]


def _complete(events: list[dict], categories) -> list[dict]:
    return [e for e in events if e.get("ph") == "X" and e.get("cat") in categories]


def steps(events: list[dict]) -> pd.DataFrame:
    """The active profiler steps, one row each, numbered as the profiler numbers them."""
    rows = []
    for e in _complete(events, CPU_CATEGORIES):
        match = STEP_NAME.match(e.get("name", ""))
        if match:
            rows.append({"step": int(match.group(1)), "start_us": float(e["ts"]),
                         "dur_us": float(e["dur"]), "end_us": float(e["ts"]) + float(e["dur"])})
    return pd.DataFrame(rows, columns=STEP_COLUMNS).sort_values("step", ignore_index=True)


def _step_of(times: pd.Series, step_table: pd.DataFrame) -> pd.Series:
    """The step whose CPU span holds each host timestamp (host-side nesting is exact)."""
    step = pd.Series(pd.NA, index=times.index, dtype="Int64")
    for row in step_table.itertuples():
        inside = (times >= row.start_us) & (times <= row.end_us)
        step[inside] = row.step
    return step


def _nest(frame: pd.DataFrame) -> pd.DataFrame:
    """Depth, parent and self time of host events that nest by time on one thread."""
    frame = frame.sort_values(["tid", "start_us", "dur_us"], ascending=[True, True, False])
    depth, parent, child_time = [], [], {}
    stack: list[tuple[int, float]] = []  # (row label, end)
    last_tid = None
    for label, row in zip(frame.index, frame.itertuples()):
        if row.tid != last_tid:
            stack, last_tid = [], row.tid
        while stack and stack[-1][1] < row.end_us - 1e-3:
            stack.pop()
        depth.append(len(stack))
        parent.append(frame.at[stack[-1][0], "name"] if stack else None)
        if stack:
            child_time[stack[-1][0]] = child_time.get(stack[-1][0], 0.0) + row.dur_us
        stack.append((label, row.end_us))
    frame = frame.assign(depth=depth, parent=parent)
    frame["self_us"] = frame["dur_us"] - pd.Series(child_time, dtype=float).reindex(frame.index).fillna(0.0)
    return frame


def cpu_ops(events: list[dict], annotation: str = ANNOTATION) -> pd.DataFrame:
    """Host ops inside each step's `annotation` (attn_fwd at depth 0), with their nesting."""
    step_table = steps(events)
    rows = [{"name": e["name"], "category": e["cat"], "start_us": float(e["ts"]),
             "dur_us": float(e["dur"]), "external_id": e.get("args", {}).get("External id"),
             "tid": e.get("tid"), "input_dims": e.get("args", {}).get("Input Dims")}
            for e in _complete(events, CPU_CATEGORIES) if not STEP_NAME.match(e.get("name", ""))]
    frame = pd.DataFrame(rows, columns=[c for c in CPU_OP_COLUMNS if c not in
                                        ("step", "depth", "parent", "end_us", "self_us")])
    if frame.empty:
        return pd.DataFrame(columns=CPU_OP_COLUMNS)
    frame["end_us"] = frame["start_us"] + frame["dur_us"]
    frame["step"] = _step_of(frame["start_us"], step_table)
    kept = []
    for roots in frame[frame["name"] == annotation].itertuples():
        inside = ((frame["tid"] == roots.tid) & (frame["start_us"] >= roots.start_us)
                  & (frame["end_us"] <= roots.end_us + 1e-3))
        kept.append(frame[inside])
    if not kept:
        return pd.DataFrame(columns=CPU_OP_COLUMNS)
    frame = _nest(pd.concat(kept))
    frame = frame.sort_values(["step", "start_us", "dur_us"], ascending=[True, True, False])
    return frame[CPU_OP_COLUMNS].reset_index(drop=True)


def _all_host_ops(events: list[dict]) -> pd.DataFrame:
    rows = [{"name": e["name"], "start_us": float(e["ts"]), "dur_us": float(e["dur"]),
             "end_us": float(e["ts"]) + float(e["dur"]), "tid": e.get("tid")}
            for e in _complete(events, ("cpu_op",))]
    return pd.DataFrame(rows, columns=["name", "start_us", "dur_us", "end_us", "tid"])


def launches(events: list[dict]) -> pd.DataFrame:
    """Runtime and driver calls that put work on the GPU, with their step and innermost op."""
    rows = [{"name": e["name"], "category": e["cat"], "start_us": float(e["ts"]),
             "dur_us": float(e["dur"]), "correlation": e.get("args", {}).get("correlation"),
             "tid": e.get("tid")}
            for e in _complete(events, LAUNCH_CATEGORIES) if LAUNCH_CALLS.match(e["name"])]
    frame = pd.DataFrame(rows, columns=[c for c in LAUNCH_COLUMNS if c not in ("step", "aten_op", "top_aten_op")])
    frame["step"] = _step_of(frame["start_us"], steps(events))
    ops = _all_host_ops(events)
    innermost, outermost = [], []
    for row in frame.itertuples():
        holding = ops[(ops["tid"] == row.tid) & (ops["start_us"] <= row.start_us)
                      & (ops["end_us"] >= row.start_us + row.dur_us)].sort_values("start_us")
        # innermost: the op that called the runtime; outermost: the line of user code
        innermost.append(holding["name"].iloc[-1] if len(holding) else None)
        outermost.append(holding["name"].iloc[0] if len(holding) else None)
    frame["aten_op"], frame["top_aten_op"] = innermost, outermost
    return frame[LAUNCH_COLUMNS].sort_values("start_us", ignore_index=True)


def _dims(value) -> tuple | None:
    return tuple(int(v) for v in value) if isinstance(value, (list, tuple)) else None


def gpu_events(events: list[dict], launch_table: pd.DataFrame | None = None) -> pd.DataFrame:
    """Kernels, memcpys and memsets, each joined to the call, op and step that launched it."""
    rows = []
    for e in _complete(events, GPU_CATEGORIES):
        args = e.get("args", {})
        grid, block = _dims(args.get("grid")), _dims(args.get("block"))
        rows.append({
            "name": e["name"], "category": GPU_CATEGORIES[e["cat"]],
            "start_us": float(e["ts"]), "dur_us": float(e["dur"]),
            "end_us": float(e["ts"]) + float(e["dur"]), "stream": args.get("stream"),
            "registers_per_thread": args.get("registers per thread"),
            "shared_memory_bytes": args.get("shared memory"), "grid": grid, "block": block,
            "threads_per_block": int(np.prod(block)) if block else None,
            "grid_blocks": int(np.prod(grid)) if grid else None,
            "est_occupancy_pct": args.get("est. achieved occupancy %"),
            "bytes": args.get("bytes"), "correlation": args.get("correlation")})
    frame = pd.DataFrame(rows, columns=[c for c in GPU_EVENT_COLUMNS
                                        if c not in ("step", "launched_by", "aten_op", "top_aten_op",
                                                     "launch_start_us")])
    for column in ("registers_per_thread", "shared_memory_bytes", "threads_per_block",
                   "grid_blocks", "est_occupancy_pct", "bytes", "correlation"):
        frame[column] = pd.to_numeric(frame[column]).astype("Int64")
    calls = launches(events) if launch_table is None else launch_table
    calls = calls.drop_duplicates("correlation").set_index("correlation")
    linked = frame["correlation"].map(lambda c: c in calls.index if pd.notna(c) else False)
    frame["step"] = pd.Series(pd.NA, index=frame.index, dtype="Int64")
    frame["launched_by"] = None
    frame["aten_op"] = None
    frame["top_aten_op"] = None
    frame["launch_start_us"] = np.nan
    hit = frame.loc[linked, "correlation"].astype("int64")
    frame.loc[linked, "step"] = calls.loc[hit, "step"].to_numpy()
    frame.loc[linked, "launched_by"] = calls.loc[hit, "name"].to_numpy()
    frame.loc[linked, "aten_op"] = calls.loc[hit, "aten_op"].to_numpy()
    frame.loc[linked, "top_aten_op"] = calls.loc[hit, "top_aten_op"].to_numpy()
    frame.loc[linked, "launch_start_us"] = calls.loc[hit, "start_us"].to_numpy()
    return frame[GPU_EVENT_COLUMNS].sort_values("start_us", ignore_index=True)


def per_step(events: list[dict], annotation: str = ANNOTATION, gpu: pd.DataFrame | None = None,
             ops: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per forward: GPU event counts, GPU time, CPU time and aten op count."""
    gpu = gpu_events(events) if gpu is None else gpu
    ops = cpu_ops(events, annotation) if ops is None else ops
    rows = []
    for step in steps(events)["step"]:
        g = gpu[gpu["step"] == step]
        o = ops[ops["step"] == step]
        root = o[(o["depth"] == 0) & (o["name"] == annotation)]
        rows.append({
            "step": step,
            "gpu_events": len(g),
            "kernels": int((g["category"] == "kernel").sum()),
            "memcpys": int((g["category"] == "memcpy").sum()),
            "memsets": int((g["category"] == "memset").sum()),
            "gpu_time_us": float(g["dur_us"].sum()),
            "gpu_span_us": float(g["end_us"].max() - g["start_us"].min()) if len(g) else 0.0,
            "cpu_time_us": float(root["dur_us"].sum()),
            "aten_ops": int(o["name"].str.startswith("aten::").sum()),
        })
    return pd.DataFrame(rows, columns=["step", "gpu_events", "kernels", "memcpys", "memsets",
                                       "gpu_time_us", "gpu_span_us", "cpu_time_us", "aten_ops"])
