"""The training step read back: which GPU events the forward and the backward launched, which
autograd node launched each backward one, and what the memory recordings say.

Pure functions of a `Profile` and of the recordings' contents, live and replayed alike (the
files are read by helpers/training/sources_modes.py):
- `step_events(prof)`: one step's GPU events with `phase` ("forward" inside attn_fwd, "backward"
  inside attn_bwd, by the launch call's host time) and `node` (the autograd node whose
  `autograd::engine::evaluate_function: <node>` op holds the launch, on autograd's thread);
- `ladder(memory)`, `max_seq(memory)`, `growth(table)`, `fit(table)`: the peak-memory sweep, the
  largest seq per stage, the growth per doubling of seq, and the quadratic + linear model;
- `read_snapshot(data)`: PyTorch's memory snapshot read from its pickle WITHOUT running code: only
  the data a snapshot holds (dicts, lists, tuples, strings, numbers, booleans, None) is admitted,
  and a pickle that names any class or function (how a pickle runs code) is refused;
- `snapshot_timeline(data, marks)`: allocated bytes over one step from PyTorch's memory snapshot;
- `split_ncu(table, stages)`: Nsight Compute's table of every stage's backward, split per stage.
"""
from __future__ import annotations

import io
import pickle
import re

import numpy as np
import pandas as pd

from ..core.errors import TraceError
from ..core.profile import Profile
from ..core import quantities as q
from ..core.stages import Shape

FORWARD, BACKWARD = "attn_fwd", "attn_bwd"
NODE = re.compile(r"^autograd::engine::evaluate_function: (?P<node>.+)$")
RECORD_COMMAND = "python tools/record_training.py"
MARKER_KERNEL = "spin_kernel"


# --- the step's GPU events, forward and backward -------------------------------------------------

def regions(prof: Profile, step: int | None = None) -> pd.DataFrame:
    """The attn_fwd and attn_bwd regions of one step (host time), from the raw events."""
    step = prof.forward_step if step is None else step
    span = prof._parsed.steps.set_index("step").loc[step]
    rows = [{"name": e["name"], "start_us": float(e["ts"]), "end_us": float(e["ts"]) + float(e["dur"])}
            for e in prof.events if e.get("ph") == "X" and e.get("cat") == "user_annotation"
            and e.get("name") in (FORWARD, BACKWARD)
            and span["start_us"] <= float(e["ts"]) <= span["end_us"]]
    return pd.DataFrame(rows, columns=["name", "start_us", "end_us"])


def node_of(op: str | None) -> str | None:
    """`autograd::engine::evaluate_function: MmBackward0` -> `MmBackward0`; None for other ops."""
    m = NODE.match(op) if isinstance(op, str) else None
    return m.group("node") if m else None


def step_events(prof: Profile, step: int | None = None) -> pd.DataFrame:
    """One step's GPU events, decoded, with `phase`, `node` and the launching thread's name."""
    table = prof.kernels(step)
    reg = regions(prof, step)
    phase = np.full(len(table), "outside", dtype=object)
    t = table["launch_start_us"].to_numpy(dtype=float)
    for r in reg.itertuples():
        inside = (t >= r.start_us) & (t <= r.end_us)
        phase[inside] = "forward" if r.name == FORWARD else "backward"
    table["phase"] = phase
    launches = prof.launches(step).drop_duplicates("correlation").set_index("correlation")
    tids = table["correlation"].map(launches["tid"]) if len(launches) else pd.Series(None, index=table.index)
    # the thread that ran the forward's annotation is the main (Python) thread; Kineto names
    # autograd's thread "python" too, so it is told apart by its id
    main = {e.get("tid") for e in prof.events if e.get("ph") == "X" and e.get("cat") == "user_annotation"
            and e.get("name") == FORWARD}
    table["tid"] = list(tids)
    table["thread"] = [None if tid is None or tid != tid else
                       f"main thread ({tid})" if tid in main else f"another thread ({tid})" for tid in tids]
    table["node"] = [node_of(op) for op in table["top_aten_op"]]
    return table


def phase_counts(prof: Profile) -> dict:
    """Per phase: GPU events, kernels, GPU time, and how many launches were driver calls."""
    events = step_events(prof)
    out = {}
    for phase in ("forward", "backward"):
        e = events[events["phase"] == phase]
        out[phase] = {"gpu_events": len(e), "kernels": int((e["category"] == "kernel").sum()),
                      "gpu_time_us": float(e["dur_us"].sum()),
                      "driver_launches": int(e["launched_by"].astype(str).str.startswith("cu").sum()
                                             - e["launched_by"].astype(str).str.startswith("cuda").sum()),
                      "threads": sorted({t for t in e["thread"] if t}),
                      "nodes": sorted({n for n in e["node"] if n})}
    return out


def by_node(prof: Profile) -> pd.DataFrame:
    """The backward's GPU events grouped by the autograd node that launched them, in launch order."""
    e = step_events(prof)
    e = e[e["phase"] == "backward"].copy()
    e["node"] = e["node"].fillna("(no autograd node)")
    rows = []
    for node, g in e.groupby("node", sort=False):
        rows.append({"autograd node": node, "GPU events": len(g),
                     "kernels": " · ".join(dict.fromkeys(g["summary"])),
                     "GPU µs": round(float(g["dur_us"].sum()), 1),
                     "launched by": ", ".join(sorted(set(g["launched_by"].dropna())))})
    return pd.DataFrame(rows, columns=["autograd node", "GPU events", "kernels", "GPU µs", "launched by"])


# --- memory ----------------------------------------------------------------------------------------

def ladder(memory: dict) -> pd.DataFrame:
    """Every try of the seq sweep: stage, seq, status, peak bytes above the inputs, held bytes."""
    rows = [r for r in memory.get("ladder", []) if "seq" in r]
    cols = ["stage", "seq", "batch", "heads", "head_dim", "status", "peak_bytes", "held_bytes",
            "inputs_bytes", "saved_seq_by_seq", "step_seconds", "stopped"]
    return pd.DataFrame(rows).reindex(columns=cols)


def max_seq(memory: dict) -> pd.DataFrame:
    """Per stage: the largest seq whose training step ran, and what ended the search there
    ("out of memory" at the next doubling, or the search's cap or time limit: a lower bound)."""
    table = ladder(memory)
    rows = []
    for stage, g in table.groupby("stage", sort=False):
        ok = g[g["status"] == "ok"]
        last = g.iloc[-1]
        if last["status"] == "oom":
            why, bound = f"out of memory at seq {int(last['seq'])}", "largest that fits"
        elif last["status"] == "error":
            why, bound = "error at seq {}".format(int(last["seq"])), "last that ran"
        else:
            why = {"cap": "the search's cap", "time": "the search's time limit"}.get(last.get("stopped"), "the search stopped")
            bound = "at least (fits, search stopped)"
        rows.append({"stage": stage, "max_seq": int(ok["seq"].max()) if len(ok) else None,
                     "peak_at_max_bytes": float(ok["peak_bytes"].iloc[-1]) if len(ok) else None,
                     "bound": bound, "ended by": why})
    return pd.DataFrame(rows, columns=["stage", "max_seq", "peak_at_max_bytes", "bound", "ended by"])


def growth(table: pd.DataFrame) -> pd.DataFrame:
    """Per stage and doubling of seq: peak(2S) / peak(S), from the recorded peaks."""
    rows = []
    ok = table[table["status"] == "ok"].sort_values(["stage", "seq"])
    for stage, g in ok.groupby("stage", sort=False):
        seqs, peaks = g["seq"].to_numpy(), g["peak_bytes"].to_numpy(dtype=float)
        for i in range(1, len(g)):
            if seqs[i] == 2 * seqs[i - 1] and peaks[i - 1] > 0:
                rows.append({"stage": stage, "seq": int(seqs[i]), "ratio": peaks[i] / peaks[i - 1]})
    return pd.DataFrame(rows, columns=["stage", "seq", "ratio"])


def fit(table: pd.DataFrame) -> pd.DataFrame:
    """Per stage, peak ≈ a·(B·H·S²) + b·(B·H·S·D) by least squares (a, b ≥ 0): a is bytes per
    score element (2 for one bf16 S×S matrix), b bytes per element of q. With the fitted model's
    largest relative miss over the recorded seqs."""
    rows = []
    ok = table[table["status"] == "ok"]
    for stage, g in ok.groupby("stage", sort=False):
        s = g["seq"].to_numpy(dtype=float)
        bh = (g["batch"] * g["heads"]).to_numpy(dtype=float)
        quad, lin = bh * s**2, bh * s * g["head_dim"].to_numpy(dtype=float)
        y = g["peak_bytes"].to_numpy(dtype=float)
        # non-negative least squares over two columns: the full solve, else the better one alone
        candidates = []
        coef, *_ = np.linalg.lstsq(np.stack([quad, lin], 1), y, rcond=None)
        if (coef >= 0).all():
            candidates.append((coef[0], coef[1]))
        candidates.append((float(quad @ y / (quad @ quad)), 0.0))
        candidates.append((0.0, float(lin @ y / (lin @ lin))))
        best = min(candidates, key=lambda c: float(np.sum((c[0] * quad + c[1] * lin - y) ** 2)))
        model = best[0] * quad + best[1] * lin
        rows.append({"stage": stage, "bytes_per_score": best[0], "bytes_per_q_element": best[1],
                     "max_relative_miss": float(np.max(np.abs(model - y) / y)), "points": len(g)})
    return pd.DataFrame(rows, columns=["stage", "bytes_per_score", "bytes_per_q_element",
                                       "max_relative_miss", "points"])


def model_peak(row, batch: int, heads: int, seq, head_dim: int):
    return row["bytes_per_score"] * batch * heads * np.asarray(seq, dtype=float) ** 2 + \
        row["bytes_per_q_element"] * batch * heads * np.asarray(seq, dtype=float) * head_dim


def limit_seq(memory: dict) -> pd.DataFrame:
    """Per stage, the seq at which the fitted model's peak reaches the GPU's whole memory: where
    it would run out if seq grew continuously (the search only tries powers of two, so several
    stages can fail at the same doubling). `model_limit_seq` counts the peak above the inputs
    alone; `wall_seq` adds the inputs the step reads, q, k, v and dO (4 bf16 tensors of B·H·S·D:
    8 bytes per element of q), which are on the GPU too."""
    total = float(memory.get("provenance", {}).get("total_memory_bytes") or 0)
    table = ladder(memory)
    rows = []
    for r in fit(table).itertuples(index=False):
        g = table[(table["stage"] == r.stage) & (table["status"] == "ok")]
        bh, d = float(g["batch"].iloc[0] * g["heads"].iloc[0]), float(g["head_dim"].iloc[0])
        a, b = r.bytes_per_score * bh, r.bytes_per_q_element * bh * d
        # a·S² + b·S = total
        s = (-b + np.sqrt(b * b + 4 * a * total)) / (2 * a) if a > 0 else total / b if b > 0 else np.inf
        per_q = q.inputs_bytes(Shape(batch=1, heads=1, seq=1, head_dim=1))   # 8 bytes per element of q
        wall = q.wall_seq(r.bytes_per_score, r.bytes_per_q_element + per_q, int(g["batch"].iloc[0]),
                          int(g["heads"].iloc[0]), int(d), total)
        rows.append({"stage": r.stage, "model_limit_seq": float(s), "wall_seq": wall})
    return pd.DataFrame(rows, columns=["stage", "model_limit_seq", "wall_seq"])


# --- the memory snapshot ------------------------------------------------------------------------

# what `torch.cuda.memory._snapshot()` holds: plain data, which pickle writes with its own opcodes
# (no class, no function: a pickle runs code only through the classes and functions it names)
SNAPSHOT_TYPES = (dict, list, tuple, str, bytes, int, float, bool, type(None))


class _Refused(Exception):
    pass


class _SnapshotUnpickler(pickle.Unpickler):
    """An unpickler that admits no class and no function: `find_class` (every GLOBAL, STACK_GLOBAL
    and extension code goes through it) and persistent ids refuse, so nothing in the file runs."""

    def find_class(self, module, name):
        raise _Refused(f"it names {module}.{name}")

    def persistent_load(self, pid):
        raise _Refused("it names a persistent object")


def read_snapshot(data: bytes, where: str = "The memory snapshot") -> dict:
    """PyTorch's memory snapshot (`_dump_snapshot`'s pickle) as plain data, read without running
    any code from it: a pickle that names a class or a function (a snapshot never does; a hostile
    one must, to run code) is refused with a TraceError, as is anything but a dict of plain data."""
    try:
        snap = _SnapshotUnpickler(io.BytesIO(data)).load()
    except _Refused as err:
        raise TraceError(f"{where} was refused: {err}, and a memory snapshot holds only plain data (dicts, lists, "
                         f"strings, numbers), so reading it would run code from the recording. Nothing of it was "
                         f"run. Use a snapshot you recorded (`{RECORD_COMMAND}`), or restore the replay set's.") from None
    except Exception as err:  # truncated, not a pickle at all
        raise TraceError(f"{where} is not a readable memory snapshot ({type(err).__name__}: {err}). "
                         f"Record it again with `{RECORD_COMMAND}`.") from None
    stack = [snap]
    while stack:
        x = stack.pop()
        if type(x) not in SNAPSHOT_TYPES:
            raise TraceError(f"{where} holds a {type(x).__name__}, which no memory snapshot holds. "
                             f"Record it again with `{RECORD_COMMAND}`.")
        if isinstance(x, dict):
            stack += [*x.keys(), *x.values()]
        elif isinstance(x, (list, tuple)):
            stack += x
    if not isinstance(snap, dict):
        raise TraceError(f"{where} is a {type(snap).__name__}, not a memory snapshot (a dict). "
                         f"Record it again with `{RECORD_COMMAND}`.")
    return snap

def snapshot_timeline(data: bytes, marks: dict | None = None) -> pd.DataFrame:
    """Allocated bytes after each allocator event of one step, from `_dump_snapshot`'s pickle:
    `alloc` adds a block, `free_completed` removes it (what memory_viz's "Active Memory Timeline"
    draws). The start is what was allocated before the history began (the inputs), worked out
    from the blocks still allocated at the end. `phase` from the recorded marks."""
    snap = read_snapshot(data)
    traces = [t for t in snap.get("device_traces", []) if t]
    if not traces:
        raise TraceError("The memory snapshot holds no allocator events.")
    trace = traces[0]
    end_allocated = sum(b["size"] for seg in snap.get("segments", []) for b in seg.get("blocks", [])
                        if b.get("state") == "active_allocated")
    deltas = [(e["size"] if e["action"] == "alloc" else -e["size"]) if e["action"] in ("alloc", "free_completed") else 0
              for e in trace]
    start = end_allocated - sum(deltas)
    rows, level = [], start
    t0 = (marks or {}).get("forward_us", trace[0].get("time_us", 0))
    for e, d in zip(trace, deltas):
        if not d:
            continue
        level += d
        t = e.get("time_us", 0)
        phase = "forward" if marks and t < marks.get("backward_us", float("inf")) else "backward"
        frames = e.get("frames") or []
        where = next((f"{f['filename'].rsplit('/', 1)[-1]}:{f['line']} {f['name']}" for f in frames
                      if "helpers/" in f.get("filename", "") or "torch/" not in f.get("filename", "")), "")
        rows.append({"time_ms": (t - t0) / 1e3, "allocated_bytes": level, "action": e["action"],
                     "size_bytes": e["size"], "phase": phase if marks else None, "where": where})
    return pd.DataFrame(rows, columns=["time_ms", "allocated_bytes", "action", "size_bytes", "phase", "where"])


# --- Nsight Compute: the backwards ----------------------------------------------------------------

def split_ncu(table: pd.DataFrame, stages: list[str]) -> dict[str, pd.DataFrame]:
    """Each stage's backward kernels from ncu's one table of all of them (helpers.sources.ncu.kernels
    rows): the stages in the order the recording's log lists, each after one marker kernel
    (torch.cuda._sleep's spin_kernel, dropped)."""
    marker = table["kernel"].astype(str).str.contains(MARKER_KERNEL)
    starts = list(np.flatnonzero(marker.to_numpy()))
    if len(starts) != len(stages):
        raise TraceError(f"{table.attrs.get('source', 'The ncu table')} has {len(starts)} marker kernels for "
                         f"{len(stages)} stages: record it again with `{RECORD_COMMAND}`.")
    out = {}
    for i, stage in enumerate(stages):
        end = starts[i + 1] if i + 1 < len(starts) else len(table)
        part = table.iloc[starts[i] + 1:end].reset_index(drop=True)
        part.attrs = dict(table.attrs)
        out[stage] = part
    return out
