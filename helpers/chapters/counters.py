"""Nsight Compute's counters, as the pages read them: collected live (ncu in a subprocess, with a
progress bar) where ncu runs and the GPU permits counters, else replayed from the recordings of
the replay set, with the reason; the work they count turned into FLOPs by two calibration
matmuls; and the DRAM bytes each forward moved, beside the bytes derived from the shape.

    from helpers.chapters import counters
    c = counters.collect(["naive", "sdpa_flash"])     # prints where the counters come from
    c.stage("sdpa_flash")                             # one row per kernel (helpers.sources.ncu.kernels)
    counters.hbm_measured(c, profiles)                # measured and modelled bytes per forward
"""
from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd

from ..sources import ncu
from ..sources.modes import resolve_mode
from ..core.profile import Profile, TraceError
from ..core import config
from ..core.stages import DEFAULT_SHAPE, Shape
from .claims import hbm_traffic
from ..views.prose import glue

MB = 1e6
COPIES = "copies MB (trace)"   # memcpy and memset: no kernel, so no ncu row; their bytes come from the trace
# the work counters that carry FLOPs, one per family so nothing is counted twice: the tensor
# pipe's ops of every instruction (HMMA and Hopper's HGMMA alike) by source type, and FFMA
TENSOR_TOTAL = re.compile(r"^sm__ops_path_tensor_src_(?P<src>[a-z0-9]+)(_dst_(?P<dst>[a-z0-9]+))?\.sum$")
FFMA = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"


@dataclass
class Counters:
    """The counters of one forward of each (stage, shape), all live or all recorded."""

    mode: str                                    # "live" or "replay"
    gpu: str                                     # the GPU they were read on
    provenance: dict
    kernels: dict[tuple[str, str], pd.DataFrame]  # (stage, shape key) -> ncu.kernels()
    calibration: dict[str, pd.DataFrame]         # calibration name -> ncu.kernels()
    reason: str = ""                             # why replay, when it is
    notes: list[str] = field(default_factory=list)
    default_shape: Shape = DEFAULT_SHAPE

    def stage(self, stage: str, shape: Shape = DEFAULT_SHAPE) -> pd.DataFrame:
        try:
            return self.kernels[(stage, shape.key)]
        except KeyError:
            raise TraceError(f"No counters of {stage} at {shape.key} were collected; pass it to "
                             f"counters.collect().") from None

    @property
    def stages(self) -> list[str]:
        return list(dict.fromkeys(s for s, _ in self.kernels))

    def banner(self) -> str:
        p = self.provenance
        if self.mode == "live":
            return (f"Measured live with {ncu.short_version(p.get('ncu'))} on {self.gpu}: "
                    f"{len(self.kernels)} forwards, one ncu subprocess each.")
        return (f"Replaying Nsight Compute's counters recorded on {p.get('gpu', self.gpu)} "
                f"(sm {p.get('capability', '?')}, {p.get('sm_count', '?')} SMs) on {p.get('date', '?')[:10]} "
                f"with {ncu.short_version(p.get('ncu'))} and torch {p.get('torch', '?')}.\nNot live here: {self.reason}.")


# ----------------------------------------------------------------------------------- collecting

def _calibrations(prov: dict) -> list[dict]:
    return list(prov.get("calibration", []))


def _replay(jobs: list[tuple[str, Shape]], gpu: str, reason: str) -> Counters:
    prov = ncu.provenance(gpu)
    kernels = {(s, sh.key): ncu.load(s, sh, gpu) for s, sh in jobs}
    calibration = {}
    for c in _calibrations(prov):
        table = ncu.recording_dir(gpu) / f"{c['name']}.csv"
        try:
            calibration[c["name"]] = ncu.kernels(ncu.read_csv(table))
        except (TraceError, ValueError, KeyError) as err:
            raise TraceError(f"The calibration matmul {table} is missing or corrupt ({err}). Restore it "
                             f"with `git checkout -- {table}`, or record it on a GPU with ncu: "
                             f"`{ncu.record_command()}`.") from err
    return Counters("replay", prov.get("gpu", gpu), prov, kernels, calibration, reason)


def _progress(total: int):
    """An ipywidgets progress bar, shown only live (the static book has nothing to wait for)."""
    import ipywidgets as w
    from IPython.display import display
    bar = w.IntProgress(min=0, max=total, description="ncu")
    label = w.HTML()
    display(w.HBox([bar, label]))
    return bar, label


def cache_dir(gpu: str, torch_version: str) -> Path:
    """Where live measurements of this GPU and torch are kept, so that the next page (or the next
    run) reuses them instead of running ncu again: $ATTN_PROFILED_NCU_CACHE, else the temp folder."""
    return config.cache_root() / re.sub(r"[^a-z0-9.]+", "-", f"{gpu} torch {torch_version}".lower()).strip("-")


def _measured(name: str, out: Path, measure) -> tuple[pd.DataFrame, bool]:
    """The kernels of one live recording: from the cache if this machine made it already."""
    table = out / f"{name}.csv"
    if table.exists():
        try:
            result = ncu.kernels(ncu.read_csv(table))
            report = out / f"{name}.ncu-rep"
            result.attrs |= {"csv": table, "report": report if report.exists() else None, "name": name}
            return result, True
        except (TraceError, ValueError, KeyError):
            pass   # a broken cache entry is measured again
    return measure(), False


def _live(stage_jobs: list[tuple[str, Shape]], gpu: str) -> Counters:
    import torch

    from ..sources.capture import driver_version
    props = torch.cuda.get_device_properties(0)
    out = cache_dir(props.name, torch.__version__)
    recorded = ncu.provenance(gpu) if (ncu.recording_dir(gpu) / "provenance.json").exists() else {}
    calibrations = _calibrations(recorded) or [
        {"name": ncu.calibration_name(d, m, n, k), "dtype": d, "m": m, "n": n, "k": k, "flops": 2 * m * n * k}
        for d, m, n, k in (("bfloat16", 4096, 4096, 4096), ("float32", 2048, 2048, 2048))]
    jobs = [("calibration", c) for c in calibrations] + [("stage", job) for job in stage_jobs]
    bar, label = _progress(len(jobs))
    kernels, calibration, reused = {}, {}, 0
    for kind, job in jobs:
        if kind == "calibration":
            label.value = f"<small>{job['name']}</small>"
            table, cached = _measured(job["name"], out, lambda: ncu.measure_calibration(
                job["dtype"], job["m"], job["n"], job["k"], out))
            calibration[job["name"]] = table
        else:
            stage, shape = job
            label.value = f"<small>{stage} · {shape.key}</small>"
            try:
                table, cached = _measured(ncu.recording_name(stage, shape), out,
                                          lambda: ncu.measure_stage(stage, shape, out))
            except ncu.CountersUnavailable:
                raise
            except RuntimeError as err:
                # one GPU per page: a stage that can't run here sends every stage to the recording
                raise ncu.CountersUnavailable(f"{stage} did not run under ncu on {props.name} "
                                              f"({str(err)[:300]})") from err
            kernels[(stage, shape.key)] = table
        reused += cached
        bar.value += 1
    bar.description, label.value = "done", f"<small>reports in {out}</small>"
    prov = {"gpu": props.name, "capability": f"{props.major}.{props.minor}",
            "sm_count": props.multi_processor_count, "driver": driver_version(),
            "ncu": ncu.version(ncu.find_ncu()), "torch": torch.__version__, "folder": str(out),
            "calibration": calibrations}
    notes = [f"{reused} of the {len(jobs)} recordings were this machine's from an earlier run, in {out}"] if reused else []
    return Counters("live", props.name, prov, kernels, calibration, notes=notes)


def collect(stages: Sequence[str], sweep: Sequence[Shape] = (), sweep_stages: Sequence[str] | None = None,
            mode: str = "auto", gpu: str | None = None, quiet: bool = False) -> Counters:
    """The counters of one forward of every stage at the article's shape, of `sweep_stages`
    (default: all of them) at each shape of `sweep` too, and of the calibration matmuls.

    Live where CUDA is present, ncu is found and the GPU permits counters (ncu runs in a
    subprocess per forward, with a progress bar); else the recordings of the replay set, and the
    banner says why. In "auto" mode a live failure for want of counters falls back to replay."""
    jobs = [(s, DEFAULT_SHAPE) for s in stages]
    jobs += [(s, sh) for sh in sweep for s in (sweep_stages or stages) if sh != DEFAULT_SHAPE]
    forced = mode == "replay" or (mode == "auto" and config.mode_setting() == "replay")
    mode = "replay" if forced else resolve_mode(mode)
    reason = "the recording was asked for (mode='replay')" if forced else ncu.unavailable_reason()
    result = None
    if mode == "live" and reason is None:
        try:
            result = _live(jobs, gpu)
        except ncu.CountersUnavailable as err:
            reason = str(err)
    if result is None:
        result = _replay(jobs, gpu, reason or "the recording was asked for")
    if not quiet:
        print(result.banner())
        for note in result.notes:
            print(f"  {note}")
    return result


# ------------------------------------------------------------------------------------------ work

def _work_columns(table: pd.DataFrame) -> list[str]:
    return [c for c in table.columns if TENSOR_TOTAL.match(c) or c == FFMA]


def calibration(c: Counters) -> pd.DataFrame:
    """What one unit of each FLOP-carrying counter stands for, from the calibration matmuls: their
    FLOPs (2·m·n·k, from the shape) over what the counter read. One row per counter that read
    anything in a calibration."""
    rows = []
    for cal in _calibrations(c.provenance):
        table = c.calibration[cal["name"]]
        flops = 2 * cal["m"] * cal["n"] * cal["k"]
        for counter in _work_columns(table):
            reading = float(table[counter].sum())
            if reading > 0:
                rows.append({"matmul": f"{cal['dtype']}, {cal['m']}×{cal['n']}×{cal['k']}",
                             "FLOPs (2·m·n·k)": flops, "counter": counter.removesuffix(".sum"),
                             "reading": int(round(reading)), "FLOPs per unit": flops / reading})
    out = pd.DataFrame(rows, columns=["matmul", "FLOPs (2·m·n·k)", "counter", "reading", "FLOPs per unit"])
    return out.set_index("matmul")


def flops_per_unit(c: Counters) -> dict[str, float]:
    """counter -> FLOPs per unit, each from the calibration in which it carries the work (the
    one where its share of the FLOPs is largest)."""
    table = calibration(c).reset_index()
    best = {}
    for counter, rows in table.groupby("counter"):
        row = rows.loc[rows["reading"].idxmax()]
        best[f"{counter}.sum"] = float(row["FLOPs per unit"])
    return best


def kernel_flops(table: pd.DataFrame, factors: Mapping[str, float]) -> pd.Series:
    """FLOPs of each kernel: every calibrated counter's reading times its FLOPs per unit."""
    total = pd.Series(0.0, index=table.index)
    for counter, factor in factors.items():
        if counter in table.columns:
            total = total + table[counter].fillna(0).astype(float) * factor
    return total


def work(c: Counters, shape: Shape | None = DEFAULT_SHAPE) -> pd.DataFrame:
    """Per forward: the FLOPs the counters measured against the attention's FLOPs from the shape
    (4·B·H·S²·D, halved for a causal mask). A fused kernel that computes the diagonal tiles in full
    does a little more than the causal half; one that ignores the mask, up to twice as much.
    One row per stage at `shape` (None: every shape collected, with a seq column)."""
    factors = flops_per_unit(c)
    rows = []
    for (stage, key), table in c.kernels.items():
        if shape is not None and key != shape.key:
            continue
        s = Shape.from_key(key)
        flops = float(kernel_flops(table, factors).sum())
        rows.append({"stage": stage, "seq": s.seq, "kernels": len(table),
                     "measured GFLOP": round(flops / 1e9, 2),
                     "model GFLOP (4·B·H·S²·D/2)": round(s.attention_flops / 1e9, 2),
                     "measured / model": round(flops / s.attention_flops, 3)})
    out = pd.DataFrame(rows)
    return out.drop(columns=["seq"]).set_index("stage") if shape is not None else out


def glue_calibration(c: Counters) -> dict:
    """Glue the FLOPs per unit of the tensor and FFMA counters, and the measured / model ratio of
    the stages the page names, as `cal_<name>`."""
    factors = flops_per_unit(c)
    tensor = [k for k in factors if TENSOR_TOTAL.match(k)]
    values = {"tensor_counter": tensor[0].removesuffix(".sum") if tensor else "none",
              "tensor_factor": f"{factors[tensor[0]]:.3g}" if tensor else "—",
              "ffma_factor": f"{factors[FFMA]:.3g}" if FFMA in factors else "—"}
    w = work(c)
    ratios = w["measured / model"]
    for stage, key in (("naive", "naive"), ("sdpa_math", "math"), ("sdpa_flash", "flash"),
                       ("sdpa_cudnn", "cudnn"), ("sdpa_efficient", "efficient")):
        if stage in ratios:
            values[f"{key}_ratio"] = f"{ratios[stage]:.3f}"
    # fused (one kernel): between the causal FLOPs and the full square; unfused: the full square at least
    fused, unfused = w[w["kernels"] == 1], w[w["kernels"] > 1]
    odd = list(fused.index[(fused["measured / model"] < 1) | (fused["measured / model"] >= 2)]) + \
        list(unfused.index[unfused["measured / model"] < 2])
    values["verdict"] = ("The counters and the shape agree where they should, and the factors hold" if not odd else
                         f"The counters and the shape disagree for {', '.join(odd)}: read its counters before "
                         f"trusting its point")
    for key, value in values.items():
        glue(f"cal_{key}", value)
    return values


def provenance_table(c: Counters) -> pd.DataFrame:
    """Where the counters come from, one fact a row (the GPU, driver, ncu, torch, date, command)."""
    p = c.provenance
    facts = {"mode": c.mode, "GPU": p.get("gpu"), "compute capability": p.get("capability"),
             "SMs": p.get("sm_count"), "driver": p.get("driver"), "ncu": p.get("ncu"),
             "torch": p.get("torch"), "CUDA": p.get("cuda"), "date": p.get("date"),
             "command": p.get("command"), "ncu command": p.get("ncu_command"),
             "export command": p.get("export_command"), "metrics": len(p.get("metrics", [])) or None,
             "folder": p.get("folder") or ncu.shown(ncu.recording_dir())}
    return pd.DataFrame({"value": {k: v for k, v in facts.items() if v not in (None, "")}}).rename_axis("")


# ------------------------------------------------------------------------------------------ bytes

def dram_bytes(c: Counters, shape: Shape = DEFAULT_SHAPE) -> pd.DataFrame:
    """DRAM bytes one forward read and wrote, summed over its kernels, per stage."""
    rows = []
    for stage in c.stages:
        if (stage, shape.key) not in c.kernels:
            continue
        t = c.stage(stage, shape)
        rows.append({"stage": stage, "kernels": len(t), "read MB": t["dram_read_bytes"].sum() / MB,
                     "written MB": t["dram_write_bytes"].sum() / MB,
                     "measured MB": t["dram_bytes"].sum() / MB})
    return pd.DataFrame(rows)


def copy_bytes(prof: Profile) -> int:
    """DRAM bytes of one forward's memcpy and memset events, from the trace (ncu profiles kernels
    only): a device-to-device copy reads its bytes and writes them, a memset writes them."""
    e = prof.gpu_events()
    total = 0
    for r in e[e["category"].isin(["memcpy", "memset"])].itertuples():
        if pd.isna(r.bytes):
            continue
        total += int(r.bytes) * (2 if r.category == "memcpy" and "DtoD" in r.name else 1)
    return total


def hbm_measured(c: Counters, profiles: Mapping[str, Profile] | None = None,
                 shape: Shape = DEFAULT_SHAPE) -> pd.DataFrame:
    """The measured DRAM bytes per forward beside the bytes derived from the shape (`claims.
    hbm_traffic`'s model: score passes between the matmuls, plus q, k, v and the output).

    ncu measures kernels; a forward's memcpy and memset move bytes outside any kernel, so their
    bytes come from the trace (the event's size) and are added to make the forward's total. A
    stage missing from `profiles` is loaded from the GPU the counters come from."""
    from ..sources.modes import profile_stage
    profiles = dict(profiles or {})
    measured = dram_bytes(c, shape).set_index("stage")
    for stage in measured.index:
        if stage not in profiles or profiles[stage].shape != shape:
            profiles[stage] = profile_stage(stage, shape, mode="auto" if c.mode == "live" else "replay", quiet=True)
    measured[COPIES] = [copy_bytes(profiles[s]) / MB for s in measured.index]
    measured["forward MB"] = measured["measured MB"] + measured[COPIES]
    model = hbm_traffic({s: profiles[s] for s in measured.index})
    out = measured.drop(columns=["measured MB"]).join(model["total MB"].rename("model MB"), how="left")
    out["forward / model"] = out["forward MB"] / out["model MB"]
    # q, k, v and the output, from the same model: what a fused kernel has to move at least
    out.attrs["qkvo MB"] = (model["q, k, v, out bytes"] / MB).to_dict()
    return out.round({"read MB": 1, "written MB": 1, COPIES: 1, "forward MB": 1, "model MB": 1,
                      "forward / model": 2})


def glue_hbm(table: pd.DataFrame, fused: str = "sdpa_flash", unfused: str = "naive") -> dict:
    """Glue the ratio a reader guesses (how many times more bytes the unfused stage moves) and the
    figures behind it, as `hbm_<name>`."""
    m, model, copies = table["forward MB"], table["model MB"], table[COPIES]
    qkvo = table.attrs["qkvo MB"][fused]
    values = {"unfused": unfused, "fused": fused,
              "unfused_mb": f"{m[unfused]:,.0f}", "fused_mb": f"{m[fused]:,.0f}",
              "unfused_copy_mb": f"{copies[unfused]:,.0f}",
              "ratio": f"{m[unfused] / m[fused]:.0f}", "model_ratio": f"{model[unfused] / model[fused]:.0f}",
              "unfused_model_mb": f"{model[unfused]:,.0f}", "fused_model_mb": f"{model[fused]:,.0f}",
              "fused_over_model": f"{m[fused] / model[fused]:.2f}",
              "unfused_over_model": f"{m[unfused] / model[unfused]:.2f}",
              "fused_written_mb": f"{table['written MB'][fused]:,.1f}",
              # the output is a quarter of q, k, v and the output, all four of one shape
              "output_mb": f"{qkvo / 4:,.1f}", "qkv_mb": f"{3 * qkvo / 4:,.1f}",
              "fused_read_mb": f"{table['read MB'][fused]:,.1f}",
              "min_over_model": f"{table['forward / model'].min():.2f}",
              "max_over_model": f"{table['forward / model'].max():.2f}"}
    for key, value in values.items():
        glue(f"hbm_{key}", value)
    return values
