"""Nsight Compute's counters, as the pages read them: collected live (by helpers.counters.sources:
one ncu process per page, with a progress bar) where ncu runs and the GPU permits counters, else replayed from the recordings of
the replay set, with the reason; the work they count turned into FLOPs by two calibration
matmuls; and the DRAM bytes each forward moved, beside the bytes derived from the shape.

    from helpers import Session, counters
    s = Session()
    c = counters.show(s.counters(["naive", "sdpa_flash"]))   # says where the counters come from
    c.stage("sdpa_flash")                             # one row per kernel (helpers.sources.ncu.kernels)
    counters.hbm_measured(c, s.forwards(c))           # measured and modelled bytes per forward
"""
from __future__ import annotations

import os
import re
from typing import Mapping, Sequence

import pandas as pd

from ..core import ncu_tables as ncu
from ..core import quantities as q
from ..core.bound import SAME_WITHIN
from .core import Counters, calibrations as _calibrations  # noqa: F401  (Counters: the chapter's type)
from ..core.profile import Profile
from ..core import config
from ..core.stages import DEFAULT_SHAPE, PINNED_BACKENDS, Shape, get_stage
from ..chapters.claims import hbm_traffic
from ..views.notes import show_counters
from ..views.prose import glue

MB = 1e6
COPIES = "copies MB (trace)"   # memcpy and memset: no kernel, so no ncu row; their bytes come from the trace
# the work counters that carry FLOPs, one per family so nothing is counted twice: the tensor
# pipe's ops of every instruction (HMMA and Hopper's HGMMA alike) by source type, and FFMA
TENSOR_TOTAL, FFMA = q.TENSOR_TOTAL, q.FFMA   # the ledger's (helpers.core.quantities)


def show(c: Counters) -> Counters:
    """Show where the counters come from, as a page shows it (live: one line; replayed: the line,
    with why they are not live folded under it), and hand them back."""
    show_counters(c)
    return c


# ------------------------------------------------------------------------------------------ work

def calibration(c: Counters) -> pd.DataFrame:
    """What one unit of each FLOP-carrying counter stands for, from the calibration matmuls: their
    FLOPs (2·m·n·k, from the shape) over what the counter read. One row per counter that read
    anything in a calibration."""
    rows = [{"matmul": r["matmul"], "FLOPs (2·m·n·k)": r["FLOPs (2·m·n·k)"], "counter": r["counter"].removesuffix(".sum"),
             "reading": int(round(r["reading"])), "FLOPs per unit": r["FLOPs per unit"],
             "ncu µs": r["ncu ns"] / 1e3, "TFLOP/s": r["FLOPs (2·m·n·k)"] / r["ncu ns"] / 1e3}
            for r in q.calibration_rows(c.calibration, _calibrations(c.provenance))]
    out = pd.DataFrame(rows, columns=["matmul", "FLOPs (2·m·n·k)", "counter", "reading", "FLOPs per unit",
                                      "ncu µs", "TFLOP/s"])
    return out.set_index("matmul").round({"ncu µs": 1, "TFLOP/s": 1})


def flops_per_unit(c: Counters) -> dict[str, float]:
    """counter -> FLOPs per unit, each from the calibration in which it carries the work (the
    one where its reading is largest): the ledger's (helpers.core.quantities)."""
    return q.flops_per_unit(c.calibration, _calibrations(c.provenance))


def pipe_roofs(c: Counters) -> dict[str, float]:
    """The bf16 tensor roof and the fp32 FFMA roof (TFLOP/s) of the calibration matmuls."""
    return q.pipe_roofs(c.calibration, _calibrations(c.provenance))


def kernel_flops(table: pd.DataFrame, factors: Mapping[str, float]) -> pd.Series:
    """Executed FLOPs of each kernel (the ledger's): every calibrated counter's reading times its
    FLOPs per unit."""
    return q.executed_flops(table, factors)


def work(c: Counters, shape: Shape | None = DEFAULT_SHAPE) -> pd.DataFrame:
    """Per forward: the executed FLOPs (the counters), split into the tensor pipe's, FFMA's and
    FADD + FMUL's (one FLOP each), against
    the model FLOPs (4·B·H·S²·D, halved for a causal mask). A fused kernel that computes the diagonal tiles in full
    does a little more than the causal half; one that ignores the mask, up to twice as much.
    One row per stage at `shape` (None: every shape collected, with a seq column)."""
    factors = flops_per_unit(c)
    rows = []
    for (stage, key), table in c.kernels.items():
        if shape is not None and key != shape.key:
            continue
        s = Shape.from_key(key)
        tensor = float(q.tensor_flops(table, factors).sum())
        ffma = float(q.ffma_flops(table, factors).sum())
        addmul = float(q.fadd_fmul_flops(table, factors).sum())
        flops = tensor + ffma + addmul
        model = q.model_flops(s)
        rows.append({"stage": stage, "seq": s.seq, "kernels": len(table),
                     "executed GFLOP": round(flops / 1e9, 2),
                     "of which tensor pipe": round(tensor / 1e9, 2), "of which FFMA": round(ffma / 1e9, 2),
                     "of which FADD + FMUL": round(addmul / 1e9, 2),
                     "model GFLOP (4·B·H·S²·D/2)": round(model / 1e9, 2),
                     "executed / model": round(flops / model, 3),
                     "tensor / model": round(tensor / model, 3), "FFMA / model": round(ffma / model, 3),
                     "FADD + FMUL / model": round(addmul / model, 3)})
    out = pd.DataFrame(rows)
    return out.drop(columns=["seq"]).set_index("stage") if shape is not None else out


def glue_calibration(c: Counters) -> dict:
    """Glue the FLOPs per unit of the tensor and FFMA counters, and the executed / model ratio of
    the stages the page names, as `cal_<name>`."""
    factors = flops_per_unit(c)
    tensor = [k for k in factors if TENSOR_TOTAL.match(k)]
    values = {"tensor_counter": tensor[0].removesuffix(".sum") if tensor else "not among these counters",
              # the sentence 09 reads, with a form for counters that hold no tensor-pipe counter
              "tensor_sentence": (f"The tensor counter, {tensor[0].removesuffix('.sum')}, counts "
                                  f"{factors[tensor[0]]:.3g} FLOP per unit" if tensor else
                                  "These counters hold no tensor-pipe counter, so no tensor-core FLOP is counted"),
              "tensor_factor": f"{factors[tensor[0]]:.3g}" if tensor else "—",
              "ffma_factor": f"{factors[FFMA]:.3g}" if FFMA in factors else "—"}
    w = work(c)
    ratios = w["executed / model"]
    for stage in ("naive", *PINNED_BACKENDS):
        key = get_stage(stage).short
        if stage in ratios:
            values[f"{key}_ratio"] = f"{ratios[stage]:.3f}"
            values[f"{key}_tensor_ratio"] = f"{w.loc[stage, 'tensor / model']:.3f}"
            values[f"{key}_ffma_ratio"] = f"{w.loc[stage, 'FFMA / model']:.3f}"
            values[f"{key}_ffma_gflop"] = f"{w.loc[stage, 'of which FFMA']:.2f}"
            values[f"{key}_addmul_ratio"] = f"{w.loc[stage, 'FADD + FMUL / model']:.3f}"
            values[f"{key}_addmul_gflop"] = f"{w.loc[stage, 'of which FADD + FMUL']:.2f}"
    # fused (one kernel): between the causal FLOPs and the full square; unfused: the full square at least
    fused, unfused = w[w["kernels"] == 1], w[w["kernels"] > 1]
    odd = list(fused.index[(fused["executed / model"] < 1) | (fused["executed / model"] >= 2)]) + \
        list(unfused.index[unfused["executed / model"] < 2])
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
             **_how_recorded(p.get("ncu_command") or "", p.get("export_command") or ""),
             "metrics": len(p.get("metrics", [])) or None, "folder": p.get("folder"),
             "sequence sweep": p.get("sweep_recorded")}
    return pd.DataFrame({"value": {k: v for k, v in facts.items() if v not in (None, "")}}).rename_axis("")


def _how_recorded(ncu_command: str, export_command: str) -> dict:
    """How ncu ran, in the reader's terms, read from the recorded command line (the commands
    themselves are the maintainers', on the run-it-yourself page)."""
    facts = {}
    if "--profile-from-start off" in ncu_command:
        facts["what ncu profiled"] = ("one forward, between cudaProfilerStart and cudaProfilerStop, "
                                      "after warm-up calls it did not profile")
    if "--clock-control none" in ncu_command:
        facts["GPU clocks"] = "as they ran (ncu did not lock them to base clocks)"
    if "--page raw" in export_command:
        facts["table"] = "every counter of every kernel, exported from the report under ncu's raw metric names"
    return facts


# ---------------------------------------------------------------------------------------- reports

NOTEBOOKS = config.ROOT / "notebooks"   # where the pages are: the reports' links are relative to it


def report_links(c: Counters, names: Sequence[str] | Mapping[str, str], shape: Shape = DEFAULT_SHAPE,
                 bullets: bool = False) -> str:
    """MyST `{download}` links to Nsight Compute's report behind each named forward (a stage at
    `shape`, or a calibration by its name), where one was kept beside the counters: the replay
    set's in replay, this session's cache live. `names` may map each name to a label (a bulleted
    list with `bullets`). Comma-separated, or one bullet a line; "" where none was kept."""
    labelled = names.items() if isinstance(names, Mapping) else ((n, None) for n in names)
    items = []
    for name, label in labelled:
        table = c.calibration.get(name) if name in c.calibration else c.kernels.get((name, shape.key))
        report = None if table is None else table.attrs.get("report")
        if not report:
            continue
        link = f"{{download}}`{name.split('__')[0]} <{os.path.relpath(report, NOTEBOOKS)}>`"
        items.append(f"- {label}: {link}" if bullets and label else (f"- {link}" if bullets else link))
    return "\n".join(items) if bullets else ", ".join(items)


def glue_reports(c: Counters, names: Sequence[str] | Mapping[str, str], key: str = "ncu_reports",
                 shape: Shape = DEFAULT_SHAPE, bullets: bool = False) -> None:
    """Glue `report_links` as Markdown under `key` (a page pastes it with ``{glue:md}`key:myst```
    or the `glue:md` directive with ``:format: myst``) and the counters' folder as `<key>_folder`:
    a page names no GPU's folder itself, so another replay set (ATTN_PROFILED_REPLAY_GPU) or a
    live run shows its own reports."""
    from IPython.display import Markdown
    text = report_links(c, names, shape, bullets) or "no report was kept with these counters"
    glue(key, Markdown(text))
    glue(f"{key}_folder", c.provenance.get("folder") or "this session's cache")


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


def hbm_measured(c: Counters, profiles: Mapping[str, Profile], shape: Shape = DEFAULT_SHAPE) -> pd.DataFrame:
    """The measured DRAM bytes per forward beside the bytes derived from the shape (`claims.
    hbm_traffic`'s model: score passes between the matmuls, plus q, k, v and the output).

    ncu measures kernels; a forward's memcpy and memset move bytes outside any kernel, so their
    bytes come from the trace (the event's size) and are added to make the forward's total.
    `profiles` holds the forward of every stage the counters hold at `shape`, from the GPU they
    come from (a Session's `forwards(c, profiles)`)."""
    profiles = dict(profiles)
    measured = dram_bytes(c, shape).set_index("stage")
    missing = [s for s in measured.index if s not in profiles or profiles[s].shape != shape]
    if missing:
        raise ValueError(f"hbm_measured needs the profiles of {', '.join(missing)} at {shape.key}: pass "
                         f"them in `profiles` (a Session's forwards(counters) fetches them)")
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
    # the sentence 05 reads, with a form for the unfused stage moving about as many bytes, or fewer
    ratio = m[unfused] / m[fused]
    values["ratio_sentence"] = (f"That is {ratio:.0f} times as many bytes" if ratio >= 1 + SAME_WITHIN else
                                f"That is about as many bytes (within {SAME_WITHIN:.0%})" if ratio > 1 - SAME_WITHIN
                                else f"That is {1 / ratio:.1f} times fewer bytes than {fused} moved")
    for key, value in values.items():
        glue(f"hbm_{key}", value)
    return values
