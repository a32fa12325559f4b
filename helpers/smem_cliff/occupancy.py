"""The shared-memory cliff experiment read from its trace (helpers.smem_cliff.sources records it):
one row per kernel launched in a range of the experiment, with Kineto's occupancy figure
recomputed by the calculator and the theoretical occupancy with the opt-in."""
from __future__ import annotations

from .core import RANGE_EX
from ..occupancy.calculator import kineto_estimated_occupancy_pct, occupancy


def summarize_smem_cliff(events: list[dict], capability: str | None = None,
                         sm_count: int | None = None) -> list[dict]:
    """One row per kernel launched inside a record_function range of the experiment.

    Kernels are tied to their range by Kineto's "External id" (the innermost CPU op around the
    launch is the range itself), falling back to the launch call's correlation id. Given the
    capability and SM count, each row also carries the Kineto figure recomputed by
    helpers.occupancy and the theoretical occupancy with the opt-in.
    """
    ranges = {}
    spans = []
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "user_annotation":
            name = e.get("name", "")
            if name.startswith("smem=") or name == RANGE_EX:
                ext = (e.get("args") or {}).get("External id")
                if ext is not None:
                    ranges[ext] = name
                spans.append((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)),
                              e.get("tid"), name))
    by_correlation = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver"):
            ts = float(e["ts"])
            for start, end, tid, name in spans:
                if start <= ts <= end and e.get("tid") == tid:
                    by_correlation[(e.get("args") or {}).get("correlation")] = name
    rows = []
    for e in events:
        if e.get("ph") != "X" or e.get("cat") != "kernel":
            continue
        args = e.get("args") or {}
        name = ranges.get(args.get("External id")) or by_correlation.get(args.get("correlation"))
        if name is None:
            continue
        block = args.get("block") or [0, 0, 0]
        grid = args.get("grid") or [0, 0, 0]
        row = {"range": name, "kernel": e.get("name"), "dur_us": e.get("dur"),
               "grid": grid, "block": block, "registers": args.get("registers per thread"),
               "shared_memory": args.get("shared memory"),
               "est_occupancy_pct": args.get("est. achieved occupancy %")}
        if capability is not None and sm_count:
            threads = block[0] * block[1] * block[2]
            blocks = grid[0] * grid[1] * grid[2]
            row["kineto_recomputed_pct"] = kineto_estimated_occupancy_pct(
                capability, threads, row["registers"], row["shared_memory"], blocks, sm_count)
            row["theoretical_optin_pct"] = 100 * occupancy(
                capability, threads, row["registers"], row["shared_memory"]).occupancy
        rows.append(row)
    return rows
