"""Decode, read: a replay set's decode/ folder (written on a GPU by tools/record_decode.py) as
tables, and the few decisions the chapter draws from them, each in one function.

`DecodeSet.load(folder)` reads decode.json (what was run, the caller's timer of every point, the
failures) beside the Kineto traces (traces/*.json.gz) and ncu's CSVs (ncu/*.csv). From them:

* `points()`: one row per attention call recorded at decode (backend, batch, KV length), with its
  kernels per call and their names from the trace, the GPU's busy time per call, the caller's
  timer, the KV bytes it must read and the bandwidth that makes (`gbps`);
* `ncu()`: Nsight Compute's DRAM bytes and time per call at a few points, with its bandwidth;
* `steps()`: the decode step eager, as one CUDA graph replay and compiled, per token;
* `trap()`: is_causal=True at decode, backend by backend;
* `auto_picks()`, `split_switch()`: which backend SDPA runs, and where flash stops splitting the KV.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import pandas as pd

from ..core.bound import Bound, bound, median
from ..core.errors import TraceError
from ..core.profile import Profile

DECODE_DIR = "decode"
SUMMARY = "decode.json"
HEADS, HEAD_DIM = 32, 128
# a kernel that reduces the partial results of a split KV: flash's combine, cuDNN's lean
# reduction, the reduction Inductor writes after flex_decoding's template
COMBINE = re.compile(r"splitkv_combine|combine_kernel|lean_reduction|^triton_per_", re.I)
SPLIT_RULE_LIMIT = 212     # the rule: flash splits when batch × heads × query blocks < about 212
LAUNCHES = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx")
GRAPH_LAUNCH = "cudaGraphLaunch"
MODES = ("eager", "graph", "compiled")
MODE_WORDS = {"eager": "eager", "graph": "CUDA graph replay", "compiled": 'torch.compile(mode="reduce-overhead")'}


def short_kernel(name: str) -> str:
    """A kernel's name without its template arguments and namespaces: what a reader looks for."""
    name = re.sub(r"^void\s+", "", name).replace("(anonymous namespace)::", "")
    depth, out = 0, []
    for ch in name:
        depth += ch == "<"
        if depth == 0:
            out.append(ch)
        depth -= ch == ">" and depth > 0
    text = "".join(out).split("(")[0].strip()
    return text.split("::")[-1] or name[:60]


def is_combine(name: str) -> bool:
    return bool(COMBINE.search(short_kernel(name)))


@dataclass
class DecodeSet:
    """One GPU's decode recording (its folder and decode.json)."""

    folder: Path
    doc: dict
    _profiles: dict = field(default_factory=dict, repr=False)

    @classmethod
    def load(cls, folder: Path) -> "DecodeSet | None":
        """The decode recording in `folder` (a replay set's decode/), or None where it has none."""
        path = Path(folder) / SUMMARY
        if not path.is_file():
            return None
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError) as err:
            raise TraceError(f"{path} is not readable ({type(err).__name__}: {err}); record it again "
                             f"with `python tools/record_decode.py`.") from err
        return cls(Path(folder), doc)

    # --- what was recorded ---------------------------------------------------------------------
    @property
    def gpu(self) -> str:
        return str(self.doc.get("provenance", {}).get("gpu", "an unnamed GPU"))

    @property
    def sm_count(self) -> int | None:
        sm = self.doc.get("provenance", {}).get("sm_count")
        return int(sm) if isinstance(sm, (int, float)) else None

    def profile(self, record: dict) -> Profile:
        """The Kineto trace of a record, as the book's Profile (its CPU tables: every host op of a step)."""
        key = record["trace"]
        if key not in self._profiles:
            prof = Profile.load(self.folder / key)
            prof.annotation = None   # a decode trace has no attn_fwd region: each step is one call
            self._profiles[key] = prof
        return self._profiles[key]

    def _call_row(self, part: str, rec: dict) -> dict:
        prof = self.profile(rec)
        step = prof.forward_step
        names = [str(n) for n in prof.gpu_events(step).query("category == 'kernel'")["name"]]
        loop = rec.get("loop_us") or []
        row = {"part": part, "backend": rec["backend"], "batch": int(rec["batch"]), "kv": int(rec["kv"]),
               "kernels": len(names), "kernel_names": tuple(short_kernel(n) for n in names),
               "combine": next((short_kernel(n) for n in names if is_combine(n)), None),
               "busy_us": float(rec["busy_us"]), "kv_bytes": int(rec.get("kv_bytes") or kv_bytes(rec["batch"], rec["kv"])),
               "loop_us": median(loop) if loop else None, "loop_min_us": min(loop) if loop else None,
               "loop_max_us": max(loop) if loop else None, "error": rec.get("max_abs_error")}
        row["split"] = row["combine"] is not None
        row["gbps"] = row["kv_bytes"] / row["busy_us"] / 1e3 if row["busy_us"] > 0 else None
        return row

    @cached_property
    def _points(self) -> pd.DataFrame:
        rows = [self._call_row(part, rec) for part in ("sweep", "flex", "split") for rec in self.doc.get(part, [])]
        columns = ["part", "backend", "batch", "kv", "kernels", "kernel_names", "combine", "split", "busy_us",
                   "kv_bytes", "gbps", "loop_us", "loop_min_us", "loop_max_us", "error"]
        return pd.DataFrame(rows, columns=columns)

    def points(self, parts: tuple[str, ...] = ("sweep", "flex")) -> pd.DataFrame:
        """One row per recorded attention call at decode, of `parts` (the sweep, flex, the split batches)."""
        frame = self._points
        return frame[frame["part"].isin(parts)].reset_index(drop=True)

    def backends(self) -> list[str]:
        """The backends recorded in the sweep and flex's part, in the recording's order."""
        return list(dict.fromkeys(self.points()["backend"]))

    # --- Nsight Compute ------------------------------------------------------------------------
    @cached_property
    def _ncu(self) -> pd.DataFrame:
        from ..core.ncu_tables import in_base_units, read_csv
        rows = []
        for name, rel in (self.doc.get("ncu") or {}).get("tables", {}).items():
            path = self.folder / rel
            if not path.is_file():
                continue
            table = in_base_units(read_csv(path))
            backend, point = name.split("__", 1)
            batch, kv = (int(x[1:]) if x[0] == "b" else int(x[2:]) for x in point.split("_"))
            read = float(table["dram__bytes_read.sum"].sum())
            write = float(table["dram__bytes_write.sum"].sum())
            time_us = float(table["gpu__time_duration.sum"].sum()) / 1e3
            rows.append({"backend": backend, "batch": batch, "kv": kv, "kernels": len(table),
                         "read_bytes": read, "write_bytes": write, "time_us": time_us,
                         "kv_bytes": kv_bytes(batch, kv),
                         "gbps": (read + write) / time_us / 1e3 if time_us > 0 else None})
        return pd.DataFrame(rows, columns=["backend", "batch", "kv", "kernels", "read_bytes", "write_bytes",
                                           "time_us", "kv_bytes", "gbps"])

    def ncu(self) -> pd.DataFrame:
        """One row per (backend, batch, KV) measured under ncu: DRAM bytes read and written by the
        call's kernels, their time, and (read + written) / time in GB/s."""
        return self._ncu.copy()

    # --- the decode step -----------------------------------------------------------------------
    def steps(self) -> pd.DataFrame:
        """One row per way of running the decode step: time per token (the caller's timer), the
        GPU's busy time in it, kernels and launches per step, and its bound (`step_bound`)."""
        rows = []
        for rec in sorted(self.doc.get("step", []), key=lambda r: MODES.index(r["mode"]) if r["mode"] in MODES else 9):
            prof = self.profile(rec)
            step = prof.forward_step
            launches = prof.launches(step)
            names = launches["name"].astype(str) if "name" in launches else pd.Series(dtype=str)
            loop = rec.get("loop_us") or []
            b = step_bound(rec)
            rows.append({"mode": rec["mode"], "layers": int(rec["layers"]), "cache_len": int(rec["cache_len"]),
                         "kernels": int((prof.gpu_events(step)["category"] == "kernel").sum()),
                         "kernel_launches": int(names.isin(LAUNCHES).sum()),
                         "graph_launches": int((names == GRAPH_LAUNCH).sum()),
                         "us_per_token": median(loop) if loop else None, "busy_us": float(rec["busy_us"]),
                         "busy_pct": b.busy_pct if b else None, "bound": b.words if b else None,
                         "first_call_s": rec.get("first_call_seconds")})
        return pd.DataFrame(rows, columns=["mode", "layers", "cache_len", "kernels", "kernel_launches",
                                           "graph_launches", "us_per_token", "busy_us", "busy_pct", "bound",
                                           "first_call_s"])

    def step_record(self, mode: str) -> dict | None:
        return next((r for r in self.doc.get("step", []) if r["mode"] == mode), None)

    # --- the is_causal trap --------------------------------------------------------------------
    def trap(self) -> pd.DataFrame:
        """is_causal=True with one query: per backend and point, whether it ran, its kernels, and its
        max abs error against the right answer (math, is_causal=False) and the upper-left one."""
        rows = []
        for rec in self.doc.get("trap", []):
            row = {"backend": rec["backend"], "batch": int(rec["batch"]), "kv": int(rec["kv"]),
                   "ran": bool(rec.get("ran")), "kernel_names": (), "busy_us": None,
                   "error": rec.get("max_abs_error"), "error_upper_left": rec.get("max_abs_error_vs_upper_left"),
                   "refused": rec.get("error")}
            if row["ran"] and rec.get("trace"):
                prof = self.profile(rec)
                names = prof.gpu_events(prof.forward_step).query("category == 'kernel'")["name"]
                row["kernel_names"] = tuple(short_kernel(str(n)) for n in names)
                row["busy_us"] = float(rec["busy_us"])
            rows.append(row)
        return pd.DataFrame(rows, columns=["backend", "batch", "kv", "ran", "kernel_names", "busy_us", "error",
                                           "error_upper_left", "refused"])


def kv_bytes(batch: int, kv: int, heads: int = HEADS, head_dim: int = HEAD_DIM, element: int = 2) -> int:
    """Bytes of K and V one decode call must read: 2 × batch × heads × KV × head_dim × 2 (bf16)."""
    return 2 * int(batch) * heads * int(kv) * head_dim * element


def step_bound(rec: dict) -> Bound | None:
    """The book's one bound (helpers.core.bound) of a decode step: the caller's timer per token
    (median of its repeats, their spread) against the GPU's busy time per step."""
    loop = rec.get("loop_us") or []
    if not loop:
        return None
    return bound(median(loop), float(rec["busy_us"]), spread=(min(loop), max(loop)))


def pinned_backend_of(auto: tuple[str, ...], pinned: dict[str, tuple[str, ...]]) -> str | None:
    """The pinned backend that runs exactly the kernels SDPA's own choice ran (by short name), or None."""
    for backend, names in pinned.items():
        if sorted(names) == sorted(auto):
            return backend
    return None


def auto_picks(points: pd.DataFrame, auto: str, pinned: tuple[str, ...]) -> pd.DataFrame:
    """Per (batch, KV) of the sweep: the pinned backend whose kernels SDPA's choice (`auto`) ran."""
    rows = []
    for (batch, kv), group in points.groupby(["batch", "kv"], sort=True):
        by = {r.backend: r.kernel_names for r in group.itertuples()}
        if auto not in by:
            continue
        rows.append({"batch": batch, "kv": kv, "picked": pinned_backend_of(by[auto], {b: by[b] for b in pinned if b in by}),
                     "kernel_names": by[auto]})
    return pd.DataFrame(rows, columns=["batch", "kv", "picked", "kernel_names"])


def split_switch(points: pd.DataFrame, backend: str) -> pd.DataFrame:
    """Per KV length, `backend`'s calls by batch: split or not, and the rule's prediction
    (batch × heads × 1 query block < SPLIT_RULE_LIMIT)."""
    rows = []
    for r in points[points["backend"] == backend].sort_values(["kv", "batch"]).itertuples():
        rows.append({"kv": r.kv, "batch": r.batch, "ctas": r.batch * HEADS, "split": bool(r.split),
                     "rule_says_split": r.batch * HEADS < SPLIT_RULE_LIMIT, "kernels": r.kernels,
                     "combine": r.combine})
    return pd.DataFrame(rows, columns=["kv", "batch", "ctas", "split", "rule_says_split", "kernels", "combine"])


def first_unsplit_batch(switch: pd.DataFrame, kv: int) -> int | None:
    """The smallest recorded batch at which the backend runs one kernel (no split) at `kv`, where
    every smaller recorded batch split; None where it always splits or never does."""
    rows = switch[switch["kv"] == kv].sort_values("batch")
    if rows.empty or not rows["split"].any() or rows["split"].all():
        return None
    return int(rows[~rows["split"]]["batch"].iloc[0])
