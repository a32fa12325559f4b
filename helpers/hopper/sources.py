"""The Hopper chapter's recordings, read: notebooks/traces/<gpu>/hopper/ (tools/record_hopper.py).

`load(gpu)` gives a `Recording`: one row per kernel of every recorded part (the forwards of the
stages ncu records, the training backwards), its instruction families executed and held, its
launch and `setmaxnreg`'s register counts. Where a set has no hopper/ folder, the Recording is
empty and says why; `tensor_pipes(gpu)` then still reads the warp-level and warpgroup MMA
counters the set's ncu/ tables hold (the chapter's fallback). Live, a page shows the recording of
this GPU where one was made on a GPU of its name (measuring every opcode takes ncu's instrumented
replay of every kernel, minutes), else the configured set's, saying so.
"""
from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..core.errors import TraceError
from ..core.ncu_tables import kernels, read_csv, read_csv_text, recording_name
from ..core.replay_set import ReplaySet, gpu_slug
from ..core.stages import DEFAULT_SHAPE, stages_where
from . import core

RECORD_COMMAND = "python tools/record_hopper.py --out notebooks/traces/<gpu>/.."


@dataclass
class Recording:
    """One GPU's Hopper recording: the kernels table (empty where none), its provenance, and the
    reason a reader is shown where something is missing."""

    gpu: str
    table: pd.DataFrame
    provenance: dict = field(default_factory=dict)
    missing: str | None = None    # one reader-facing line: what is not recorded, and why
    source: str = ""              # where the table comes from, in words

    @property
    def empty(self) -> bool:
        return self.table.empty


def _gz(path: Path) -> str | None:
    if not path.exists():
        return None
    with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
        return f.read()


def folder(gpu: str | None = None) -> Path:
    return ReplaySet.configured(gpu).dir("hopper")


def _part(folder_: Path, part: str, info: dict) -> pd.DataFrame:
    raw_text = _gz(folder_ / f"{part}.raw.csv.gz")
    if raw_text is None:
        raise TraceError(f"{folder_ / part}.raw.csv.gz is missing")
    raw = core.aggregate_cells(read_csv_text(raw_text, folder_ / f"{part}.raw.csv.gz"))
    launch = kernels(raw)
    ranges_text = _gz(folder_ / f"{part}.ranges.csv.gz")
    ranges = core.aggregate_cells(read_csv_text(ranges_text)) if ranges_text else None
    stages = None
    if ranges is None:
        log = folder_ / f"{part}.stages.json"
        stages = json.loads(log.read_text()) if log.exists() else info.get("stages")
    jobs = core.jobs_of(raw, ranges, stages)
    opcodes_text = _gz(folder_ / f"{part}.opcodes.csv.gz")
    opcodes = core.opcodes_by_kernel(core.read_rows(opcodes_text)) if opcodes_text else None
    sass_text = _gz(folder_ / f"{part}.sass.csv.gz")
    sass_rows = core.read_rows(sass_text) if sass_text else []
    listing = core.listing_by_kernel(sass_rows) if sass_text else None
    return core.part_table(part, raw, launch, jobs, opcodes, listing, core.listing_names(sass_rows))


def _part_words(part: str) -> str:
    """A recorded part's name as a reader says it: 'forward_unfused__b8_...' -> 'the unfused forwards'."""
    head = part.split("__", 1)[0]
    if head == "backward":
        return "the training backwards"
    if head.startswith("forward_"):
        return f"the {head.removeprefix('forward_')} forwards"
    return head.replace("_", " ")


def load(gpu: str | None = None) -> Recording:
    """The Hopper recording of `gpu`'s replay set (default: the configured one)."""
    rs = ReplaySet.configured(gpu)
    here = rs.dir("hopper")
    prov_path = here / "provenance.json"
    if not prov_path.exists():
        counted = rs.path("ncu", "provenance.json")
        stand_in = json.loads(counted.read_text()) if counted.exists() else {}
        name = stand_in.get("gpu", rs.gpu)   # the GPU's own name for the reader, the set's folder else
        return Recording(rs.gpu, tensor_pipes(rs.gpu), stand_in, missing=(
            f"The {name} set holds no per-opcode recording (a count of every SASS instruction each "
            f"kernel executed, minutes of Nsight Compute replay on the GPU): the tensor-pipe counters "
            f"of its ncu tables stand in, "
            f"and the TMA, setmaxnreg and exponent columns stay empty."),
            source=f"the {name}'s Nsight Compute tables")
    provenance = json.loads(prov_path.read_text())
    tables, failed = [], dict(provenance.get("failed", {}))
    for part in sorted(p.name.removesuffix(".raw.csv.gz") for p in here.glob("*.raw.csv.gz")):
        try:
            tables.append(_part(here, part, provenance.get("parts", {}).get(part, {})))
        except (TraceError, ValueError, KeyError) as err:
            failed[part] = f"{type(err).__name__}: {err}"
    table = pd.concat([t for t in tables if not t.empty], ignore_index=True) if any(not t.empty for t in tables) \
        else pd.DataFrame()
    missing = None
    if failed:
        missing = ("Not in this set's per-opcode recording: " + " and ".join(_part_words(p) for p in sorted(failed)) +
                   "; their kernels are not in the tables and charts below.")
    table.attrs = {"gpu": rs.gpu, "device": provenance.get("gpu", rs.gpu)}
    return Recording(rs.gpu, table, provenance, missing,
                     source=f"the {provenance.get('gpu', rs.gpu)}'s per-opcode recording")


def tensor_pipes(gpu: str | None = None, stages=None) -> pd.DataFrame:
    """Per stage's kernels at the article's shape, the warp-level (HMMA) and warpgroup (GMMA)
    tensor instructions the set's ncu/ tables hold: the fallback of a set with no hopper/ folder."""
    rs = ReplaySet.configured(gpu)
    rows = []
    for stage in stages or stages_where(has_ncu=True):
        path = rs.dir("ncu") / f"{recording_name(stage, DEFAULT_SHAPE)}.csv"
        if not path.exists():
            continue
        k = kernels(read_csv(path))
        ops = [c for c in k.columns if c.startswith("sm__ops_path_tensor_op_hmma_src_") and "sparsity" not in c]
        for i, r in k.iterrows():
            rows.append({"direction": "forward", "stage": stage, "kernel_id": i, "kernel": r["kernel"],
                         **core.launch_shape(r["threads"]), "registers": int(r["registers"]),
                         "time_us": float(r["time_us"]),
                         # on Hopper the hmma pipe counter counts the warpgroup MMAs too
                         "HMMA": core.warp_mma_of_pipes(r.get(core.PIPE_HMMA), r.get(core.PIPE_GMMA),
                                                        sum(float(r[c] or 0) for c in ops)),
                         "HGMMA": r.get(core.PIPE_GMMA),
                         "pipe hmma": r.get(core.PIPE_HMMA), "pipe gmma": r.get(core.PIPE_GMMA)})
    return pd.DataFrame(rows)


def fetch(mode: str = "auto", gpu: str | None = None) -> Recording:
    """The page's recording under the session's policy: replay, `gpu`'s set; live, this GPU's own
    set where one was recorded on a GPU of its name, else the configured set, saying which."""
    from .. import sources as _sources  # noqa: F401  (the layer's package: nothing is run)
    from ..sources.modes import resolve_mode
    if gpu is None and resolve_mode(mode) == "live":
        import torch
        name = torch.cuda.get_device_name(0)
        own = gpu_slug(name)
        if ReplaySet(own).dir("hopper").joinpath("provenance.json").exists():
            rec = load(own)
            rec.source = "this GPU's own recording: per-opcode counts take minutes of Nsight Compute replay"
            return rec
        rec = load(None)
        rec.source = (f"the {rec.provenance.get('gpu', rec.gpu)} recording: this GPU ({name}) has none; "
                      f"counting every instruction of every kernel takes minutes of Nsight Compute replay")
        return rec
    return load(gpu)
