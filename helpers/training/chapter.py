"""The training chapter (11) and its views: the backward's kernels and autograd nodes, what autograd keeps,
peak memory against seq with its models, the largest seq per stage, the memory timeline of one
step, the backward beside the forward under Nsight Compute, and the guesses' answers.

Every view takes what the notebook acquired (Profiles, the memory recording, snapshot bytes) and
computes from it; nothing here profiles or reads the GPU."""
from __future__ import annotations

import base64
import html
import re
from typing import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from IPython.display import HTML

from ..core.bound import BUSY_TIMERS, LINE, NO_TIMER, NO_TIMER_WORDS, of_call
from ..core.bound import words as bound_words
from . import core_backward as bw
from ..core import quantities as q
from ..core.wording import names, percent_from, place, sentence_for
from ..core.measured_on import hatched_note, marks
from ..core.profile import Profile
from ..core.stages import DEFAULT_SHAPE, PINNED_BACKENDS, PINNED_FUSED, Shape
from ..core.stages import STAGES as STAGES_REGISTRY
from .core import FUSED, TRAINING_STAGES, backward_flops, recompute_free_backward_flops
from ..views.charts import KIND_COLORS, MUTED, _title, reference_line
from ..views.tables import mark_gpus
from ..views.perfetto import trace_links
from ..views.prose import glue
from ..counters.chapter import Counters, flops_per_unit, kernel_flops, pipe_roofs
from ..chapters import roofline

MIB = 2**20
GIB = 2**30
# each stage in the colour the registry gives it wherever stages are compared
STAGE_COLORS = {name: st.colour for name, st in STAGES_REGISTRY.items()}
MEMORY_VIZ = "https://pytorch.org/memory_viz"
STAGES = TRAINING_STAGES


# --- kernels: forward against backward -------------------------------------------------------------

def phases_table(profiles: Mapping[str, Profile]) -> pd.DataFrame:
    """Per stage, one training step: kernels and GPU time of the forward and of the backward, the
    backward's driver launches, and the threads that launched each. The times are the training
    recording's, a separate run from the stage pages' forwards: named "(training step)" apart."""
    rows = []
    for stage, prof in profiles.items():
        c = bw.phase_counts(prof)
        f, b = c["forward"], c["backward"]
        rows.append({"stage": stage, "forward kernels": f["kernels"], "backward kernels": b["kernels"],
                     "forward GPU µs (training step)": round(f["gpu_time_us"], 1),
                     "backward GPU µs (training step)": round(b["gpu_time_us"], 1),
                     "backward / forward": round(b["gpu_time_us"] / f["gpu_time_us"], 2) if f["gpu_time_us"] else None,
                     "backward driver launches": b["driver_launches"],
                     "backward launched from": ", ".join(b["threads"])})
    return mark_gpus(pd.DataFrame(rows), profiles)


def backward_kernels(prof: Profile) -> pd.DataFrame:
    """The backward's GPU events of one step, in launch order: the autograd node, the kernel decoded."""
    e = bw.step_events(prof)
    e = e[e["phase"] == "backward"]
    return pd.DataFrame({"autograd node": e["node"].fillna("(none)"), "kernel": e["name"],
                         "what it is": e["summary"], "kind": e["kind"], "GPU µs": e["dur_us"].round(1),
                         "launched by": e["launched_by"]}).reset_index(drop=True)


def nodes_table(prof: Profile) -> pd.DataFrame:
    return bw.by_node(prof)


def kind_chart(profiles: Mapping[str, Profile]) -> go.Figure:
    """GPU time of one step per stage, forward and backward one bar each (horizontal, so the labels
    read on a phone), stacked by kernel kind."""
    fig = go.Figure()
    rows = []
    for stage, prof in profiles.items():
        e = bw.step_events(prof)
        for (phase, kind), g in e[e["phase"] != "outside"].groupby(["phase", "kind"]):
            rows.append({"stage": stage, "phase": phase, "kind": kind, "us": float(g["dur_us"].sum())})
    t = pd.DataFrame(rows)
    labels = [f"{s} {p}" for s in profiles for p in ("fwd", "bwd")]
    # live, a stage this GPU cannot run is another GPU's recording: its bars hatched, its hover and
    # the subtitle saying where (measured_on's mark)
    marked = marks(profiles)
    owner = [s for s in profiles for _ in ("fwd", "bwd")]
    for kind, g in t.groupby("kind"):
        by = {f"{r.stage} {'fwd' if r.phase == 'forward' else 'bwd'}": r.us for r in g.itertuples()}
        marker = dict(color=KIND_COLORS.get(kind, KIND_COLORS["unknown"]))
        if marked:
            marker["pattern"] = dict(shape=["/" if s in marked else "" for s in owner])
        fig.add_bar(y=labels, x=[by.get(label, 0) for label in labels], name=kind, orientation="h", marker=marker,
                    customdata=[marked.get(s, "") for s in owner],
                    hovertemplate=f"{kind}<br>%{{y}}: %{{x:.1f}} µs"
                                  + ("<br>%{customdata}" if marked else "") + "<extra></extra>")
    fig.update_layout(barmode="stack", xaxis_title="GPU µs in one step",
                      yaxis=dict(autorange="reversed", tickfont=dict(size=11)))
    _legend_room(fig, 160 + 22 * len(labels))
    note = hatched_note(profiles)
    return _title(fig, "One training step: forward and backward", "GPU time stacked by kernel kind, decoded from its name"
                  + (f" · {note}" if note else ""))


# --- what autograd keeps ---------------------------------------------------------------------------

def held_table(profiles: Mapping[str, Profile]) -> pd.DataFrame:
    """Per stage: memory held between forward and backward (allocated after the forward minus
    before), the output's share, the saved tensors beyond the inputs, and against it the two
    sizes that tell the stages apart: one bf16 seq × seq matrix and the fp32 logsumexp."""
    rows = []
    for stage, prof in profiles.items():
        t = prof.provenance.extra.get("training", {})
        shape = prof.shape
        saved = [s for s in t.get("saved", []) if not s["input"]]
        sxs = [s for s in saved if s["seq_by_seq"]]
        rows.append({"stage": stage, "held MiB": round(t["held_bytes"] / MIB, 1),
                     "output MiB": round(t["output_bytes"] / MIB, 1),
                     "saved beyond inputs MiB": round(t["saved_new_bytes"] / MIB, 1) if not t.get("hooks_error") else None,
                     "seq×seq tensors saved": len({s.get("storage", i) for i, s in enumerate(sxs)}) if not t.get("hooks_error") else None,
                     "saved tensors (shape dtype)": "; ".join(
                         f"{'×'.join(map(str, s['shape'])) or 'scalar'} {s['dtype']}" for s in saved) or
                     ("not visible to saved_tensors_hooks" if t.get("hooks_error") else "nothing beyond the inputs"),
                     "one S×S bf16 MiB": round(score_bytes(shape) / MIB, 1),
                     "logsumexp fp32 MiB": round(lse_bytes(shape) / MIB, 2)})
    return mark_gpus(pd.DataFrame(rows), profiles)


def _plain(value):
    """A numpy scalar as the Python number it holds: glue prints a value's repr, np.float64(2.5)."""
    return value.item() if hasattr(value, "item") and not isinstance(value, (str, bytes)) else value


def _legend_room(fig: go.Figure, height: int) -> go.Figure:
    """Room above the plot for a legend of many entries, as they wrap on a phone (two to a
    row at 390 px), so that it never covers the title."""
    entries = sum(1 for t in fig.data if t.showlegend is not False)
    rows = -(-entries // 2)
    fig.update_layout(margin=dict(t=90 + 22 * rows), height=height + 22 * rows)
    return fig


def score_bytes(shape: Shape, element: int = 2) -> int:
    return shape.batch * shape.heads * shape.seq**2 * element


def lse_bytes(shape: Shape) -> int:
    return shape.batch * shape.heads * shape.seq * 4


def inplace_table(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame([{"masking": r["code"], "forward ran": r["forward_ran"], "backward ran": r["backward_ran"],
                          "seq×seq tensors saved": r["saved_seq_by_seq"],
                          "autograd said": r["error"] or "nothing: it ran"} for r in rows])


# --- peak memory against seq -----------------------------------------------------------------------

def peak_chart(memory: dict) -> go.Figure:
    """Peak memory of one training step above its inputs against seq, log-log, a line per stage;
    the fitted model (a·B·H·S² + b·B·H·S·D) dotted beside each; the GPU's memory as a roof."""
    table = bw.ladder(memory)
    ok = table[table["status"] == "ok"]
    models = bw.fit(table).set_index("stage")
    fig = go.Figure()
    for stage, g in ok.groupby("stage", sort=False):
        g = g.sort_values("seq")
        color = STAGE_COLORS.get(stage, MUTED)
        fig.add_scatter(x=g["seq"], y=g["peak_bytes"] / GIB, mode="lines+markers", name=stage, legendgroup=stage,
                        line=dict(color=color),
                        hovertemplate=f"{stage}<br>seq %{{x}}: %{{y:.3f}} GiB<extra></extra>")
        m = models.loc[stage]
        s = np.geomspace(g["seq"].min(), g["seq"].max(), 24)
        b, h, d = int(g["batch"].iloc[0]), int(g["heads"].iloc[0]), int(g["head_dim"].iloc[0])
        kind = "quadratic" if m["bytes_per_score"] > 0 and m["bytes_per_score"] * s[-1] > m["bytes_per_q_element"] * d else "linear"
        fig.add_scatter(x=s, y=bw.model_peak(m, b, h, s, d) / GIB, mode="lines", legendgroup=stage, showlegend=False,
                        line=dict(color=color, dash="dot", width=1),
                        hovertemplate=f"{stage} model ({kind})<br>seq %{{x:.0f}}: %{{y:.3f}} GiB<extra></extra>")
    fig.update_layout(xaxis_type="log", yaxis_type="log", xaxis_title="seq (tokens)",
                      yaxis_title="peak GiB above the inputs")
    total = memory.get("provenance", {}).get("total_memory_bytes")
    if total:
        reference_line(fig, total / GIB, f"{memory['provenance'].get('gpu', 'GPU')}: {total / GIB:.0f} GiB", axis="y")
    _legend_room(fig, 480)
    return _title(fig, "Peak memory of one training step against seq",
                  "log-log; dotted: the fitted model a·B·H·S² + b·B·H·S·D")


def models_table(memory: dict) -> pd.DataFrame:
    """The fitted model per stage in words: bytes per score element (2: one bf16 S×S matrix at the
    peak), bytes per element of q, how far the model is from the recorded points, and the growth of
    the recorded peak at the last doubling of seq."""
    table = bw.ladder(memory)
    models = bw.fit(table)
    g = bw.growth(table).groupby("stage").last()
    out = models.assign(**{"last doubling ×": models["stage"].map(g["ratio"]).round(2)})
    out["bytes_per_score"] = out["bytes_per_score"].round(2)
    out["bytes_per_q_element"] = out["bytes_per_q_element"].round(1)
    out["max_relative_miss"] = (out["max_relative_miss"] * 100).round(1)
    return out.rename(columns={"bytes_per_score": "bytes per score (B·H·S²)",
                               "bytes_per_q_element": "bytes per q element (B·H·S·D)",
                               "max_relative_miss": "model's largest miss %", "points": "seqs measured"})


def max_seq_table(memory: dict) -> pd.DataFrame:
    """Per stage: the largest seq whose step ran, what ended the search, the peak there, and the
    seq at which the fitted model's peak reaches the GPU's memory."""
    t = bw.max_seq(memory)
    t["peak at max GiB"] = (t.pop("peak_at_max_bytes") / GIB).round(2)
    limits = bw.limit_seq(memory).set_index("stage")
    t["model above the inputs: full at seq"] = t["stage"].map(limits["model_limit_seq"]).map(table_seq).astype("Int64")
    t["model with q, k, v, dO: full at seq"] = t["stage"].map(limits["wall_seq"]).map(table_seq).astype("Int64")
    t = t.rename(columns={"max_seq": "largest seq that ran"})
    t.attrs["caption"] = ("The two models' columns: the fitted peak above the inputs alone, and the same plus the "
                          "inputs a step reads (q, k, v and dO, 8 bytes per element of q): the second is the one "
                          "that meets the GPU's memory.")
    return t


# --- the memory timeline --------------------------------------------------------------------------

def timeline_chart(snapshots: Mapping[str, tuple[bytes, dict]], shape_key: str = "") -> go.Figure:
    """Allocated memory over one training step, from each stage's memory snapshot; the backward
    shaded from its start. Drawn from the snapshot's allocator events, offline."""
    fig = go.Figure()
    for stage, (data, marks) in snapshots.items():
        t = bw.snapshot_timeline(data, marks)
        color = STAGE_COLORS.get(stage, MUTED)
        fig.add_scatter(x=t["time_ms"], y=t["allocated_bytes"] / MIB, mode="lines", line_shape="hv", name=stage,
                        line=dict(color=color), customdata=np.stack([t["action"], t["size_bytes"] / MIB, t["where"]], 1),
                        hovertemplate=(f"{stage} %{{x:.2f}} ms: %{{y:.1f}} MiB allocated<br>%{{customdata[0]}} "
                                       "%{customdata[1]:.2f} MiB<br>%{customdata[2]}<extra></extra>"))
        if marks and "backward_us" in marks:
            x = (marks["backward_us"] - marks["forward_us"]) / 1e3
            fig.add_vline(x=x, line=dict(color=color, dash="dot", width=1))
            fig.add_annotation(x=x, y=1, yref="paper", text=f"{stage}: backward", showarrow=False,
                               xanchor="left", font=dict(size=10, color=color), yshift=-10 * list(snapshots).index(stage))
    fig.update_layout(xaxis_title="ms since the forward began", yaxis_title="MiB allocated")
    _legend_room(fig, 440)
    return _title(fig, "Memory over one training step", f"PyTorch's memory snapshot, {shape_key}; dotted: where the backward begins")


def timeline_peaks(snapshots: Mapping[str, tuple[bytes, dict]]) -> pd.DataFrame:
    rows = []
    for stage, (data, marks) in snapshots.items():
        t = bw.snapshot_timeline(data, marks)
        start = float(t["allocated_bytes"].iloc[0] - (t["size_bytes"].iloc[0] if t["action"].iloc[0] == "alloc" else -t["size_bytes"].iloc[0]))
        fwd = t[t["phase"] == "forward"]
        rows.append({"stage": stage, "allocator events": len(t), "at start MiB": round(start / MIB, 1),
                     "end of forward MiB": round(float(fwd["allocated_bytes"].iloc[-1]) / MIB, 1) if len(fwd) else None,
                     "peak MiB": round(float(t["allocated_bytes"].max()) / MIB, 1),
                     "largest block MiB": round(float(t["size_bytes"].max()) / MIB, 1)})
    return pd.DataFrame(rows)


def snapshot_links(stage: str, data: bytes, shape_key: str, where: str) -> HTML:
    """The snapshot as a file to download, and a button opening pytorch.org/memory_viz, where the
    reader drops that file: memory_viz reads a file the reader gives it (it has no protocol to be
    handed one by another page, as Perfetto has)."""
    name = f"snapshot__{stage}__{shape_key}.pickle"
    href = f"data:application/octet-stream;base64,{base64.b64encode(data).decode()}"
    e = html.escape
    return HTML(
        f"<div class='ap-snapshot'><p><b>{e(stage)}'s memory snapshot</b>, {e(where)}: "
        f"<a class='ap-snapshot-download' download=\"{e(name)}\" href=\"{href}\"><code>{e(name)}</code></a> "
        f"({len(data) / 1024:.0f} KiB, the pickle <code>torch.cuda.memory._dump_snapshot</code> writes) "
        f"<a class='ap-memory-viz' href='{MEMORY_VIZ}' target='_blank' rel='noopener'><button type='button'>"
        f"Open pytorch.org/memory_viz</button></a></p>"
        f"<p><small>memory_viz opens in a new tab; drag the downloaded file onto it (or pick it with its file "
        f"button). It reads the file in your browser.</small></p></div>")


# --- the roofline of the backward -----------------------------------------------------------------

def work_table(backward: Mapping[str, pd.DataFrame], forward: Mapping[str, pd.DataFrame],
               factors: Mapping[str, float], shape: Shape = DEFAULT_SHAPE) -> pd.DataFrame:
    """Per stage: executed FLOPs and kernel DRAM bytes of the forward and of the backward as
    Nsight Compute measured them (the ledger's, helpers.core.quantities: tensor-pipe and FFMA
    counters × the calibration's FLOPs per unit), the backward's model FLOPs from the shape (5
    products where P is recomputed, 4 where it is kept), each phase's arithmetic intensity, and
    the backward's ncu time. Kernel bytes only: ncu's tables of the training step hold kernels."""
    rows = []
    for stage, b in backward.items():
        f = forward.get(stage)
        bf = float(kernel_flops(b, factors).sum())
        bb = q.kernel_dram_bytes(b)
        row = {"stage": stage, "backward kernels (ncu)": len(b), "backward GFLOP (ncu)": round(bf / 1e9, 1),
               "backward fp32 GFLOP (ncu)": round(float(q.fp32_flops(b, factors).sum()) / 1e9, 2),
               "backward GB (ncu)": round(bb / 1e9, 2),
               "backward FLOP/byte": round(bf / bb, 1) if bb else None,
               "backward ncu µs": round(q.ncu_seconds(b) * 1e6, 1),
               "model GFLOP, P kept (4 products)": round(recompute_free_backward_flops(shape) / 1e9, 1),
               "model GFLOP, P recomputed (5)": round(backward_flops(shape) / 1e9, 1)}
        if f is not None:
            ff, fb = float(kernel_flops(f, factors).sum()), q.kernel_dram_bytes(f)
            tensor_ratio = float(q.tensor_flops(b, factors).sum()) / float(q.tensor_flops(f, factors).sum()) \
                if float(q.tensor_flops(f, factors).sum()) else None
            row |= {"forward GFLOP (ncu)": round(ff / 1e9, 1), "forward GB (ncu)": round(fb / 1e9, 2),
                    "forward fp32 GFLOP (ncu)": round(float(q.fp32_flops(f, factors).sum()) / 1e9, 2),
                    "backward / forward, tensor pipe": round(tensor_ratio, 2) if tensor_ratio else None,
                    "forward FLOP/byte": round(ff / fb, 1) if fb else None,
                    "backward / forward FLOPs": round(bf / ff, 2) if ff else None}
        rows.append(row)
    return pd.DataFrame(rows)


def backward_limits(recorded: dict) -> pd.DataFrame:
    """Every backward kernel against the roofs of the pipe it runs on (chapter 9's per-kernel
    reading, helpers.chapters.roofline.kernel_rows): executed FLOPs, bytes, ncu time, the pipe,
    its share of that pipe's compute roof and of the copy roof, what bounds it, and which tensor
    instructions it ran (Hopper's wgmma or the warp-level mma.sync), with ncu's achieved occupancy."""
    c = _counters(recorded)
    factors, roof = flops_per_unit(c), _roof(recorded, c)
    rows = []
    for stage, b in recorded["backward"].items():
        mma = q.mma_family(b)
        for r, m, occ in zip(roofline.kernel_rows(stage, b, factors, roof), mma, b["achieved_occupancy_pct"]):
            flops = r["GFLOP"] * 1e9
            r["% of compute roof"] = (100 * flops / (r["ncu µs"] * 1e-6) / (roofline.pipe_roof(roof, r["pipe"]) * 1e12)
                                      if r["ncu µs"] else float("nan"))
            # the instruction family only where the tensor pipe did the kernel's FLOPs
            r |= {"tensor instructions": (m or "—") if r["pipe"] == q.TENSOR_PIPE else "—",
                  "achieved occupancy %": occ}
            rows.append(r)
    return pd.DataFrame(rows)


def limits_table(kernels: pd.DataFrame) -> pd.DataFrame:
    """Per stage: the share of its backward's ncu time in kernels bound by each limit."""
    t = kernels.assign(limit=[f"{b}, {p}" if b == "compute" else b for b, p in zip(kernels["bound by"], kernels["pipe"])])
    share = t.pivot_table(index="stage", columns="limit", values="ncu µs", aggfunc="sum", fill_value=0.0, sort=False)
    out = (100 * share.div(share.sum(axis=1), axis=0)).round(1)
    out.columns = [f"% of time {c}" for c in out.columns]
    out.attrs["caption"] = (f"Bound by a roof: at least {q.BOUND_SHARE:.0%} of it (compute: the roof of the kernel's pipe, "
                            "bf16 tensor or fp32 FFMA; memory: the copy roof); neither roof: below both.")
    return out.reset_index()


def limits_kernel_table(kernels: pd.DataFrame) -> pd.DataFrame:
    """backward_limits as a reader reads it, one row per kernel, rounded."""
    cols = ["stage", "#", "kernel", "pipe", "GFLOP", "DRAM MB", "ncu µs", "TFLOP/s", "% of compute roof",
            "% of copy roof", "bound by", "tensor instructions", "achieved occupancy %"]
    out = kernels[cols].copy()
    out["kernel"] = out["kernel"].str.slice(0, 70)
    out = out.set_index(["stage", "#"]).round({"GFLOP": 2, "DRAM MB": 1, "ncu µs": 1, "TFLOP/s": 1,
                                              "% of compute roof": 1, "% of copy roof": 1,
                                              "achieved occupancy %": 1})
    out.attrs["caption"] = COPY_ROOF_NOTE
    return out


# what "% of copy roof" divides, and why it can pass 100 (09's kernel table says the same)
COPY_ROOF_NOTE = ("% of copy roof: ncu's DRAM bytes per ncu µs, of the copy's TB/s. It can pass 100: a copy reads "
                  "and writes the same bytes, and a kernel that mostly reads keeps DRAM reading, without turning "
                  "round to write.")


def _counters(recorded: dict) -> Counters:
    return Counters("replay", recorded["gpu"], recorded["provenance"],
                    {(s, DEFAULT_SHAPE.key): t for s, t in recorded["forward"].items()}, recorded["calibration"])


def _roof(recorded: dict, c: Counters) -> dict:
    """Chapter 9's roofs, from the recording: the calibration matmuls' (ncu) and the copy's."""
    pipes = pipe_roofs(c)
    copy = float(recorded.get("copy TB/s") or 0) or None
    tensor, fp32 = pipes.get(q.TENSOR_PIPE), pipes.get(q.FFMA_PIPE)
    return {"matmul TFLOP/s": tensor, "fp32 TFLOP/s": fp32, "copy TB/s": copy,
            "ridge FLOP/B": q.ridge(tensor, copy) if tensor and copy else recorded.get("ridge")}


def roofline_chart(work: pd.DataFrame, ridge: float | None = None) -> go.Figure:
    """Forward and backward of each stage as two points of arithmetic intensity, joined by a line,
    beside the ridges of the two compute pipes (bf16 tensor cores and fp32 FFMA), each the
    pipe's calibration roof over the copy roof."""
    ridge = ridge if ridge is not None else work.attrs.get("ridge")
    fig = go.Figure()
    for d in work.to_dict("records"):
        stage = d["stage"]
        color = STAGE_COLORS.get(stage, MUTED)
        xs = [d.get("forward FLOP/byte"), d.get("backward FLOP/byte")]
        ys = [d.get("forward GFLOP (ncu)"), d.get("backward GFLOP (ncu)")]
        # the marker tells forward (●) from backward (▲), as the title says: text labels on every
        # point piled up on a phone where the fused stages cluster
        fig.add_scatter(x=xs, y=ys, mode="lines+markers", name=stage, line=dict(color=color),
                        marker=dict(symbol=["circle", "triangle-up"], size=10), text=["fwd", "bwd"],
                        hovertemplate=f"{stage}<br>%{{text}}: %{{x:.1f}} FLOP/byte, %{{y:.1f}} GFLOP<extra></extra>")
    fp32_ridge = work.attrs.get("fp32 ridge")
    xs = [v for d in work.to_dict("records") for v in (d.get("forward FLOP/byte"), d.get("backward FLOP/byte"))
          if v is not None and v == v and v > 0] + [r for r in (ridge, fp32_ridge) if r]
    # the x axis fixed around the points and both ridges (plotly's autorange pads for the fwd/bwd
    # labels, more than a decade on a phone)
    fig.update_layout(xaxis=dict(type="log", title="FLOP per DRAM byte (ncu)", dtick=1,  # decades only
                                 range=[np.log10(min(xs) / 1.6), np.log10(max(xs) * 1.6)] if xs else None),
                      yaxis_type="log", yaxis_title="GFLOP (ncu)")
    if ridge:
        reference_line(fig, ridge, f"bf16 ridge {ridge:.0f}", axis="x")
        # its label left of the line: right of it a phone's chart has no room
        fig.layout.annotations[-1].update(xanchor="right", xshift=-3)
    if fp32_ridge:
        # the ridge of the fp32 FMA pipe: sdpa_math's matmuls run there (chapter 9's fp32 roof)
        reference_line(fig, fp32_ridge, f"fp32 ridge {fp32_ridge:.1f}", axis="x", dash="dot", position="start")
    _legend_room(fig, 460)
    return _title(fig, "Forward (●) and backward (▲): work and intensity", "Nsight Compute's counters, one step at the book's shape")


# --- answers for the guesses ----------------------------------------------------------------------

def answers(profiles: Mapping[str, Profile], memory: dict) -> dict:
    """What the guesses are checked against, each computed from the recordings."""
    out = {}
    if "sdpa_flash" in profiles:
        out["flash_backward_kernels"] = bw.phase_counts(profiles["sdpa_flash"])["backward"]["kernels"]
    table = bw.ladder(memory)
    naive = table[(table["stage"] == "naive") & (table["status"] == "ok") & (table["seq"] == 4096)]
    if len(naive) and pd.notna(naive["held_bytes"].iloc[0]):
        out["naive_held_gib_4096"] = round(float(naive["held_bytes"].iloc[0]) / GIB, 2)
    ms = bw.max_seq(memory).dropna(subset=["max_seq"])
    ms = ms[ms["bound"] == "largest that fits"]  # only the stages that did run out of memory
    if len(ms):
        first = ms[ms["max_seq"] == ms["max_seq"].min()]
        out["first_oom_doubling"] = ", ".join(first["stage"])
        out["first_oom_tied"] = [str(x) for x in first["stage"]]  # every one is a right guess
        out["first_oom_seq"] = f"{int(first['max_seq'].iloc[0]) * 2:,}"
        # within one doubling, the stage whose model (inputs counted: the table's last column, as
        # it rounds it) reaches the GPU's memory at the smallest seq
        limits = bw.limit_seq(memory).set_index("stage")["wall_seq"]
        limits = limits[limits.index.isin(ms["stage"])].map(table_seq)
        firsts = [str(s) for s in limits.index[limits == limits.min()]]
        out["first_oom"] = names(firsts)
        out["first_oom_model_seq"] = f"{limits.min():,}"
        tied = out["first_oom_tied"]
        together = sentence_for(tied, none="", one="{name} ran out first", several="{names} ran out together")
        model = sentence_for(firsts, none="", one="the fitted models put {name} first",
                             several="the fitted models put {names} first together")
        out["first_oom_text"] = f"{together}, at seq {out['first_oom_seq']}; {model}, at about seq {out['first_oom_model_seq']}"
        out["first_oom_sentence"] = (
            f"At seq {out['first_oom_seq']} " + sentence_for(
                tied, none="", one="{name} ran out first.", several="these ran out together: {names}.")
            + " Doubling is coarse; the fitted model below says which reaches the GPU's memory first as seq grows: "
            + sentence_for(firsts, none="", one="{name}", several="{names}, together")
            + f", at about seq {out['first_oom_model_seq']} (the last column).")
    else:
        out["first_oom_sentence"] = (f"No stage ran out of the GPU's memory: every search stopped at its cap, "
                                     f"seq {int(bw.max_seq(memory)['max_seq'].max()):,}.")
    return out


def table_seq(seq: float) -> int:
    """A model's seq as max_seq_table's columns print it (to the nearest ten), so prose and table agree."""
    return int(round(float(seq), -1))


def memory_facts(memory: dict, forwards: Mapping[str, Profile] | None = None) -> dict:
    """What the memory sections say in numbers: bytes per score at the peak (the fitted model)
    against what autograd keeps (the ladder's saved bytes), the log-sum-exp's share of the fused
    peaks, the seq at which each stage meets the GPU's memory with its inputs counted, and, from
    the stage pages' forwards under no_grad (`forwards`), the memory a forward needs without autograd."""
    table = bw.ladder(memory)
    fits = bw.fit(table).set_index("stage")
    values = {}
    for stage, r in fits.iterrows():
        values[f"tr_{stage}_peak_per_score"] = f"{r['bytes_per_score']:.0f}"
        values[f"tr_{stage}_peak_per_q"] = f"{r['bytes_per_q_element']:.1f}"
    at = table[(table["status"] == "ok") & (table["seq"] == DEFAULT_SHAPE.seq)].set_index("stage")
    if "naive" in at.index:
        r = at.loc["naive"]
        scores = float(r["batch"] * r["heads"] * r["seq"] ** 2)
        values["tr_naive_kept_per_score"] = f"{memory_saved(memory, 'naive') / scores:.0f}"
    lse = lse_bytes(DEFAULT_SHAPE)
    shares = {s: 100 * lse / float(at.loc[s, "peak_bytes"]) for s in at.index if s in FUSED_STAGES}
    if shares:
        values["tr_lse_pct_min"] = f"{min(shares.values()):.1f}"
        values["tr_lse_pct_max"] = f"{max(shares.values()):.1f}"
    capped = table[(table["status"] == "ok") & (table["stopped"] == "cap")]
    if len(capped):
        values["tr_cap_step_min"] = f"{capped['step_seconds'].min():.1f}"
        values["tr_cap_step_max"] = f"{capped['step_seconds'].max():.1f}"
    walls = bw.limit_seq(memory).set_index("stage")["wall_seq"]
    for stage, wall in walls.items():
        values[f"tr_{stage}_wall_m"] = f"{wall / 1e6:.2f}"
    fused_walls = walls[walls.index.isin(FUSED_STAGES)]
    past = [str(s) for s in fused_walls.index[fused_walls > 1e6]]
    values["tr_wall_million"] = sentence_for(
        past, none="all of them meet it below a million tokens", one="only {name} stays past a million tokens",
        several="{names} stay past a million tokens", every="all of them stay past a million tokens",
        total=len(fused_walls))
    values |= fused_cap_facts(memory)
    for stage, prof in (forwards or {}).items():
        p = prof.provenance
        if p.peak_memory_bytes is not None and p.memory_before_bytes is not None:
            values[f"tr_{stage}_nograd_mib"] = f"{(p.peak_memory_bytes - p.memory_before_bytes) / MIB:,.1f}"
        values[f"tr_{stage}_page_fwd_us"] = f"{float(prof.summary()['gpu_time_us']):.1f}"
    return values


FUSED_STAGES = FUSED   # the training stages that keep no S×S matrix (Stage.fused)


# the glued values that are whole sentences, with a form for none, one, several and a tie: pasted
# as Markdown ({glue:md}), their numbers bold as every glued number of the book, the words plain
SENTENCES = frozenset({"tr_first_oom_sentence", "tr_fused_search_end", "tr_wall_million", "tr_ridge_sentence",
                       "tr_furthest", "tr_fused_roofs"})


def as_prose(text: str):
    """A glued sentence as Markdown: each number in it bold."""
    from IPython.display import Markdown
    return Markdown(re.sub(r"(?<![\w.])(\d[\d,.]*\d|\d)(%?)", r"**\1\2**", text))


def fused_cap_facts(memory: dict) -> dict:
    """How the fused stages' memory search ended, one sentence with a form for each case: every
    one stopped at the search's cap, some ran out of memory, every one ran out."""
    table = bw.ladder(memory)
    ms = bw.max_seq(memory)
    ms = ms[ms["stage"].isin(FUSED_STAGES)]
    ran_out = ms[ms["bound"] == "largest that fits"]
    stopped = ms[ms["bound"] != "largest that fits"]
    capped = table[(table["status"] == "ok") & (table["stopped"] == "cap") & table["stage"].isin(FUSED_STAGES)]
    steps = (f" (a step there took {capped['step_seconds'].min():.1f} to {capped['step_seconds'].max():.1f} s, "
             "and the next would take about four times as long)") if len(capped) else ""
    top = f"seq {int(stopped['max_seq'].max()):,}" if len(stopped) and stopped["max_seq"].notna().any() else ""
    oom = sentence_for([f"{r.stage} at seq {int(r.max_seq) * 2:,}" for r in ran_out.itertuples()], none="",
                       one="{name}", several="{names}")
    if not len(ran_out):
        text = f"The fused stages never ran out: the search stopped at its cap, {top}{steps}"
    elif not len(stopped):
        text = f"The fused stages ran out too: {oom}"
    else:
        text = f"Of the fused stages, {oom} ran out; the others stopped at the search's cap, {top}{steps}"
    return {"tr_fused_search_end": text}


def memory_saved(memory: dict, stage: str, seq: int = DEFAULT_SHAPE.seq) -> float:
    """The bytes autograd's nodes saved beyond the inputs at `seq` (the ladder's saved_new_bytes)."""
    rows = [r for r in memory.get("ladder", []) if r.get("stage") == stage and r.get("seq") == seq]
    return float(rows[0]["saved_new_bytes"]) if rows and rows[0].get("saved_new_bytes") is not None else float("nan")


def glue_training(profiles: Mapping[str, Profile], memory: dict, forwards: Mapping[str, Profile] | None = None) -> dict:
    values = memory_facts(memory, forwards)
    phases = phases_table(profiles).set_index("stage")
    for stage, r in phases.iterrows():
        values[f"tr_{stage}_fwd_us"] = f"{r['forward GPU µs (training step)']:.1f}"
        values[f"tr_{stage}_bwd_kernels"] = int(r["backward kernels"])
        values[f"tr_{stage}_fwd_kernels"] = int(r["forward kernels"])
        values[f"tr_{stage}_bwd_over_fwd"] = r["backward / forward"]
    held = held_table(profiles).set_index("stage")
    for stage, r in held.iterrows():
        values[f"tr_{stage}_held_mib"] = f"{r['held MiB']:,.1f}"  # as the held table shows it
    if len(held):
        values["tr_score_mib"] = f"{held['one S×S bf16 MiB'].iloc[0]:,.0f}"
        values["tr_lse_mib"] = f"{held['logsumexp fp32 MiB'].iloc[0]:,.2f}"
    g = bw.growth(bw.ladder(memory)).groupby("stage").last()
    for stage, r in g.iterrows():
        values[f"tr_{stage}_growth"] = round(float(r["ratio"]), 2)
    for r in bw.max_seq(memory).itertuples():
        values[f"tr_{r.stage}_max_seq"] = (f"{int(r.max_seq):,}" if r.max_seq == r.max_seq and r.max_seq
                                           else "no seq tried (its first try failed)")
    # glued as the prose reads them (the tie's list is the guess's, the prose has it as one string)
    values |= {f"tr_{k}": v for k, v in answers(profiles, memory).items() if not isinstance(v, list)}
    # the backward's kernels by library, every stage's (the prose reads flash's, cuDNN's and naive's)
    for stage in profiles:
        if stage in TRAINING_STAGES:
            e = bw.step_events(profiles[stage])
            e = e[e["phase"] == "backward"]
            k = e[e["category"] == "kernel"]
            values[f"tr_{stage}_bwd_own"] = int(k["library"].isin(["FlashAttention-2", "cuDNN"]).sum())
            values[f"tr_{stage}_bwd_aten"] = int((k["library"] == "ATen").sum())
            values[f"tr_{stage}_bwd_gemms"] = int((k["kind"] == "gemm").sum())
            values[f"tr_{stage}_bwd_driver"] = int(e["launched_by"].astype(str).str.startswith("cuLaunch").sum())
    ms = bw.max_seq(memory).set_index("stage")
    values["tr_cap_seq"] = f"{int(ms['max_seq'].max()):,}"
    values["tr_line_pct"] = f"{LINE:.0%}"  # the one bound's line, as the timer table draws it
    values = {k: _plain(v) for k, v in values.items()}
    for k, v in values.items():
        glue(k, as_prose(v) if k in SENTENCES else v)
    return values


def ncu_work(recorded: dict) -> pd.DataFrame:
    """The backward beside the forward under Nsight Compute, from `training_counters()`: executed
    FLOPs from the tensor pipe's and FFMA counters times what one unit is worth in the calibration
    matmuls; the roofs of chapter 9 in attrs."""
    c = _counters(recorded)
    out = work_table(recorded["backward"], recorded["forward"], flops_per_unit(c))
    roof = _roof(recorded, c)
    out.attrs["ridge"] = roof["ridge FLOP/B"]
    out.attrs["fp32 ridge"] = q.ridge(roof["fp32 TFLOP/s"], roof["copy TB/s"]) \
        if roof.get("fp32 TFLOP/s") and roof.get("copy TB/s") else None
    out.attrs["roof"] = roof
    return out


def trace_note(prof: Profile) -> HTML:
    """The training step's trace, to download or open in Perfetto, and where to look in it."""
    return trace_links(prof, name=f"training__{prof.stage}__{prof.shape.key}.json.gz", note=(
        "<p>In Perfetto, the forward is <code>attn_fwd</code> on the main thread; the backward's "
        "<code>attn_bwd</code> there only waits, while a second thread (autograd's, one per GPU) runs "
        "<code>autograd::engine::evaluate_function: …Backward0</code> rows and launches the kernels: "
        "follow their arrows to the GPU stream.</p>"))


def timer_table(profiles: Mapping[str, Profile]) -> pd.DataFrame:
    """One training step, timed three ways: the profiler's sum of GPU events (the last profiled
    step, the one the other tables show), the caller's loop of back-to-back steps (median per step,
    and the min–max of its repeats) and triton's do_bench (one cold-L2 step at a time, its launch
    work hidden: shown, it decides nothing); the bound is the book's one definition
    (`helpers.core.bound.of_call`: the loop against the GPU's busy time), none without the loop."""
    rows = []
    for stage, prof in profiles.items():
        s = prof.summary()
        p = prof.provenance
        b = of_call(s)
        rows.append({"stage": stage, "step profiler GPU µs": round(float(s["gpu_time_us"]), 1),
                     "step loop µs": None if b is None else round(b.wall_us, 1),
                     "loop spread µs": "—" if b is None else f"{b.spread[0]:,.1f}–{b.spread[1]:,.1f}",
                     "GPU busy µs (beside the loop)": None if b is None or b.busy_from != BUSY_TIMERS else round(b.busy_us, 1),
                     "step do_bench µs": round(p.do_bench_us, 1) if p.do_bench_us else None,
                     "step do_bench / profiler": round(p.do_bench_us / float(s["gpu_time_us"]), 2) if p.do_bench_us else None,
                     "bound": bound_words(b)})
    table = pd.DataFrame(rows)
    caption = ("One training step: the last profiled step's GPU events; the caller's loop of back-to-back steps "
               "(median per step, min–max of its repeats); do_bench, one cold-L2 step at a time (shown, it decides "
               f"nothing). Bound by the GPU when the loop is at most {LINE:.0%} longer than the GPU's busy time, about "
               "even when that line falls inside the loop's spread (glossary: bound by the CPU / by the GPU).")
    if any(r["bound"] == NO_TIMER_WORDS for r in rows):
        caption += f" {NO_TIMER[0].upper() + NO_TIMER[1:]}."
    table.attrs["caption"] = caption
    return mark_gpus(table, profiles)


def glue_work(work: pd.DataFrame, kernels: pd.DataFrame | None = None) -> dict:
    """The roofline section's figures: each backward's FLOPs over its forward's and over the model,
    which side of the ridge each sits, and, with `kernels` (backward_limits), what bounds them."""
    w = work.set_index("stage")
    values = {}
    for stage in ("naive", *PINNED_BACKENDS):
        if stage in w.index:
            r = w.loc[stage]
            values[f"tr_{stage}_flops_ratio"] = r.get("backward / forward FLOPs")
            values[f"tr_{stage}_bwd_gflop"] = r["backward GFLOP (ncu)"]
            values[f"tr_{stage}_bwd_ai"] = r["backward FLOP/byte"]
            values[f"tr_{stage}_fwd_ai"] = r.get("forward FLOP/byte")
            values[f"tr_{stage}_tensor_ratio"] = r.get("backward / forward, tensor pipe")
            values[f"tr_{stage}_fwd_fp32_gflop"] = r.get("forward fp32 GFLOP (ncu)")
            values[f"tr_{stage}_bwd_fp32_gflop"] = r["backward fp32 GFLOP (ncu)"]
    roof = work.attrs.get("roof") or {}
    if work.attrs.get("ridge"):
        ridge = float(work.attrs["ridge"])
        values["tr_ridge"] = int(round(ridge))
        values["tr_ridge_sentence"] = ridge_sentence(w["backward FLOP/byte"], ridge)
    if roof.get("matmul TFLOP/s"):
        values["tr_tensor_roof"] = f"{roof['matmul TFLOP/s']:.0f}"
    if roof.get("fp32 TFLOP/s"):
        values["tr_fp32_roof"] = f"{roof['fp32 TFLOP/s']:.1f}"
    if work.attrs.get("fp32 ridge"):
        values["tr_fp32_ridge"] = f"{work.attrs['fp32 ridge']:.1f}"
    if roof.get("copy TB/s"):
        values["tr_copy_roof"] = f"{roof['copy TB/s']:.2f}"
    values["tr_bound_share"] = f"{100 * q.BOUND_SHARE:.0f}"
    first = w.iloc[0]
    values["tr_model_kept_gflop"] = first["model GFLOP, P kept (4 products)"]
    values["tr_model_recomputed_gflop"] = first["model GFLOP, P recomputed (5)"]
    if kernels is not None and len(kernels):
        values |= _glue_limits(w, kernels, roof)
    # a figure a stage has not (sdpa_math's tensor-pipe ratio: it runs no tensor instruction) is
    # not glued: no sentence may read "nan"
    values = {k: _plain(v) for k, v in values.items() if v is not None and not (isinstance(v, float) and v != v)}
    for k, v in values.items():
        glue(k, as_prose(v) if k in SENTENCES else v)
    return values


def ridge_sentence(intensity: pd.Series, ridge: float) -> str:
    """Where each pinned fused backward sits against the tensor ridge, in words that one function
    draws from the numbers (`helpers.core.wording.place`: "just" within its NEAR of the ridge),
    grouped by place, right first; each with its FLOP per byte and its distance from the ridge."""
    fused = intensity[intensity.index.isin(TRAINING_FUSED)].dropna().sort_values(ascending=False)
    if not len(fused):
        return f"No fused backward was measured against the tensor ridge ({ridge:.0f} FLOP per byte)."
    groups: dict[str, list[str]] = {}
    for stage, ai in fused.items():
        groups.setdefault(place(float(ai), ridge), []).append(
            f"{stage} ({float(ai):.0f}, {percent_from(float(ai), ridge)})")
    parts = []
    for i, (where, members) in enumerate(groups.items()):
        one = len(members) == 1
        head = ("the backward of" if one else "the backwards of") if i == 0 else ("that of" if one else "those of")
        parts.append(f"{head} {names(members)} {'sits' if one else 'sit'} {where} it")
    return f"Against the tensor ridge ({ridge:.0f} FLOP per byte), " + "; ".join(parts) + "."


def _span(values: list[float]) -> str:
    """"9–31", or "31" where the lowest and the highest print alike."""
    low, high = f"{min(values):.0f}", f"{max(values):.0f}"
    return low if low == high else f"{low}–{high}"


def furthest_sentence(pct: Mapping[str, float]) -> str:
    """Which fused backward gets furthest toward the tensor roof, with a form for a tie (as printed)."""
    shown = {stage: f"{v:.0f}" for stage, v in pct.items()}
    if not shown:
        return ""
    best = max(pct.values())
    top = [s for s in shown if shown[s] == f"{best:.0f}"]
    return sentence_for(top, none="", one="{name}'s backward gets furthest",
                        several="{names} get furthest together") + f", {best:.0f}% of the tensor roof"


# the fused backwards of the roofline section: the pinned fused backends (sdpa_auto runs one of
# theirs, the same kernels)
TRAINING_FUSED = tuple(s for s in PINNED_FUSED if s in TRAINING_STAGES)


def _glue_limits(w: pd.DataFrame, kernels: pd.DataFrame, roof: dict) -> dict:
    values = {}
    math = kernels[kernels["stage"] == "sdpa_math"]
    if len(math):
        gemms = math[(math["pipe"] == q.FFMA_PIPE) & (math["GFLOP"] > 1) & (math["kernel"].str.contains("gemm"))]
        fp32 = math[(math["bound by"] == "compute") & (math["pipe"] == q.FFMA_PIPE)]
        tbps = gemms["DRAM MB"] * 1e6 / (gemms["ncu µs"] * 1e-6) / 1e12
        values |= {"tr_math_gemms": len(gemms),
                   "tr_math_fp32_share": f"{100 * fp32['ncu µs'].sum() / math['ncu µs'].sum():.0f}",
                   "tr_math_gemm_share": f"{100 * gemms['ncu µs'].sum() / math['ncu µs'].sum():.0f}",
                   "tr_math_gemm_tflops_min": f"{gemms['TFLOP/s'].min():.0f}",
                   "tr_math_gemm_tflops_max": f"{gemms['TFLOP/s'].max():.0f}",
                   "tr_math_gemm_tbps_min": f"{tbps.min():.1f}", "tr_math_gemm_tbps_max": f"{tbps.max():.1f}",
                   "tr_math_gemm_pct_min": f"{gemms['% of compute roof'].min():.0f}",
                   "tr_math_gemm_pct_max": f"{gemms['% of compute roof'].max():.0f}"}
    pct_c, pct_m = [], []
    for stage in TRAINING_FUSED:
        if stage not in w.index or not roof.get("matmul TFLOP/s"):
            continue
        k = kernels[kernels["stage"] == stage]
        # the whole backward, unrounded: its kernels' sums
        lim = q.limit(k["GFLOP"].sum() * 1e9, k["DRAM MB"].sum() * 1e6, k["ncu µs"].sum() * 1e-6,
                      roof["matmul TFLOP/s"], roof["copy TB/s"])
        main = k.loc[k["GFLOP"].idxmax()]
        pct_c.append(lim["% of compute roof"])
        pct_m.append(lim["% of copy roof"])
        values |= {f"tr_{stage}_bwd_pct_compute": f"{lim['% of compute roof']:.0f}",
                   f"tr_{stage}_bwd_pct_copy": f"{lim['% of copy roof']:.0f}",
                   f"tr_{stage}_bwd_tflops": f"{lim['TFLOP/s']:.0f}", f"tr_{stage}_bwd_side": lim["side"],
                   f"tr_{stage}_bwd_mma": main["tensor instructions"],
                   f"tr_{stage}_bwd_occ": f"{main['achieved occupancy %']:.0f}"}
    if pct_c:
        values["tr_furthest"] = furthest_sentence(
            {stage: float(values[f"tr_{stage}_bwd_pct_compute"]) for stage in TRAINING_FUSED
             if f"tr_{stage}_bwd_pct_compute" in values})
        measured = [s for s in TRAINING_FUSED if f"tr_{s}_bwd_pct_compute" in values]
        bound = [s for s, c, m in zip(measured, pct_c, pct_m) if max(c, m) >= 100 * q.BOUND_SHARE]
        reach = (f"reach {_span(pct_c)}% of the compute roof and {_span(pct_m)}% of the copy roof")
        values["tr_fused_roofs"] = sentence_for(
            bound, none=f"Neither roof holds the fused backwards: they {reach}, held back by latency",
            one=f"Of the fused backwards, a roof holds only {{name}}'s: they {reach}",
            several=f"Of the fused backwards, a roof holds those of {{names}}: they {reach}",
            every=f"A roof holds every fused backward: they {reach}", total=len(measured))
        values |= {"tr_fused_pct_compute_min": f"{min(pct_c):.0f}", "tr_fused_pct_compute_max": f"{max(pct_c):.0f}",
                   "tr_fused_pct_copy_min": f"{min(pct_m):.0f}", "tr_fused_pct_copy_max": f"{max(pct_m):.0f}"}
    return values


def flops_table(work: pd.DataFrame) -> pd.DataFrame:
    """The work: each phase's GFLOP as ncu measured them, against the backward's two models."""
    return work[["stage", "forward GFLOP (ncu)", "backward GFLOP (ncu)", "backward / forward FLOPs",
                 "forward fp32 GFLOP (ncu)", "backward fp32 GFLOP (ncu)", "backward / forward, tensor pipe",
                 "model GFLOP, P kept (4 products)", "model GFLOP, P recomputed (5)"]]


def bytes_table(work: pd.DataFrame) -> pd.DataFrame:
    """The bytes: each phase's DRAM traffic as ncu measured it, and FLOP per byte."""
    out = work[["stage", "backward kernels (ncu)", "forward GB (ncu)", "backward GB (ncu)",
                "forward FLOP/byte", "backward FLOP/byte", "backward ncu µs"]].rename(columns={
        "forward FLOP/byte": "forward FLOP per kernel byte", "backward FLOP/byte": "backward FLOP per kernel byte"})
    out.attrs["caption"] = ("Kernel DRAM bytes (Nsight Compute): the kernels' own, without the forward's copies, so "
                            "naive's forward FLOP/byte here is higher than chapter 9's, which counts its hidden "
                            "memcpy too (glossary: kernel DRAM bytes, forward DRAM bytes).")
    return out
