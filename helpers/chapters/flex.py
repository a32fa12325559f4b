"""The flex page: FlexAttention, one Triton template kernel whose mask is data.

What the page reads from the traces: the template kernel's name and launch configuration (and,
from Inductor's generated code, the tile sizes behind it); the block mask, built once outside the
forward; the gap between the kernel's time and the time per call, and the CPU work that fills it;
how that gap closes as seq grows; and a second mask, a sliding window, through the same kernel.

The block masks drawn here are computed on this machine's CPU from the stage's own mask
function (the registry's `extra_inputs`), at the trace's shape: a block mask depends on the mask
and the shape, not on the GPU."""
from __future__ import annotations

from functools import lru_cache
from typing import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..core import inductor
from ..core.names import decode
from ..core.profile import Profile
from ..core.wording import sentence_for
from ..core.stages import DEFAULT_SHAPE, SLIDING_WINDOW, STAGES, Shape, get_stage, stages_where
from ..views.tables import mark_gpus
from ..views.charts import KIND_COLORS, MUTED, _title
from .compiled import cpu_layers, generated_code
from ..core.bound import (ABOUT_THE_SAME, CPU, EVEN, GPU, LINE, NO_TIMER, NO_TIMER_WORDS, SAME_WITHIN, WORDS,
                          later_calls, of_call, speed_words)
from ..core.bound import words as bound_words
from ..views.prose import glue
from ..views.verdicts import Verdict, table, verdict

# the shapes of the gap sweep: the article's, and the recorded seq sweep (head_dim 64)
SWEEP_SEQS = (512, 1024, 2048, 4096)
BLOCK_STATES = {0: "skipped", 1: "partial: mask_mod applied", 2: "full: no mask_mod"}
BLOCK_COLORS = {0: "rgba(138,143,152,0.12)", 1: KIND_COLORS["softmax"], 2: KIND_COLORS["attention"]}
# many entries: under the plot, where wrapping onto more lines (a phone) overlaps nothing
BOTTOM_LEGEND = dict(orientation="h", yref="container", y=0, yanchor="bottom", x=0, xanchor="left")
# each stage in its one colour of the book (the registry's), as on the roofline and in chapter 11
STAGE_COLORS = {name: stage.colour for name, stage in STAGES.items()}

# this page's stages: flex and its variants (another mask), in the registry's order
FLEX = ("flex", *stages_where(variant_of="flex"))


def template_kernel(prof: Profile) -> pd.Series:
    """The forward's Triton template kernel (the longest Triton kernel, if several)."""
    k = prof.kernels()
    k = k[k["library"] == "Triton"]
    if k.empty:
        raise ValueError(f"the {prof.stage} forward has no Triton kernel")
    return k.sort_values("dur_us").iloc[-1]


def _generated(prof: Profile):
    return inductor.kernel(generated_code(prof), template_kernel(prof)["name"])


# --- the block mask ------------------------------------------------------------------------------

@lru_cache(maxsize=16)
def block_states(stage: str, shape: Shape = DEFAULT_SHAPE) -> tuple[np.ndarray, tuple[int, int]]:
    """[query blocks, key blocks] of 0 skipped, 1 partial, 2 full, and the block size, from the
    stage's own block mask built here on the CPU."""
    import torch
    extra = get_stage(stage).extra_inputs
    if extra is None:
        raise ValueError(f"stage {stage!r} has no block mask")
    inputs = {"shape": shape, "q": torch.empty(0)}
    extra(inputs)
    bm = inputs["block_mask"]
    nq = bm.kv_num_blocks.shape[-1]
    nkv = -(-shape.seq // bm.BLOCK_SIZE[1])
    grid = np.zeros((nq, nkv), dtype=int)
    for i in range(nq):
        n = int(bm.kv_num_blocks[0, 0, i])
        grid[i, bm.kv_indices[0, 0, i, :n].numpy()] = 1
        if bm.full_kv_num_blocks is not None:
            f = int(bm.full_kv_num_blocks[0, 0, i])
            grid[i, bm.full_kv_indices[0, 0, i, :f].numpy()] = 2
    return grid, tuple(int(b) for b in bm.BLOCK_SIZE)


def block_table(stages: list[str], shape: Shape = DEFAULT_SHAPE) -> pd.DataFrame:
    """Per stage: the block mask's blocks, full, partial and skipped, and the share the kernel visits."""
    rows = []
    for stage in stages:
        grid, size = block_states(stage, shape)
        full, partial = int((grid == 2).sum()), int((grid == 1).sum())
        rows.append({"stage": stage, "block (q × kv)": f"{size[0]} × {size[1]}",
                     "query blocks": grid.shape[0], "key blocks": grid.shape[1],
                     "full blocks": full, "partial blocks": partial,
                     "skipped blocks": int((grid == 0).sum()),
                     "visited %": round(100 * (full + partial) / grid.size, 1)})
    return pd.DataFrame(rows).set_index("stage")


def block_mask_chart(stages: list[str], shape: Shape = DEFAULT_SHAPE) -> go.Figure:
    """The block masks side by side: which key blocks each query block visits, and how."""
    # each stage named above its own mask: two x-axis titles side by side overlap on a phone
    fig = make_subplots(rows=1, cols=len(stages), horizontal_spacing=0.08, subplot_titles=list(stages))
    # a discrete colour scale over the states 0, 1, 2: each third of the range one colour
    scale = []
    for state in (0, 1, 2):
        scale += [[state / 3, BLOCK_COLORS[state]], [(state + 1) / 3, BLOCK_COLORS[state]]]
    for col, stage in enumerate(stages, start=1):
        grid, size = block_states(stage, shape)
        text = [[BLOCK_STATES[v] for v in row] for row in grid]
        fig.add_heatmap(z=grid, zmin=-0.5, zmax=2.5, colorscale=scale, showscale=False, xgap=2, ygap=2,
                        text=text, row=1, col=col,
                        hovertemplate=f"{stage}<br>query block %{{y}}, key block %{{x}}: %{{text}}<extra></extra>")
        fig.update_xaxes(title_text="key block", row=1, col=col, showgrid=False, zeroline=False,
                         constrain="domain")
        fig.update_yaxes(title_text="query block" if col == 1 else None, row=1, col=col, autorange="reversed",
                         showgrid=False, zeroline=False, constrain="domain",
                         scaleanchor=f"x{col if col > 1 else ''}")
    for state in (2, 1, 0):  # the legend: one entry per state, no data of its own
        fig.add_scatter(x=[None], y=[None], mode="markers", name=BLOCK_STATES[state], row=1, col=1,
                        marker=dict(symbol="square", size=12, color=BLOCK_COLORS[state]))
    fig.update_layout(height=460, legend=BOTTOM_LEGEND, margin=dict(b=110))
    return _title(fig, "The block masks, block by block",
                  f"seq {shape.seq}, blocks of {size[0]} × {size[1]} · built here on the CPU from each "
                  "stage's mask function")


# --- the kernel and its launch -------------------------------------------------------------------

def launch_config(prof: Profile) -> pd.DataFrame:
    """The template kernel's launch, from the trace, beside what Inductor's generated code says."""
    k = template_kernel(prof)
    d = decode(k["name"]).details
    g = _generated(prof)
    s = prof.shape
    grid = k["grid"] or (None, None, None)
    rows = [
        ("kernel", k["name"], "trace"),
        ("class", f"{d.get('class_token')}: {d.get('kernel_class')}", "name"),
        ("fused op", ", ".join(d.get("fused_ops") or []), "name"),
        ("grid x: query blocks", grid[0], "trace"),
        ("grid y", f"{grid[1]} (batch is {s.batch})", "trace"),
        ("grid z", f"{grid[2]} (heads is {s.heads})", "trace"),
        ("threads per block", k["threads_per_block"], "trace"),
        ("registers / thread", k["registers_per_thread"], "trace"),
        ("shared memory (B)", k["shared_memory_bytes"], "trace"),
        ("CUPTI est. occupancy %", k["est_occupancy_pct"], "trace"),
        ("launched by", k["launched_by"], "trace"),
    ]
    if g is not None:
        for key in ("BLOCK_M", "BLOCK_N", "SPARSE_Q_BLOCK_SIZE", "SPARSE_KV_BLOCK_SIZE",
                    "QK_HEAD_DIM", "V_HEAD_DIM", "IS_DIVISIBLE", "PRESCALE_QK", "SM_SCALE"):
            if key in g.constants:
                rows.append((key, g.constants[key], "generated code"))
        for key in ("num_warps", "num_stages"):
            if key in g.launch:
                rows.append((key, g.launch[key], "generated code"))
    else:
        rows.append(("tile sizes (BLOCK_M, BLOCK_N), num_warps, num_stages",
                     "not in this trace: its provenance holds no generated code", "—"))
    return pd.DataFrame(rows, columns=["field", "value", "from"]).astype({"value": str}).set_index("field")


def against_flash(flex: Profile, flash: Profile) -> pd.DataFrame:
    """The two kernels' launches and times, field by field."""
    columns = {}
    for prof in (flex, flash):
        k = prof.kernels()
        k = k[k["category"] == "kernel"].sort_values("dur_us").iloc[-1]
        s = prof.summary()
        columns[prof.stage] = {
            "kernel": decode(k["name"]).summary, "grid": str(k["grid"]), "threads per block": k["threads_per_block"],
            "blocks": k["grid_blocks"], "registers / thread": k["registers_per_thread"],
            "shared memory (B)": k["shared_memory_bytes"], "launched by": k["launched_by"],
            "GPU µs per forward": round(float(s["gpu_time_us"]), 1),
            "loop µs per call": None if of_call(s) is None else round(of_call(s).wall_us, 1),
            "do_bench µs per call": None if s["do_bench_us"] is None else round(float(s["do_bench_us"]), 1),
        }
    frame = pd.DataFrame(columns).astype(str)
    frame.index.name = "field"
    return mark_gpus(frame, [flex, flash])


# --- the gap between the kernel and the call -----------------------------------------------------

def _cap(text: str) -> str:
    return text[0].upper() + text[1:]


def call_gap(profiles: dict[str, Profile]) -> pd.DataFrame:
    """Per stage: the kernel time per forward, what a loop pays per call (the caller's timer:
    median and spread), the gap between the two and the GPU's busy share, and the bound the book's
    one definition draws (`bound.of_call`); do_bench's cold call and the profiled CPU time beside
    them decide nothing. Without the caller's timer: no gap and no bound, and the caption says so."""
    rows = []
    for name, prof in dict(profiles).items():
        s = prof.summary()
        b = of_call(s)
        bench = s["do_bench_us"]
        rows.append({"stage": name, "GPU µs per forward (profiler)": round(float(s["gpu_time_us"]), 1),
                     "loop µs per call": None if b is None else round(b.wall_us, 1),
                     "loop spread µs": "—" if b is None else f"{b.spread[0]:,.1f}–{b.spread[1]:,.1f}",
                     "GPU busy µs per call": None if b is None else round(b.busy_us, 1),
                     "gap µs": None if b is None else round(b.wall_us - b.busy_us, 1),
                     "GPU busy %": None if b is None else round(b.busy_pct, 1),
                     "do_bench µs (cold call)": None if bench is None else round(float(bench), 1),
                     "attn_fwd CPU µs (profiled)": round(float(s["cpu_time_us"]), 1),
                     "bound": bound_words(b)})
    frame = pd.DataFrame(rows).set_index("stage")
    if (frame["bound"] == NO_TIMER_WORDS).any():
        frame.attrs["caption"] = _cap(NO_TIMER) + "."
    return mark_gpus(frame, profiles)


def cpu_share(prof: Profile) -> pd.DataFrame:
    """The CPU lane of one call by self time: what the CPU does while the GPU waits."""
    layers = cpu_layers(prof)
    total = float(prof.cpu_ops().query("depth == 0")["dur_us"].sum())
    layers["share of attn_fwd %"] = (100 * layers["self µs"] / total).round(1) if total else None
    return layers


GAP_STAGES = ("sdpa_flash", *FLEX)   # the stages of the call-gap sweep


def gap_shapes(seqs: tuple[int, ...] = SWEEP_SEQS) -> list[Shape]:
    """The call-gap sweep's shapes: the default shape at each seq (head_dim 64)."""
    return [Shape(seq=seq) for seq in seqs]


def gap_sweep(grid: Mapping[tuple[str, Shape], Profile]) -> pd.DataFrame:
    """GPU time and what a loop pays per call at each seq, one row per stage and seq, in `grid`'s
    order: a Session's `grid(GAP_STAGES, gap_shapes(), known=profiles)` (live, each capture compiles
    afresh). *loop / busy*: the loop's time per call over the GPU's busy time per call; *bound*: the
    book's one definition (`bound.of_call`); do_bench's cold call is shown and decides nothing."""
    rows = []
    for (stage, shape), prof in grid.items():
        seq = shape.seq
        s = prof.summary()
        b = of_call(s)
        bench = s["do_bench_us"]
        setup = getattr(prof.provenance, "setup_seconds", None)
        visited = _visited(stage, shape)
        rows.append({"stage": stage, "seq": seq, "GPU µs": round(float(s["gpu_time_us"]), 1),
                     "loop µs": None if b is None else round(b.wall_us, 1),
                     "loop spread µs": "—" if b is None else f"{b.spread[0]:,.1f}–{b.spread[1]:,.1f}",
                     "busy µs": None if b is None else round(b.busy_us, 1),
                     "loop / busy": None if b is None else round(b.wall_us / b.busy_us, 2),
                     "bound": bound_words(b),
                     "do_bench µs": None if bench is None else round(float(bench), 1),
                     "blocks visited": visited,
                     "mask set-up ms": None if setup is None else round(setup * 1e3, 1),
                     "measured": f"{prof.mode} on {prof.provenance.gpu}"})
    return pd.DataFrame(rows).astype({"blocks visited": "Int64"})


def sweep_table(sweep: pd.DataFrame) -> pd.DataFrame:
    """The sweep for reading: one row per seq and stage."""
    table = sweep.set_index(["seq", "stage"]).sort_index(level="seq", sort_remaining=False)
    # a stage without a block mask has none to count or build: an empty cell, not NaN
    for column in ("blocks visited", "mask set-up ms"):
        table[column] = table[column].astype(object).where(table[column].notna(), "")
    return table


def _visited(stage: str, shape: Shape) -> int | None:
    """Blocks the stage's block mask visits at `shape`; None for a stage without one."""
    try:
        return int((block_states(stage, shape)[0] > 0).sum())
    except (ValueError, KeyError):
        return None


def widest_gap(sweep: pd.DataFrame, stage: str = "flex") -> int:
    """The seq at which a loop's `stage` call outlasts its GPU work the most (loop / busy); without
    the caller's timer, the smallest seq (the shortest kernel of the sweep)."""
    rows = sweep[sweep["stage"] == stage].dropna(subset=["loop / busy"])
    if rows.empty:
        return int(sweep[sweep["stage"] == stage]["seq"].min())
    return int(rows.sort_values("loop / busy").iloc[-1]["seq"])


def widest(grid: Mapping[tuple[str, Shape], Profile], sweep: pd.DataFrame, stage: str = "flex") -> Profile:
    """`stage`'s profile in `grid` at the seq where its call outlasts its kernel the most."""
    seq = widest_gap(sweep, stage)
    return next(prof for (name, shape), prof in grid.items() if name == stage and shape.seq == seq)


def glue_widest(prof: Profile) -> dict:
    """Glue the CPU lane of the call where the gap is widest: its seq, kernel, what a loop pays per
    call (`flex_wide_call`, a sentence: the caller's timer, or the line saying it is not recorded)
    and the guards' time."""
    s, ops = prof.summary(), prof.cpu_ops()
    guards = ops[ops["name"] == "TorchDynamo Cache Lookup"]["dur_us"].sum()
    b = of_call(s)
    values = {"wide_seq": prof.shape.seq, "wide_gpu_us": round(float(s["gpu_time_us"]), 1),
              "wide_loop_us": "not recorded" if b is None else round(b.wall_us, 1),
              "wide_bench_us": None if s["do_bench_us"] is None else round(float(s["do_bench_us"]), 1),
              "wide_cpu_us": round(float(s["cpu_time_us"]), 1), "wide_guards_us": round(float(guards), 1)}
    values["wide_where"] = ("where a loop's call outlasts its kernel the most" if b is not None
                            else "the shortest kernel of the sweep (no caller's timer recorded to find the widest gap)")
    values["wide_call"] = (f"a loop pays {b.wall_us:,.1f} µs per call ({b.spread_text}), {b.words}"
                           if b is not None else NO_TIMER)
    for key, value in values.items():
        glue(f"flex_{key}", value)
    return values


def closes_at(sweep: pd.DataFrame, stage: str) -> int | None:
    """The smallest seq from which on every call is bound by the GPU (the book's one definition:
    the loop at most LINE over the GPU's busy time); None where none is, or no call was timed."""
    rows = sweep[sweep["stage"] == stage].sort_values("seq")
    rows = rows[rows["bound"] != NO_TIMER_WORDS]
    close = [w == WORDS[GPU] for w in rows["bound"]]
    for i in range(len(close)):
        if all(close[i:]):
            return int(rows["seq"].iloc[i])
    return None


def gap_chart(sweep: pd.DataFrame) -> go.Figure:
    """Kernel time (solid) and what a loop pays per call (dotted) against seq, one colour per stage;
    without the caller's timer, the dotted line is do_bench's cold call, and the subtitle says so."""
    timed = sweep["loop µs"].notna().any()
    column, label = ("loop µs", "a loop's time per call") if timed else ("do_bench µs", "do_bench's cold call")
    fig = go.Figure()
    for stage, rows in sweep.groupby("stage", sort=False):
        rows = rows.sort_values("seq")
        color = STAGE_COLORS.get(stage, MUTED)
        fig.add_scatter(x=rows["seq"], y=rows["GPU µs"], mode="lines+markers", name=f"{stage}: GPU",
                        line=dict(color=color), legendgroup=stage,
                        hovertemplate=f"{stage}<br>seq %{{x}}: %{{y:.1f}} µs on the GPU<extra></extra>")
        fig.add_scatter(x=rows["seq"], y=rows[column], mode="lines+markers",
                        name=f"{stage}: per call", line=dict(color=color, dash="dot"),
                        marker=dict(symbol="circle-open"), legendgroup=stage,
                        hovertemplate=f"{stage}<br>seq %{{x}}: %{{y:.1f}} µs per call ({label})<extra></extra>")
    fig.update_layout(xaxis=dict(title="seq", type="log", tickvals=sorted(sweep["seq"].unique())),
                      yaxis=dict(title="µs (log)", type="log", dtick=1), height=480, legend=BOTTOM_LEGEND,
                      margin=dict(b=130))
    return _title(fig, "Kernel time and time per call against seq",
                  f"solid: the profiler's GPU time per forward · dotted: {label}"
                  + ("" if timed else " (no caller's timer recorded)"))


def gap_closes(sweep: pd.DataFrame, stage: str = "flex") -> Verdict | None:
    """The gap closes as seq grows: a loop's call over the GPU's busy time is largest at the
    smallest seq, and the call is bound by the GPU at the largest (in between, timer noise may
    wobble it by a hundredth). None where the sweep has no caller's timer: nothing to judge."""
    rows = sweep[sweep["stage"] == stage].sort_values("seq").dropna(subset=["loop / busy"])
    if rows.empty:
        return None
    ratios = list(rows["loop / busy"])
    evidence = ", ".join(f"seq {s}: {r:.2f}×" for s, r in zip(rows["seq"], ratios))
    falling = bool(ratios) and ratios[0] == max(ratios)
    last = rows["bound"].iloc[-1]
    closed = last == WORDS[GPU]
    return Verdict(f"the gap between {stage}'s time per call and its kernel time closes as seq grows",
                   f"a loop's call / the GPU's busy time: {evidence}", len(ratios) > 1 and falling and closed,
                   "not recorded at several seq" if len(ratios) < 2 else
                   "the gap is not widest at the smallest seq" if not falling else
                   f"{last} at seq {int(rows['seq'].iloc[-1])} ({ratios[-1]:.2f}×)")


def sweep_verdicts(sweep: pd.DataFrame, stages: tuple[str, ...] = (*FLEX, "sdpa_flash")) -> pd.DataFrame:
    """gap_closes for each stage of the sweep, as one table; without the caller's timer, one row
    that says so and judges nothing."""
    present = [s for s in stages if s in set(sweep["stage"])]
    judged = [v for v in (gap_closes(sweep, s) for s in present) if v is not None]
    if not judged:
        return pd.DataFrame({"this page claims": ["the gap between a call and its kernel closes as seq grows"],
                             "this trace": [_cap(NO_TIMER)], "verdict": ["not judged"]})
    return table(judged).rename(columns={"the article": "this page claims"})


def _float(value):
    return None if value is None or pd.isna(value) else float(value)


def _ratio(row) -> str:
    # the loop is absent where the recording has no caller's timer: say so rather than print a number
    value = _float(row["loop / busy"])
    return "not measured" if value is None else f"{value:.2f}"


def cpu_flat(rows: pd.DataFrame, stage: str) -> str:
    """Whether the CPU's work per call depends on seq, as the caller's timer shows it: where a
    call is bound by the CPU, a loop pays the CPU's time per call; across those seqs, "about the
    same" is the book's one definition (`speed_words`)."""
    rows = rows.sort_values("seq")
    if rows["loop µs"].isna().all():
        return _cap(NO_TIMER) + ", so it cannot show the CPU's time per call at each seq."
    cpu = rows[rows["bound"] == WORDS[CPU]]
    if cpu.empty:
        return f"At no seq of the sweep is a {stage} call bound by the CPU: the caller's timer never reads the CPU's time per call."
    at = ", ".join(f"{float(r['loop µs']):,.1f} µs at seq {int(r['seq'])}" for r in cpu.to_dict("records"))
    if len(cpu) == 1:
        return f"Only at seq {int(cpu['seq'].iloc[0])} is a {stage} call bound by the CPU: a loop pays the CPU's {at.split(' at ')[0]} per call there."
    lo, hi = float(cpu["loop µs"].min()), float(cpu["loop µs"].max())
    if speed_words(hi, lo) == ABOUT_THE_SAME:
        return (f"Where a {stage} call is bound by the CPU, a loop pays the CPU's time per call: {at}, about the "
                f"same (within {SAME_WITHIN:.0%}), so the CPU's work per call does not depend on seq.")
    return (f"Where a {stage} call is bound by the CPU, a loop pays the CPU's time per call: {at}, more than "
            f"{SAME_WITHIN:.0%} apart, so here the CPU's time per call does change with seq.")


def glue_sweep(sweep: pd.DataFrame) -> dict:
    """Glue each stage's sweep ends as `<stage>_sweep_...`: the smallest and largest seq, the times
    and a loop's call over the GPU's busy time there, where the call turns bound by the GPU
    (`summary`: one sentence, or the no-timer line), whether the CPU's time per call depends on seq
    (`cpu_flat`), and the range of the mask's set-up."""
    out = {}
    for stage, rows in sweep.groupby("stage", sort=False):
        rows = rows.sort_values("seq")
        lo, hi = rows.iloc[0], rows.iloc[-1]
        at = closes_at(sweep, stage)
        setup = rows["mask set-up ms"].dropna()
        timed = rows["loop µs"].notna().any()
        values = {"seq_lo": int(lo["seq"]), "seq_hi": int(hi["seq"]),
                  "ratio_lo": _ratio(lo), "ratio_hi": _ratio(hi),
                  "gpu_lo": float(lo["GPU µs"]), "gpu_hi": float(hi["GPU µs"]),
                  "loop_lo": _float(lo["loop µs"]), "loop_hi": _float(hi["loop µs"]),
                  "bench_lo": _float(lo["do_bench µs"]), "bench_hi": _float(hi["do_bench µs"]),
                  "closes_at": ("not judged: no caller's timer recorded" if not timed else
                                f"from seq {at} on" if at is not None else "at no seq of the sweep"),
                  "setup_min": f"{setup.min():.1f}" if len(setup) else "not recorded",
                  "setup_max": f"{setup.max():.1f}" if len(setup) else "not recorded",
                  "cpu_flat": cpu_flat(rows, stage)}
        if timed and _float(lo["loop µs"]) is not None and _float(hi["loop µs"]) is not None:
            values["summary"] = (f"at seq {values['seq_lo']} a loop pays {values['loop_lo']:,.1f} µs per {stage} call "
                                 f"for {float(lo['busy µs']):,.1f} µs of GPU work ({values['ratio_lo']}×), at seq "
                                 f"{values['seq_hi']} {values['ratio_hi']}×; bound by the GPU {values['closes_at']}.")
        else:
            values["summary"] = (f"{NO_TIMER}; do_bench (one cold call) reads "
                                 + (f"{values['bench_lo']:,.1f} µs at seq {values['seq_lo']} and {values['bench_hi']:,.1f} µs "
                                    f"at seq {values['seq_hi']}." if values["bench_lo"] and values["bench_hi"] else "nothing either."))
        for key, value in values.items():
            glue(f"{stage}_sweep_{key}", value)
        out[stage] = values
    return out


# --- glue ------------------------------------------------------------------------------------------

def glue_page(flex: Profile, flash: Profile, sliding: Profile | None = None) -> dict:
    """Glue the figures of the page's prose that no table already gives."""
    k = template_kernel(flex)
    sf, sa = flex.summary(), flash.summary()
    grid, size = block_states(flex.stage, flex.shape)
    setup = getattr(flex.provenance, "setup_seconds", None)
    first = getattr(flex.provenance, "first_call_seconds", None)
    bench = sf["do_bench_us"]
    b, bf = of_call(sf), of_call(sa)
    (later, _flash), _ = later_calls(sf, sa)   # the first-call table's timer (compiled.first_call)
    values = {
        "flex_kernel_name": k["name"], "flex_kernel_us": round(float(k["dur_us"]), 1),
        "flex_grid": str(k["grid"]), "flex_threads": int(k["threads_per_block"]),
        "flex_registers": int(k["registers_per_thread"]), "flex_smem": int(k["shared_memory_bytes"]),
        "flex_over_flash_gpu": f"{float(sf['gpu_time_us']) / float(sa['gpu_time_us']):.2f}",
        "flex_gap_us": "not recorded" if b is None else round(b.wall_us - b.busy_us, 1),
        "flex_busy_pct": "not recorded" if b is None else round(b.busy_pct, 1),
        "flex_gap": (f"Here the GPU is busy {b.busy_pct:.1f}% of each Flex call a loop pays for: "
                     f"{b.wall_us - b.busy_us:,.1f} µs of a call are not GPU work ({b.words})." if b is not None
                     else _cap(NO_TIMER) + ": the gap between a call and its kernel is not measured here."),
        "flex_calls": (f"a loop of back-to-back calls pays {b.wall_us:,.1f} µs per Flex call and "
                       f"{bf.wall_us:,.1f} µs per flash call" if b is not None and bf is not None else
                       f"{NO_TIMER} (Flex {float(bench):,.1f} µs, flash {float(sa['do_bench_us']):,.1f} µs)"
                       if bench and sa["do_bench_us"] else NO_TIMER),
        "flex_block_q": size[0], "flex_block_kv": size[1],
        "flex_query_blocks": grid.shape[0], "flex_visited": int((grid > 0).sum()), "flex_blocks": int(grid.size),
        "flex_partial": int((grid == 1).sum()),
        "flex_setup_ms": "not recorded" if setup is None else f"{setup * 1e3:.1f}",
        "flex_first_call_s": "not recorded" if first is None else f"{first:.2f}",
        "flex_first_over_call": "not recorded" if first is None or not later else f"{first * 1e6 / float(later):,.0f}",
        "sliding_window": SLIDING_WINDOW,
    }
    if sliding is not None:
        sg, _ = block_states(sliding.stage, sliding.shape)
        ss = sliding.summary()
        values |= {
            "sliding_visited": int((sg > 0).sum()),
            "sliding_partial": int((sg == 1).sum()),
            "sliding_visited_ratio": f"{(sg > 0).sum() / (grid > 0).sum():.2f}",
            "sliding_time_ratio": f"{float(ss['gpu_time_us']) / float(sf['gpu_time_us']):.2f}",
            "sliding_gpu_us": round(float(ss["gpu_time_us"]), 1),
            "sliding_first_call_s": "not recorded" if getattr(sliding.provenance, "first_call_seconds", None) is None
            else f"{sliding.provenance.first_call_seconds:.2f}",
        }
    for key, value in values.items():
        glue(key, value)
    return values


# --- verdicts ------------------------------------------------------------------------------------

MASK_OPS = ("create_block_mask", "vmap", "aten::tril", "aten::triu", "aten::arange", "aten::where",
            "aten::ones")


@verdict("flex", needs=("sdpa_flash",))
def verdict_list(flex: Profile, flash: Profile) -> list[Verdict]:
    e = flex.kernels()
    kernels = e[e["category"] == "kernel"]
    decoded = [decode(n) for n in kernels["name"]]
    out = [Verdict(
        "one Triton template kernel does the whole forward",
        f"{len(e)} GPU event{'' if len(e) == 1 else 's'}: " + "; ".join(f"{d.name} ({d.summary})" for d in decoded),
        len(e) == 1 and len(decoded) == 1 and decoded[0].library == "Triton"
        and decoded[0].details.get("class_token") == "tem" and decoded[0].op == "flex_attention",
        f"{len(e)} GPU events" if len(e) != 1 else f"{decoded[0].summary}")]

    ops = flex.cpu_ops()
    mask_ops = sorted({n for n in ops["name"] if any(n.startswith(m) or m in n for m in MASK_OPS)})
    aten = int(ops["name"].str.startswith("aten::").sum())
    setup = getattr(flex.provenance, "setup_seconds", None)
    out.append(Verdict(
        "the block mask is built once, outside the forward: nothing in the forward builds it",
        sentence_for(mask_ops, none="no mask-building op under attn_fwd", one="mask-building op under attn_fwd: {name}",
                     several="mask-building ops under attn_fwd: {names}") + f"; aten ops under attn_fwd: {aten}; "
        f"GPU events: {len(e)}" + ("" if setup is None else f"; the mask's set-up took {setup * 1e3:.1f} ms, once, "
                                    "before the first call"),
        not mask_ops and len(e) == len(kernels) == 1, f"{', '.join(mask_ops) or f'{len(e)} GPU events'} in the forward"))

    if len(kernels) == 1:
        k, s = kernels.iloc[0], flex.shape
        grid = k["grid"] or (0, 0, 0)
        g = inductor.kernel(generated_code(flex), k["name"])
        block_m = g.constants.get("BLOCK_M") if g is not None else None
        source = "generated code" if block_m else "seq / grid x"
        block_m = block_m or (s.seq // grid[0] if grid[0] else None)
        expected = (-(-s.seq // block_m) if block_m else None, s.batch, s.heads)
        out.append(Verdict(
            "one block of the grid per tile of queries, per batch, per head: grid = (seq / BLOCK_M, batch, heads)",
            f"grid {grid}; BLOCK_M {block_m} ({source}), seq {s.seq}, batch {s.batch}, heads {s.heads}",
            tuple(grid) == expected, f"grid {grid}, expected {expected}"))

    gf, ga = flex.summary()["gpu_time_us"], flash.summary()["gpu_time_us"]
    words = speed_words(gf, ga)   # the book's one definition of "about the same"
    out.append(Verdict(
        f"as fast as flash on the GPU (within {SAME_WITHIN:.0%} of {flash.stage})",
        f"{flex.stage} {gf:.1f} µs, {flash.stage} {ga:.1f} µs per forward ({gf / ga:.2f}×)",
        words == ABOUT_THE_SAME, f"{gf / ga:.2f}× the GPU time of {flash.stage} ({words})"))

    b, bf = of_call(flex.summary()), of_call(flash.summary())
    if b is not None:
        other = (f"{flash.stage}: {bf.wall_us:.1f} µs per call ({bf.words})" if bf is not None
                 else f"{flash.stage}: no caller's timer recorded")
        out.append(Verdict(
            f"a call takes as long as its kernel: bound by the GPU (a loop's call within {LINE:.0%} of the GPU's busy time)",
            f"a loop pays {b.wall_us:.1f} µs per call ({b.spread_text}), the GPU is busy {b.busy_us:.1f} µs "
            f"({b.wall_us / b.busy_us:.2f}×); {other}",
            b.by == GPU, (f"{b.words}: the line, {b.line_us:.1f} µs, falls inside the loop's spread" if b.by == EVEN else
                          f"{b.words}: a call takes {b.wall_us / b.busy_us:.2f}× the GPU's busy time, the GPU waits "
                          f"{b.host_wait_us:.0f} µs per call")))
    return out


@verdict("flex_sliding", needs=("flex",))
def sliding_verdict_list(sliding: Profile, causal: Profile) -> list[Verdict]:
    ks, kc = template_kernel(sliding), template_kernel(causal)
    same_launch = all(str(ks[c]) == str(kc[c]) for c in ("grid", "block", "registers_per_thread",
                                                          "shared_memory_bytes"))
    out = [Verdict(
        "the same Triton template as the causal mask: another mask, the same kernel family",
        f"{sliding.stage}: {ks['name']}, grid {ks['grid']}, {ks['registers_per_thread']} registers, "
        f"{ks['shared_memory_bytes']} B shared; {causal.stage}: {kc['name']}, grid {kc['grid']}, "
        f"{kc['registers_per_thread']} registers, {kc['shared_memory_bytes']} B shared",
        decode(ks["name"]).op == decode(kc["name"]).op == "flex_attention" and same_launch,
        "the launch differs" if not same_launch else "another kernel")]
    gs, _ = block_states(sliding.stage, sliding.shape)
    gc, _ = block_states(causal.stage, causal.shape)
    ts, tc = sliding.summary()["gpu_time_us"], causal.summary()["gpu_time_us"]
    visited = (gs > 0).sum() / (gc > 0).sum()
    out.append(Verdict(
        "its cost follows the blocks it visits: fewer blocks, less GPU time",
        f"{int((gs > 0).sum())} of {gs.size} blocks visited against {int((gc > 0).sum())} for causal "
        f"({visited:.2f}×); GPU time {ts:.1f} µs against {tc:.1f} µs ({ts / tc:.2f}×)",
        bool(ts < tc) == bool(visited < 1), f"{ts / tc:.2f}× the GPU time for {visited:.2f}× the blocks"))
    return out


def verdicts(flex: Profile, flash: Profile) -> pd.DataFrame:
    """What this page claims about flex against sdpa_flash, each computed from the traces."""
    return table(verdict_list(flex, flash)).rename(columns={"the article": "this page claims"})


def sliding_verdicts(sliding: Profile, causal: Profile) -> pd.DataFrame:
    """What this page claims about flex_sliding against flex, each computed from the traces."""
    return table(sliding_verdict_list(sliding, causal)).rename(columns={"the article": "this page claims"})
