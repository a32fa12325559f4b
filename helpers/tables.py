"""The tables a reader sees: one forward's kernels, ops and per-stage summaries."""
from __future__ import annotations

from typing import Sequence

import pandas as pd

from .profile import Profile

# kernel names are the lesson: never cut them short
pd.set_option("display.max_colwidth", None)
pd.set_option("display.max_columns", 40)
pd.set_option("display.width", 250)


def kernel_table(prof: Profile, step: int | None = None) -> pd.DataFrame:
    """One forward's GPU events with each name decoded and its launch arguments."""
    k = prof.kernels(step)
    return pd.DataFrame({
        "kernel": k["name"],
        "kind": k["kind"],
        "reads as": k["summary"],
        "launched by": k["launched_by"],
        "aten op": k["top_aten_op"].where(k["top_aten_op"] == k["aten_op"], k["top_aten_op"] + " → " + k["aten_op"]),
        "µs": k["dur_us"].round(1),
        "regs/thread": k["registers_per_thread"],
        "shared mem (B)": k["shared_memory_bytes"],
        "grid": k["grid"],
        "block": k["block"],
        "CUPTI occ. %": k["est_occupancy_pct"],
    }, index=pd.RangeIndex(1, len(k) + 1, name="#"))


def op_tree(prof: Profile, step: int | None = None, min_us: float = 0.0) -> pd.DataFrame:
    """The aten ops inside attn_fwd, indented by depth, with total and self time."""
    ops = prof.cpu_ops(step)
    ops = ops[ops["dur_us"] >= min_us]
    return pd.DataFrame({
        "op": ["\u2003" * d + n for d, n in zip(ops["depth"], ops["name"])],
        "depth": ops["depth"], "µs": ops["dur_us"].round(1), "self µs": ops["self_us"].round(1),
    }).reset_index(drop=True)


def summary_table(profiles: Sequence[Profile]) -> pd.DataFrame:
    """Per-forward figures of each stage: counts, GPU time, CPU time, the independent timer."""
    rows = []
    for prof in profiles:
        s = prof.summary()
        rows.append({"stage": prof.stage, "GPU events": s["gpu_events"], "kernels": s["kernels"],
                     "memcpy": s["memcpys"], "memset": s["memsets"],
                     "GPU µs": round(s["gpu_time_us"], 1), "CPU µs": round(s["cpu_time_us"], 1),
                     "do_bench µs": None if s["do_bench_us"] is None else round(s["do_bench_us"], 1),
                     "aten ops": s["aten_ops"]})
    return pd.DataFrame(rows).set_index("stage")
