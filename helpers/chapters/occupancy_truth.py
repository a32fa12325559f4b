"""Occupancy three ways, for every kernel of a forward: CUPTI's estimate (written at launch, in the
torch.profiler trace), the theoretical occupancy (helpers.occupancy, from ncu's own launch
columns), and the occupancy the hardware sustained (Nsight Compute's achieved occupancy,
``sm__warps_active.avg.pct_of_peak_sustained_active``), with ncu's own theoretical figure beside
the calculator's.

    from helpers import Session, counters, occupancy_truth as truth
    s = Session()
    c = counters.show(s.counters(stages))
    table = truth.occupancy_truth(c, s.forwards(c, profiles))
    truth.chart(table)
"""
from __future__ import annotations

from typing import Mapping, Sequence

import pandas as pd
import plotly.graph_objects as go

from ..views.charts import KIND_COLORS, MUTED, SERIES_COLORS, _title, literal
from ..counters.chapter import Counters
from ..views.prose import glue
from ..core.profile import Profile
from ..core.stages import DEFAULT_SHAPE, STAGES, Shape, get_stage
from ..occupancy.calculator import occupancy
from ..occupancy.charts import limiter_label
from ..occupancy.gpus import gpu_spec

CUPTI_COLOR = MUTED
THEORETICAL_COLOR = KIND_COLORS["attention"]
ACHIEVED_COLOR = SERIES_COLORS["GPU time"]
# the three figures first, the launch that explains them after
COLUMNS = ["stage", "#", "label", "kernel", "CUPTI est. %", "calculator %", "ncu theoretical %", "ncu achieved %",
           "achieved / theoretical", "limiter", "threads", "registers", "shared memory (B)", "grid blocks", "waves",
           "ncu µs"]


def spec_for(c: Counters):
    """The GPUSpec of the GPU the counters were read on (its product, else its capability)."""
    try:
        return gpu_spec(c.gpu)
    except ValueError:
        return gpu_spec(c.provenance["capability"])


def calculator_from_ncu(row, spec) -> object:
    """helpers.occupancy on ncu's own launch columns of one kernel: block size, registers per
    thread, static + dynamic shared memory, and the shared memory the driver configured per SM
    for the launch (so the limiter is the one ncu's limits give)."""
    config = row.get("shared_memory_config")
    config = None if config is None or pd.isna(config) else int(round(float(config)))
    if config not in spec.shared_memory_carveouts:   # not a size this spec knows: the model's
        config = None
    return occupancy(spec, int(row["threads"]), int(row["registers"]), int(row["shared_memory"]),
                     shared_memory_config=config)


def _trace(stage: str, c: Counters, shape: Shape, profiles: Mapping[str, Profile]) -> Profile | None:
    """The trace to read CUPTI's estimate from: the one handed if it ran on the counters' GPU at
    the same shape (a Session's `forwards(c)` hands those), else none."""
    prof = profiles.get(stage)
    if prof is not None and prof.provenance.gpu == c.gpu and prof.shape == shape:
        return prof
    return None


def _pair(trace_kernels: pd.DataFrame, counted: pd.DataFrame) -> list[int | None]:
    """For each ncu row, the trace kernel it is (by launch order, checked on grid, block and
    registers; a row whose launch differs finds the next kernel with the same launch)."""
    sig = lambda t, b, r: (int(t), int(b), int(r))  # noqa: E731
    traced = [sig(r.threads_per_block, r.grid_blocks, r.registers_per_thread) for r in trace_kernels.itertuples()]
    out, start = [], 0
    for r in counted.itertuples():
        want = sig(r.threads, r.grid_blocks, r.registers)
        found = next((i for i in range(start, len(traced)) if traced[i] == want), None)
        out.append(found)
        if found is not None:
            start = found + 1
    return out


def occupancy_truth(c: Counters, profiles: Mapping[str, Profile],
                    stages: Sequence[str] | None = None, shape: Shape = DEFAULT_SHAPE) -> pd.DataFrame:
    """One row per kernel of each stage's forward: CUPTI's estimate from the trace, the
    calculator's theoretical occupancy from ncu's launch columns, ncu's theoretical and achieved
    occupancy, the limiter, and ncu's time for the kernel. `profiles`: the stages' forwards on the
    counters' GPU (a Session's `forwards(c, profiles)`)."""
    spec = spec_for(c)
    rows = []
    for stage in stages or c.stages:
        if (stage, shape.key) not in c.kernels:
            continue
        counted = c.stage(stage, shape)
        prof = _trace(stage, c, shape, profiles)
        traced = None
        if prof is not None:
            k = prof.kernels()
            traced = k[k["category"] == "kernel"].reset_index(drop=True)
        pairs = _pair(traced, counted) if traced is not None else [None] * len(counted)
        for r, i in zip(counted.to_dict("records"), pairs):
            theo = calculator_from_ncu(r, spec)
            t = traced.iloc[i] if i is not None else None
            op = (t["op"] if isinstance(t["op"], str) else t["kind"]) if t is not None else r["kernel"][:40]
            cupti = None if t is None or pd.isna(t["est_occupancy_pct"]) else int(t["est_occupancy_pct"])
            rows.append({
                # a stage of one kernel is its name; the kernels of another, numbered, with their op
                "stage": stage, "#": r["#"], "label": stage if len(counted) == 1 else f"{stage} · {r['#']}. {op}",
                "kernel": t["summary"] if t is not None else r["kernel"], "threads": int(r["threads"]),
                "registers": int(r["registers"]), "shared memory (B)": int(r["shared_memory"]),
                "grid blocks": int(r["grid_blocks"]), "waves": round(float(r["waves"]), 3),
                "CUPTI est. %": cupti,
                "calculator %": round(theo.occupancy_pct, 2),
                "ncu theoretical %": round(float(r["theoretical_occupancy_pct"]), 2),
                "ncu achieved %": round(float(r["achieved_occupancy_pct"]), 2),
                "achieved / theoretical": round(float(r["achieved_occupancy_pct"]) / theo.occupancy_pct, 2)
                if theo.occupancy_pct else None,
                "limiter": limiter_label(theo), "ncu µs": round(float(r["time_us"]), 1)})
    return pd.DataFrame(rows, columns=COLUMNS)


# what the page's table shows: the four occupancies and the limiter; the launch figures stay in
# the chart's hover and in occupancy_truth's frame, so the table fits a laptop's article column
SHOWN = ["stage", "#", "kernel", "CUPTI est. %", "calculator %", "ncu theoretical %", "ncu achieved %",
         "limiter"]


# one kernel and launch configuration: a row of the table the page shows (truth_table), and what
# the page's counts count (glue_truth), so that "N kernels" is the same N in both
LAUNCH_KEY = ("kernel", "threads", "registers", "shared memory (B)", "grid blocks")


def truth_table(table: pd.DataFrame) -> pd.DataFrame:
    """The table as the page shows it: one row per kernel and launch configuration, the stages
    that launch it named together (naive and inplace share their gemms and softmax), the first
    stage's measurement shown."""
    key = list(LAUNCH_KEY)
    stages = table.groupby(key, sort=False)["stage"].agg(lambda s: ", ".join(dict.fromkeys(s)))
    first = table.drop_duplicates(subset=key, keep="first").set_index(key)
    first["stage"] = stages
    out = first.reset_index()[SHOWN].rename(columns={"stage": "stages"}).set_index(["stages", "#"])
    out.attrs = {"caption": "One row per kernel and launch configuration; where several stages launch "
                            "the same one, the first stage's measurement."}
    return out


def chart(table: pd.DataFrame, stages: Sequence[str] | None = None) -> go.Figure:
    """Per kernel, horizontal bars, top to bottom: CUPTI's estimate (a zero written out), the
    theoretical occupancy (the calculator's, ncu's marked on it) and what the hardware sustained
    (ncu's achieved occupancy)."""
    t = table if stages is None else table[table["stage"].isin(stages)]
    t = t.iloc[::-1]  # plotly draws categories bottom-up: the first kernel at the top
    labels = [literal(x) for x in t["label"]]
    fig = go.Figure()
    hover = list(zip(t["kernel"].map(lambda n: literal(str(n)[:100])), t["threads"], t["registers"],
                     t["shared memory (B)"], t["limiter"], t["ncu µs"]))
    tail = ("<br>%{customdata[0]}<br>%{customdata[1]} threads × %{customdata[2]} registers, "
            "%{customdata[3]} B shared memory; limited by %{customdata[4]}; %{customdata[5]} µs<extra></extra>")
    # within a group plotly stacks the first trace at the bottom: add them bottom-up
    fig.add_bar(orientation="h", y=labels, x=t["ncu achieved %"], name="achieved (ncu, measured)", legendrank=4,
                marker_color=ACHIEVED_COLOR, customdata=hover,
                hovertemplate="achieved %{x:.1f}%, measured by ncu" + tail)
    fig.add_bar(orientation="h", y=labels, x=t["calculator %"], name="theoretical (helpers.occupancy)", legendrank=2,
                marker_color=THEORETICAL_COLOR, customdata=hover,
                hovertemplate="theoretical %{x:.1f}%" + tail)
    cupti = t["CUPTI est. %"]
    fig.add_bar(orientation="h", y=labels, x=cupti.fillna(0), name="CUPTI est. (at launch)", legendrank=1,
                marker_color=CUPTI_COLOR, customdata=hover, cliponaxis=False,
                text=["0 (CUPTI)" if v == 0 else "" for v in cupti], textposition="outside",
                textfont=dict(color=MUTED, size=11), hovertemplate="CUPTI's estimate %{x}%" + tail)
    fig.add_scatter(y=labels, x=t["ncu theoretical %"], mode="markers", name="ncu's theoretical", legendrank=3,
                    marker=dict(symbol="line-ns-open", size=16, color=MUTED, line=dict(width=2, color=MUTED)),
                    hovertemplate="ncu's theoretical %{x:.1f}%<extra></extra>")
    fig.update_layout(barmode="group", height=200 + 46 * len(t), bargap=0.25,
                      xaxis=dict(range=[0, 105], title="% of the SM's warp slots"),
                      yaxis=dict(automargin=True), margin=dict(t=80, l=10, b=60))  # the legend above, under the title
    return _title(fig, "Occupancy, three ways", "one forward per stage · hover for the kernel")


def glue_truth(table: pd.DataFrame, prefix: str = "truth") -> dict:
    """Glue what the page says about the three figures, as `<prefix>_<name>`: the cuDNN and flash
    kernels' three figures, and counts over every kernel."""
    every = table

    def main(stage):
        rows = every[every["stage"] == stage]
        return rows.loc[rows["ncu µs"].idxmax()] if len(rows) else None

    stages = table["stage"].nunique()
    # the counts are over the rows the page shows: each kernel and launch configuration once
    table = table.drop_duplicates(subset=list(LAUNCH_KEY), keep="first")
    values = {"kernels": len(table), "stages": stages,
              "agree": int((table["calculator %"].round(1) == table["ncu theoretical %"].round(1)).sum()),
              "cupti_zero": int((table["CUPTI est. %"] == 0).sum()),
              "cupti_zero_ran": int(((table["CUPTI est. %"] == 0) & (table["ncu achieved %"] > 0)).sum()),
              "below_theoretical": int((table["ncu achieved %"] < table["calculator %"]).sum())}
    # a grid smaller than one wave leaves SMs without a block: the SM average stays low
    partial = table[table["waves"] < 1]
    values |= {"partial": len(partial),
               "partial_max_achieved": f"{partial['ncu achieved %'].max():.0f}" if len(partial) else "—",
               "partial_min_achieved": f"{partial['ncu achieved %'].min():.0f}" if len(partial) else "—"}
    for stage in (s for s in STAGES if s in set(every["stage"])):   # the prose reads cuDNN and flash
        key = get_stage(stage).short
        r = main(stage)
        if r is None:
            continue
        values |= {f"{key}_cupti": r["CUPTI est. %"], f"{key}_theoretical": f"{r['calculator %']:.1f}",
                   f"{key}_ncu_theoretical": f"{r['ncu theoretical %']:.1f}",
                   f"{key}_achieved": f"{r['ncu achieved %']:.1f}",
                   f"{key}_achieved_share": f"{100 * r['ncu achieved %'] / r['calculator %']:.0f}"}
    for key, value in values.items():
        if hasattr(value, "item"):
            value = value.item()
        values[key] = value
        glue(f"{prefix}_{key}", value)
    return values


def glue_executed(c: Counters, stage: str = "sdpa_flash", shape: Shape = DEFAULT_SHAPE) -> dict:
    """Glue a stage's executed TFLOP/s (the ledger's: executed FLOPs over ncu time, chapter 9's
    roofline y) as `<short>_executed_tflops`, for the page to set beside its model TFLOP/s."""
    from ..core import quantities as q
    from ..counters.chapter import flops_per_unit
    table = c.stage(stage, shape)
    flops = float(q.executed_flops(table, flops_per_unit(c)).sum())
    value = f"{flops / q.ncu_seconds(table) / q.TB:.0f}"
    glue(f"{get_stage(stage).short}_executed_tflops", value)
    return {"executed_tflops": value}


ACHIEVED_OPTIONS = ("0%, as CUPTI says", "below the theoretical occupancy", "the theoretical occupancy, exactly",
                    "above the theoretical occupancy")


def achieved_question(cudnn: Mapping) -> str:
    """The guess, from the cuDNN kernel's figures as chapter 7 glued them (`glue_kernel`)."""
    return (f"CUPTI reads {cudnn['cupti_pct']}% for the cuDNN kernel, the calculator {cudnn['occupancy_pct']}%. "
            "What share of its warp slots did each SM keep busy while it ran?")


def achieved_answer(table: pd.DataFrame, stage: str = "sdpa_cudnn") -> str:
    """Which of ACHIEVED_OPTIONS the measurement of the stage's main kernel supports."""
    rows = table[table["stage"] == stage]
    r = rows.loc[rows["ncu µs"].idxmax()]
    achieved, theoretical = round(r["ncu achieved %"], 1), round(r["calculator %"], 1)
    if achieved == 0:
        return ACHIEVED_OPTIONS[0]
    if achieved < theoretical:
        return ACHIEVED_OPTIONS[1]
    return ACHIEVED_OPTIONS[2] if achieved == theoretical else ACHIEVED_OPTIONS[3]
