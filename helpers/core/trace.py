"""Tables from a Kineto chrome trace: profiler steps, CPU ops, launches and GPU events.

Everything here is a pure function of the trace's event list, so live and replayed profiles
go through the same code. GPU events are tied to the launching runtime/driver call by CUPTI's
correlation id, and so to a profiler step and an op; never by time, because kernels launched
in the warm-up step can finish inside the first active step.

Any trace torch.profiler writes goes through here, not only the book's stages:

* without `ProfilerStep#` rows (a plain `with profile():`), the whole trace is one step, numbered
  `WHOLE_TRACE_STEP`, spanning the host events;
* with work on several threads (autograd runs backward on its own thread), host ops nest per
  thread, and a launch is tied to the ops of the thread that made it;
* `annotation=None` looks at every host op of each step instead of one `record_function` region.

`parse` reads the event list once, in one pass; a `Profile` keeps its result and builds every
table from it, so a trace of 100,000 events costs one walk over them, not one per table.
"""
from __future__ import annotations

import gc
import re
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pandas as pd

ANNOTATION = "attn_fwd"
STEP_NAME = re.compile(r"^ProfilerStep#(\d+)$")
CPU_CATEGORIES = ("cpu_op", "user_annotation")
LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver")
GPU_CATEGORIES = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
# runtime/driver calls that put work on the GPU (others, like cudaStreamSynchronize, only wait)
LAUNCH_CALLS = re.compile(r"^(cuda|cu)(LaunchKernel|LaunchCooperativeKernel|Memcpy|Memset|GraphLaunch)")
# the step of a trace recorded without a schedule: one step, the whole trace
WHOLE_TRACE_STEP = 0
NEST_SLACK_US = 1e-3  # timestamps are rounded to the nanosecond: a child may end 1 ns after its parent

STEP_COLUMNS = ["step", "start_us", "dur_us", "end_us"]
CPU_OP_COLUMNS = ["step", "name", "category", "depth", "parent", "start_us", "dur_us", "end_us",
                  "self_us", "external_id", "tid", "input_dims"]
LAUNCH_COLUMNS = ["step", "name", "category", "start_us", "dur_us", "correlation", "aten_op", "top_aten_op",
                  "tid"]
GPU_EVENT_COLUMNS = ["step", "name", "category", "start_us", "dur_us", "end_us", "stream",
                     "registers_per_thread", "shared_memory_bytes", "grid", "block",
                     "threads_per_block", "grid_blocks", "est_occupancy_pct", "bytes",
                     "correlation", "launched_by", "aten_op", "top_aten_op", "launch_start_us"]
PER_STEP_COLUMNS = ["step", "gpu_events", "kernels", "memcpys", "memsets", "gpu_time_us", "gpu_span_us",
                    "cpu_time_us", "aten_ops"]


@contextmanager
def paused_gc():
    """Python's cycle collector off while a trace's events are read and sorted.

    They are a hundred thousand dicts and lists, none in a cycle, and every few hundred
    allocations the collector would walk them all again (it took most of a large trace's load
    time). On the way out, freeze then unfreeze (both O(1)) files what was made meanwhile with the
    long-lived objects, instead of leaving it all young, to be walked at the next allocations."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.unfreeze()
        if enabled:
            gc.enable()


class MalformedEvent(ValueError):
    """A complete ("X") event without a number for `ts` or `dur`: the trace is not usable as it is."""


@dataclass
class Parsed:
    """One pass over the event list: the raw columns of each kind of event, in file order."""

    steps: pd.DataFrame          # STEP_COLUMNS
    profiler_steps: bool         # False: no ProfilerStep# rows, the whole trace is one step
    host: dict                   # cpu_op and user_annotation events, ProfilerStep# rows left out
    calls: dict                  # runtime and driver calls that launch GPU work
    gpu: dict                    # kernels, memcpys, memsets
    threads: dict                # tid -> thread name, from the trace's metadata events


def _number(e: dict, key: str, index: int) -> float:
    try:
        return float(e[key])
    except (KeyError, TypeError, ValueError):
        raise MalformedEvent(f"event {index} ({e.get('cat')} {str(e.get('name'))[:60]!r}) has no "
                             f"number for {key!r}: {e.get(key)!r}") from None


def parse(events: list[dict]) -> Parsed:
    """Sort the complete events into host ops, launch calls and GPU events, in one pass."""
    with paused_gc():
        return _parse(events)


def _parse(events: list[dict]) -> Parsed:
    host = {k: [] for k in ("name", "category", "start_us", "dur_us", "external_id", "tid", "input_dims")}
    calls = {k: [] for k in ("name", "category", "start_us", "dur_us", "correlation", "tid")}
    gpu = {k: [] for k in ("name", "category", "start_us", "dur_us", "args")}
    step_rows, threads = [], {}
    for i, e in enumerate(events):
        ph = e.get("ph")
        if ph != "X":
            if ph == "M" and e.get("name") == "thread_name":
                threads[e.get("tid")] = (e.get("args") or {}).get("name")
            continue
        cat = e.get("cat")
        if cat in CPU_CATEGORIES:
            name = e.get("name", "")
            ts, dur = _number(e, "ts", i), _number(e, "dur", i)
            match = STEP_NAME.match(name)
            if match:
                step_rows.append((int(match.group(1)), ts, dur, ts + dur))
                continue
            args = e.get("args", {})
            host["name"].append(name)
            host["category"].append(cat)
            host["start_us"].append(ts)
            host["dur_us"].append(dur)
            host["external_id"].append(args.get("External id"))
            host["tid"].append(e.get("tid"))
            host["input_dims"].append(args.get("Input Dims"))
        elif cat in LAUNCH_CATEGORIES:
            name = e.get("name", "")
            if LAUNCH_CALLS.match(name):
                calls["name"].append(name)
                calls["category"].append(cat)
                calls["start_us"].append(_number(e, "ts", i))
                calls["dur_us"].append(_number(e, "dur", i))
                calls["correlation"].append(e.get("args", {}).get("correlation"))
                calls["tid"].append(e.get("tid"))
        elif cat in GPU_CATEGORIES:
            gpu["name"].append(e.get("name", ""))
            gpu["category"].append(GPU_CATEGORIES[cat])
            gpu["start_us"].append(_number(e, "ts", i))
            gpu["dur_us"].append(_number(e, "dur", i))
            gpu["args"].append(e.get("args", {}))
    profiler_steps = bool(step_rows)
    if not step_rows:
        # no schedule: the whole trace is one step, from the first host event to the last end
        starts = np.array(host["start_us"] + calls["start_us"], dtype=float)
        ends = starts + np.array(host["dur_us"] + calls["dur_us"], dtype=float)
        if len(starts):
            lo, hi = float(starts.min()), float(ends.max())
            step_rows.append((WHOLE_TRACE_STEP, lo, hi - lo, hi))
    steps = pd.DataFrame([dict(zip(STEP_COLUMNS, r)) for r in step_rows], columns=STEP_COLUMNS)
    steps = steps.sort_values("step", ignore_index=True)
    return Parsed(steps, profiler_steps, host, calls, gpu, threads)


def steps(events: list[dict]) -> pd.DataFrame:
    """The active profiler steps, one row each, numbered as the profiler numbers them."""
    return parse(events).steps


def _step_of(times: pd.Series, step_table: pd.DataFrame) -> pd.Series:
    """The step whose CPU span holds each host timestamp (host-side nesting is exact)."""
    values = times.to_numpy(dtype=float)
    out = np.full(len(values), -1, dtype=np.int64)
    for step, start, end in zip(step_table["step"], step_table["start_us"], step_table["end_us"]):
        out[(values >= start) & (values <= end)] = step
    step = pd.Series(out, index=times.index, dtype="Int64")
    return step.mask(out < 0)


def _nest(frame: pd.DataFrame) -> pd.DataFrame:
    """Depth, parent and self time of host events that nest by time on one thread."""
    frame = frame.sort_values(["tid", "start_us", "dur_us"], ascending=[True, True, False])
    tids, ends = frame["tid"].to_numpy(), frame["end_us"].to_numpy(dtype=float)
    durs, names = frame["dur_us"].to_numpy(dtype=float), frame["name"].to_numpy()
    n = len(frame)
    depth = np.zeros(n, dtype=np.int64)
    parent: list = [None] * n
    child_time = np.zeros(n)
    stack: list[int] = []
    last_tid = object()
    for i in range(n):
        if tids[i] != last_tid:
            stack, last_tid = [], tids[i]
        while stack and ends[stack[-1]] < ends[i] - NEST_SLACK_US:
            stack.pop()
        depth[i] = len(stack)
        if stack:
            parent[i] = names[stack[-1]]
            child_time[stack[-1]] += durs[i]
        stack.append(i)
    frame = frame.assign(depth=depth, parent=parent)
    frame["self_us"] = frame["dur_us"] - child_time
    return frame


def _host_frame(parsed: Parsed) -> pd.DataFrame:
    frame = pd.DataFrame(parsed.host, columns=[c for c in CPU_OP_COLUMNS if c not in
                                               ("step", "depth", "parent", "end_us", "self_us")])
    frame["end_us"] = frame["start_us"] + frame["dur_us"]
    frame["step"] = _step_of(frame["start_us"], parsed.steps)
    return frame


def _inside_annotation(frame: pd.DataFrame, annotation: str) -> tuple[pd.DataFrame | None, pd.DataFrame]:
    """The ops inside each `annotation` region: on the region's own thread, and on the others.

    Regions that do not overlap (the usual case: one per step) are found for every op at once,
    by a binary search of the regions' starts; overlapping ones one region at a time."""
    roots = frame[frame["name"] == annotation]
    if roots.empty:
        return None, frame.iloc[:0]
    starts, ends, tids = (frame[c].to_numpy() for c in ("start_us", "end_us", "tid"))
    order = np.argsort(roots["start_us"].to_numpy(dtype=float), kind="stable")
    r_start = roots["start_us"].to_numpy(dtype=float)[order]
    r_end = roots["end_us"].to_numpy(dtype=float)[order]
    r_tid = roots["tid"].to_numpy()[order]
    if (r_start[1:] <= r_end[:-1] + NEST_SLACK_US).any():
        kept, others = [], []
        for root in roots.itertuples():
            window = (starts >= root.start_us) & (ends <= root.end_us + NEST_SLACK_US)
            kept.append(frame[window & (tids == root.tid)])
            others.append(frame[window & (tids != root.tid)])
        return pd.concat(kept), pd.concat(others)
    at = np.searchsorted(r_start, starts.astype(float), side="right") - 1
    found = at >= 0
    at = np.where(found, at, 0)
    inside = found & (starts >= r_start[at]) & (ends <= r_end[at] + NEST_SLACK_US)
    same = tids == r_tid[at]
    return frame[inside & same], frame[inside & ~same]


def cpu_ops(events: list[dict] | Parsed, annotation: str | None = ANNOTATION) -> pd.DataFrame:
    """Host ops inside each step's `annotation` (at depth 0), with their nesting.

    Ops that other threads run inside the annotation's span (autograd's backward thread) are
    kept too, one level below it. With `annotation=None`: every host op of every step, nested
    per thread."""
    parsed = events if isinstance(events, Parsed) else parse(events)
    frame = _host_frame(parsed)
    if frame.empty:
        return pd.DataFrame(columns=CPU_OP_COLUMNS)
    if annotation is None:
        frame = _nest(frame[frame["step"].notna()])
    else:
        kept, others = _inside_annotation(frame, annotation)
        if kept is None:
            return pd.DataFrame(columns=CPU_OP_COLUMNS)
        frame = _nest(kept)
        if len(others):
            # another thread's ops run inside the annotation: one level below it, per thread
            others = _nest(others.drop_duplicates(["tid", "start_us", "dur_us", "name"]))
            others["parent"] = others["parent"].where(others["depth"] > 0, annotation)
            others["depth"] += 1
            frame = pd.concat([frame, others])
    frame = frame.sort_values(["step", "start_us", "dur_us"], ascending=[True, True, False])
    return frame[CPU_OP_COLUMNS].reset_index(drop=True)


def _holders(calls: pd.DataFrame, ops: pd.DataFrame) -> tuple[list, list]:
    """For each launch call: the innermost and outermost cpu_op of its thread that hold it.

    One sweep per thread: ops in start order (longest first on a tie) go on a stack; an op
    leaves it once it has ended before the sweep's time. Every op that holds a call (starts
    before it, ends after it) is still on the stack when the call is reached."""
    innermost, outermost = [None] * len(calls), [None] * len(calls)
    if calls.empty or ops.empty:
        return innermost, outermost
    op_groups = {tid: g for tid, g in ops.groupby("tid", sort=False)}
    call_tids = calls["tid"].to_numpy()
    call_starts = calls["start_us"].to_numpy(dtype=float)
    call_ends = call_starts + calls["dur_us"].to_numpy(dtype=float)
    for tid in pd.unique(call_tids):
        group = op_groups.get(tid)
        if group is None:
            continue
        order = np.lexsort((-group["dur_us"].to_numpy(dtype=float), group["start_us"].to_numpy(dtype=float)))
        o_start = group["start_us"].to_numpy(dtype=float)[order]
        o_end = group["end_us"].to_numpy(dtype=float)[order]
        o_name = group["name"].to_numpy()[order]
        mine = np.flatnonzero(call_tids == tid)
        mine = mine[np.argsort(call_starts[mine], kind="stable")]
        stack: list[int] = []
        j, n = 0, len(o_start)
        for c in mine:
            t = call_starts[c]
            while j < n and o_start[j] <= t:
                while stack and o_end[stack[-1]] < o_start[j]:
                    stack.pop()
                stack.append(j)
                j += 1
            while stack and o_end[stack[-1]] < t:
                stack.pop()
            holding = [s for s in stack if o_end[s] >= call_ends[c]]
            if holding:
                # innermost: the op that called the runtime; outermost: the line of user code
                innermost[c], outermost[c] = o_name[holding[-1]], o_name[holding[0]]
    return innermost, outermost


def launches(events: list[dict] | Parsed) -> pd.DataFrame:
    """Runtime and driver calls that put work on the GPU, with their step and innermost op."""
    parsed = events if isinstance(events, Parsed) else parse(events)
    frame = pd.DataFrame(parsed.calls, columns=[c for c in LAUNCH_COLUMNS
                                                if c not in ("step", "aten_op", "top_aten_op")])
    frame["step"] = _step_of(frame["start_us"], parsed.steps)
    host = parsed.host
    is_op = np.array([c == "cpu_op" for c in host["category"]], dtype=bool)
    ops = pd.DataFrame({"name": np.array(host["name"], dtype=object)[is_op],
                        "start_us": np.array(host["start_us"], dtype=float)[is_op],
                        "dur_us": np.array(host["dur_us"], dtype=float)[is_op],
                        "tid": pd.Series(host["tid"], dtype=object)[is_op].to_numpy()})
    ops["end_us"] = ops["start_us"] + ops["dur_us"]
    frame["aten_op"], frame["top_aten_op"] = _holders(frame, ops)
    return frame[LAUNCH_COLUMNS].sort_values("start_us", ignore_index=True)


def _dims(value) -> tuple | None:
    return tuple(int(v) for v in value) if isinstance(value, (list, tuple)) else None


def _product(dims: tuple | None) -> int | None:
    if not dims:
        return None
    out = 1
    for d in dims:
        out *= d
    return out


def gpu_events(events: list[dict] | Parsed, launch_table: pd.DataFrame | None = None) -> pd.DataFrame:
    """Kernels, memcpys and memsets, each joined to the call, op and step that launched it."""
    parsed = events if isinstance(events, Parsed) else parse(events)
    raw = parsed.gpu
    args = raw["args"]
    grids = [_dims(a.get("grid")) for a in args]
    blocks = [_dims(a.get("block")) for a in args]
    starts = np.array(raw["start_us"], dtype=float)
    frame = pd.DataFrame({
        "name": raw["name"], "category": raw["category"], "start_us": raw["start_us"],
        "dur_us": raw["dur_us"], "end_us": (starts + np.array(raw["dur_us"], dtype=float)).tolist(),
        "stream": [a.get("stream") for a in args],
        "registers_per_thread": [a.get("registers per thread") for a in args],
        "shared_memory_bytes": [a.get("shared memory") for a in args], "grid": grids, "block": blocks,
        "threads_per_block": [_product(b) for b in blocks], "grid_blocks": [_product(g) for g in grids],
        "est_occupancy_pct": [a.get("est. achieved occupancy %") for a in args],
        "bytes": [a.get("bytes") for a in args], "correlation": [a.get("correlation") for a in args],
    }, columns=[c for c in GPU_EVENT_COLUMNS
                if c not in ("step", "launched_by", "aten_op", "top_aten_op", "launch_start_us")])
    for column in ("registers_per_thread", "shared_memory_bytes", "threads_per_block",
                   "grid_blocks", "est_occupancy_pct", "bytes", "correlation"):
        frame[column] = pd.to_numeric(frame[column]).astype("Int64")
    calls = launches(parsed) if launch_table is None else launch_table
    calls = calls.drop_duplicates("correlation").set_index("correlation")
    linked = frame["correlation"].isin(calls.index).fillna(False).to_numpy(dtype=bool)
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


def _positions(steps: pd.Series) -> dict:
    """Row positions of each step, in row order (a stable sort: the tables' own order is kept)."""
    values = steps.to_numpy(dtype=float, na_value=np.nan)
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    keys, first = np.unique(ordered[~np.isnan(ordered)], return_index=True)
    bounds = list(first) + [int((~np.isnan(ordered)).sum())]
    return {int(k): order[bounds[i]:bounds[i + 1]] for i, k in enumerate(keys)}


def per_step(events: list[dict] | Parsed, annotation: str | None = ANNOTATION, gpu: pd.DataFrame | None = None,
             ops: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per step: GPU event counts, GPU time, CPU time and aten op count.

    CPU time is the annotation's span (summed, if it runs more than once in a step); with
    `annotation=None`, the step's own span on the CPU."""
    parsed = events if isinstance(events, Parsed) else parse(events)
    gpu = gpu_events(parsed) if gpu is None else gpu
    ops = cpu_ops(parsed, annotation) if ops is None else ops
    g_at, o_at = _positions(gpu["step"]), _positions(ops["step"])
    category = gpu["category"].to_numpy()
    g_start, g_end = gpu["start_us"].to_numpy(dtype=float), gpu["end_us"].to_numpy(dtype=float)
    g_dur = gpu["dur_us"].to_numpy(dtype=float)
    o_dur = ops["dur_us"].to_numpy(dtype=float)
    is_root = ((ops["depth"] == 0) & (ops["name"] == annotation)).to_numpy(dtype=bool)
    is_aten = ops["name"].astype(str).str.startswith("aten::").to_numpy(dtype=bool)
    empty = np.array([], dtype=int)
    rows = []
    for step, step_dur in zip(parsed.steps["step"], parsed.steps["dur_us"]):
        g, o = g_at.get(int(step), empty), o_at.get(int(step), empty)
        roots = o[is_root[o]]
        rows.append({
            "step": step,
            "gpu_events": len(g),
            "kernels": int((category[g] == "kernel").sum()),
            "memcpys": int((category[g] == "memcpy").sum()),
            "memsets": int((category[g] == "memset").sum()),
            "gpu_time_us": float(g_dur[g].sum()),
            "gpu_span_us": float(g_end[g].max() - g_start[g].min()) if len(g) else 0.0,
            "cpu_time_us": float(step_dur) if annotation is None else float(o_dur[roots].sum()),
            "aten_ops": int(is_aten[o].sum()),
        })
    return pd.DataFrame(rows, columns=PER_STEP_COLUMNS)
