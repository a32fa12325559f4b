"""The training chapter (11) and its views: the backward's kernels and autograd nodes, what autograd keeps,
peak memory against seq with its models, the largest seq per stage, the memory timeline of one
step, the backward beside the forward under Nsight Compute, and the guesses' answers.

Every view takes what the notebook acquired (Profiles, the memory recording, snapshot bytes) and
computes from it; nothing here profiles or reads the GPU."""
from __future__ import annotations

import base64
import html
from typing import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from IPython.display import HTML

from ..core.bound import LINE, of_call
from ..core import backward as bw
from ..core.profile import Profile
from ..core.stages import DEFAULT_SHAPE, PINNED_BACKENDS, Shape
from ..core.stages import STAGES as STAGES_REGISTRY
from ..core.training_stages import TRAINING_STAGES, backward_flops, recompute_free_backward_flops
from ..views.charts import KIND_COLORS, MUTED, _title, reference_line
from ..views.perfetto import trace_links
from ..views.prose import glue
from .counters import Counters, flops_per_unit, kernel_flops

MIB = 2**20
GIB = 2**30
# each stage in the colour the registry gives it wherever stages are compared
STAGE_COLORS = {name: st.colour for name, st in STAGES_REGISTRY.items()}
MEMORY_VIZ = "https://pytorch.org/memory_viz"
STAGES = TRAINING_STAGES


# --- kernels: forward against backward -------------------------------------------------------------

def phases_table(profiles: Mapping[str, Profile]) -> pd.DataFrame:
    """Per stage, one training step: kernels and GPU time of the forward and of the backward, the
    backward's driver launches, and the threads that launched each."""
    rows = []
    for stage, prof in profiles.items():
        c = bw.phase_counts(prof)
        f, b = c["forward"], c["backward"]
        rows.append({"stage": stage, "forward kernels": f["kernels"], "backward kernels": b["kernels"],
                     "forward GPU µs": round(f["gpu_time_us"], 1), "backward GPU µs": round(b["gpu_time_us"], 1),
                     "backward / forward": round(b["gpu_time_us"] / f["gpu_time_us"], 2) if f["gpu_time_us"] else None,
                     "backward driver launches": b["driver_launches"],
                     "backward launched from": ", ".join(b["threads"])})
    return pd.DataFrame(rows)


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
    for kind, g in t.groupby("kind"):
        by = {f"{r.stage} {'fwd' if r.phase == 'forward' else 'bwd'}": r.us for r in g.itertuples()}
        fig.add_bar(y=labels, x=[by.get(label, 0) for label in labels], name=kind, orientation="h",
                    marker_color=KIND_COLORS.get(kind, KIND_COLORS["unknown"]),
                    hovertemplate=f"{kind}<br>%{{y}}: %{{x:.1f}} µs<extra></extra>")
    fig.update_layout(barmode="stack", xaxis_title="GPU µs in one step",
                      yaxis=dict(autorange="reversed", tickfont=dict(size=11)))
    _legend_room(fig, 160 + 22 * len(labels))
    return _title(fig, "One training step: forward and backward", "GPU time stacked by kernel kind, decoded from its name")


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
                     ("not visible to saved_tensors_hooks" if t.get("hooks_error") else "none"),
                     "one S×S bf16 MiB": round(score_bytes(shape) / MIB, 1),
                     "logsumexp fp32 MiB": round(lse_bytes(shape) / MIB, 2)})
    return pd.DataFrame(rows)


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
    limits = bw.limit_seq(memory).set_index("stage")["model_limit_seq"]
    t["model: memory full at seq"] = t["stage"].map(limits).round(-1).astype("Int64")
    return t.rename(columns={"max_seq": "largest seq that ran"})


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
    """Per stage: FLOPs and DRAM bytes of the forward and of the backward as Nsight Compute
    measured them (tensor-pipe counters × the calibration's FLOPs per unit), the backward's FLOPs
    from the shape (5 products where P is recomputed, 4 where it is kept), and each phase's
    arithmetic intensity."""
    rows = []
    for stage, b in backward.items():
        f = forward.get(stage)
        bf = float(kernel_flops(b, factors).sum())
        bb = float(b["dram_bytes"].sum())
        row = {"stage": stage, "backward kernels (ncu)": len(b), "backward GFLOP (ncu)": round(bf / 1e9, 1),
               "backward GB (ncu)": round(bb / 1e9, 2),
               "backward FLOP/byte": round(bf / bb, 1) if bb else None,
               "model GFLOP, P kept (4 products)": round(recompute_free_backward_flops(shape) / 1e9, 1),
               "model GFLOP, P recomputed (5)": round(backward_flops(shape) / 1e9, 1)}
        if f is not None:
            ff, fb = float(kernel_flops(f, factors).sum()), float(f["dram_bytes"].sum())
            row |= {"forward GFLOP (ncu)": round(ff / 1e9, 1), "forward GB (ncu)": round(fb / 1e9, 2),
                    "forward FLOP/byte": round(ff / fb, 1) if fb else None,
                    "backward / forward FLOPs": round(bf / ff, 2) if ff else None}
        rows.append(row)
    return pd.DataFrame(rows)


def roofline_chart(work: pd.DataFrame, ridge: float | None = None) -> go.Figure:
    ridge = ridge if ridge is not None else work.attrs.get("ridge")
    """Forward and backward of each stage as two points of arithmetic intensity, joined by an arrow."""
    fig = go.Figure()
    for d in work.to_dict("records"):
        stage = d["stage"]
        color = STAGE_COLORS.get(stage, MUTED)
        xs = [d.get("forward FLOP/byte"), d.get("backward FLOP/byte")]
        ys = [d.get("forward GFLOP (ncu)"), d.get("backward GFLOP (ncu)")]
        fig.add_scatter(x=xs, y=ys, mode="lines+markers+text", name=stage, line=dict(color=color),
                        marker=dict(symbol=["circle", "triangle-up"], size=10), text=["fwd", "bwd"],
                        textposition="top center", textfont=dict(size=10),
                        hovertemplate=f"{stage}<br>%{{text}}: %{{x:.1f}} FLOP/byte, %{{y:.1f}} GFLOP<extra></extra>")
    fig.update_layout(xaxis_type="log", yaxis_type="log", xaxis_title="FLOP per DRAM byte (ncu)",
                      yaxis_title="GFLOP (ncu)")
    if ridge:
        reference_line(fig, ridge, f"ridge {ridge:.0f} FLOP/byte", axis="x")
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
        out["first_oom_seq"] = f"{int(first['max_seq'].iloc[0]) * 2:,}"
        # within one doubling, the stage whose model reaches the GPU's memory at the smallest seq
        limits = bw.limit_seq(memory).set_index("stage")["model_limit_seq"]
        limits = limits[limits.index.isin(ms["stage"])]
        out["first_oom"] = str(limits.idxmin())
        out["first_oom_model_seq"] = f"{limits.min():,.0f}"
    return out


def glue_training(profiles: Mapping[str, Profile], memory: dict) -> dict:
    values = {}
    phases = phases_table(profiles).set_index("stage")
    for stage, r in phases.iterrows():
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
        values[f"tr_{r.stage}_max_seq"] = f"{int(r.max_seq):,}" if r.max_seq == r.max_seq and r.max_seq else "none"
    values |= {f"tr_{k}": v for k, v in answers(profiles, memory).items()}
    # the backward's kernels by library, for the prose on flash and cuDNN
    for stage in ("sdpa_flash", "sdpa_cudnn", "naive"):
        if stage in profiles:
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
        glue(k, v)
    return values


def ncu_work(recorded: dict) -> pd.DataFrame:
    """The backward beside the forward under Nsight Compute, from `training_counters()`: FLOPs from
    the tensor pipe's counters times what one unit is worth in the calibration matmuls."""
    c = Counters("replay", recorded["gpu"], recorded["provenance"],
                 {(s, DEFAULT_SHAPE.key): t for s, t in recorded["forward"].items()}, recorded["calibration"])
    out = work_table(recorded["backward"], recorded["forward"], flops_per_unit(c))
    out.attrs["ridge"] = recorded.get("ridge")
    return out


def trace_note(prof: Profile) -> HTML:
    """The training step's trace, to download or open in Perfetto, and where to look in it."""
    return trace_links(prof, name=f"training__{prof.stage}__{prof.shape.key}.json.gz", note=(
        "<p>In Perfetto, the forward is <code>attn_fwd</code> on the main thread; the backward's "
        "<code>attn_bwd</code> there only waits, while a second thread (autograd's, one per GPU) runs "
        "<code>autograd::engine::evaluate_function: …Backward0</code> rows and launches the kernels: "
        "follow their arrows to the GPU stream.</p>"))


def timer_table(profiles: Mapping[str, Profile]) -> pd.DataFrame:
    """GPU time of one training step: the profiler's sum of GPU events (the last profiled step,
    the one the other tables show) against triton's do_bench of the same step, and the bound the
    book's one definition (helpers.core.bound) draws from the two."""
    rows = []
    for stage, prof in profiles.items():
        s = prof.summary()
        p = prof.provenance
        b = of_call(s)
        rows.append({"stage": stage, "profiler GPU µs": round(float(s["gpu_time_us"]), 1),
                     "do_bench µs": round(p.do_bench_us, 1) if p.do_bench_us else None,
                     "do_bench / profiler": round(p.do_bench_us / float(s["gpu_time_us"]), 2) if p.do_bench_us else None,
                     "bound": "no independent timing recorded" if b is None else b.words})
    table = pd.DataFrame(rows)
    table.attrs["caption"] = ("One training step: the last profiled step's GPU events against do_bench per step; "
                              f"bound by the GPU when do_bench is at most {LINE:.0%} longer (glossary: bound by the CPU / by the GPU).")
    return table


def glue_work(work: pd.DataFrame) -> dict:
    """The roofline section's figures: each backward's FLOPs over its forward's, and over the model."""
    w = work.set_index("stage")
    values = {}
    for stage in ("naive", *PINNED_BACKENDS):
        if stage in w.index:
            r = w.loc[stage]
            values[f"tr_{stage}_flops_ratio"] = r.get("backward / forward FLOPs")
            values[f"tr_{stage}_bwd_gflop"] = r["backward GFLOP (ncu)"]
            values[f"tr_{stage}_bwd_ai"] = r["backward FLOP/byte"]
            values[f"tr_{stage}_fwd_ai"] = r.get("forward FLOP/byte")
    if work.attrs.get("ridge"):
        values["tr_ridge"] = int(round(float(work.attrs["ridge"])))
        fused = w[w["backward FLOP/byte"] > work.attrs["ridge"]]
        values["tr_right_of_ridge"] = ", ".join(fused.index)
    first = w.iloc[0]
    values["tr_model_kept_gflop"] = first["model GFLOP, P kept (4 products)"]
    values["tr_model_recomputed_gflop"] = first["model GFLOP, P recomputed (5)"]
    values = {k: _plain(v) for k, v in values.items()}
    for k, v in values.items():
        glue(k, v)
    return values


def flops_table(work: pd.DataFrame) -> pd.DataFrame:
    """The work: each phase's GFLOP as ncu measured them, against the backward's two models."""
    return work[["stage", "forward GFLOP (ncu)", "backward GFLOP (ncu)", "backward / forward FLOPs",
                 "model GFLOP, P kept (4 products)", "model GFLOP, P recomputed (5)"]]


def bytes_table(work: pd.DataFrame) -> pd.DataFrame:
    """The bytes: each phase's DRAM traffic as ncu measured it, and FLOP per byte."""
    return work[["stage", "backward kernels (ncu)", "forward GB (ncu)", "backward GB (ncu)",
                 "forward FLOP/byte", "backward FLOP/byte"]]
