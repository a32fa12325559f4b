"""Every plotly chart of the book, in one style, so a reader learns to read a chart once."""
from __future__ import annotations

import hashlib
import html
import json
import sys
from typing import Sequence

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
from plotly.io.base_renderers import MimetypeRenderer, PlotlyRenderer

from ..profiling.profile import Profile

# one palette for the whole book; colour means the same thing everywhere
KIND_COLORS = {
    "gemm": "#4C78A8", "attention": "#54A24B", "softmax": "#F58518", "masked_fill": "#E45756",
    "elementwise": "#72B7B2", "copy": "#B279A2", "memcpy": "#B279A2", "fill": "#9D755D",
    "memset": "#9D755D", "reduce": "#EECA3B", "mask": "#FF9DA6", "fused": "#8CD17D",
    "unknown": "#BAB0AC",
}
SERIES_COLORS = {"GPU time": "#4C78A8", "CPU time": "#F58518", "do_bench": "#54A24B"}
MUTED = "#8A8F98"  # readable on the light and the dark theme alike

pio.templates["attention_profiled"] = go.layout.Template(layout=go.Layout(
    font=dict(family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif", size=13, color=MUTED),
    paper_bgcolor="rgba(0,0,0,0)", plot_bgcolor="rgba(0,0,0,0)",
    xaxis=dict(gridcolor="rgba(138,143,152,0.25)", zerolinecolor="rgba(138,143,152,0.4)"),
    yaxis=dict(gridcolor="rgba(138,143,152,0.25)", zerolinecolor="rgba(138,143,152,0.4)"),
    hoverlabel=dict(font=dict(family="ui-monospace, SFMono-Regular, Menlo, monospace", size=12),
                    align="left"),
    margin=dict(l=60, r=20, t=90, b=50),
    legend=dict(orientation="h", x=0, xanchor="left", y=1.0, yanchor="bottom"),
    colorway=list(KIND_COLORS.values())))


def _only_used_templates(fig_dict: dict) -> dict:
    """The figure with its template's per-trace-type defaults kept for the types it draws: plotly's
    template carries them for some 40 types, 7.5 KB in every chart of a page."""
    template = (fig_dict.get("layout") or {}).get("template") or {}
    if not isinstance(template.get("data"), dict):
        return fig_dict
    used = {t.get("type", "scatter") for t in fig_dict.get("data", [])}
    data = {k: v for k, v in template["data"].items() if k in used}
    return {**fig_dict, "layout": {**fig_dict["layout"], "template": {**template, "data": data}}}


class BookRenderer(MimetypeRenderer):
    """One output, two forms: JupyterLab draws the plotly mimetype itself; the static book takes
    a div that uses the one plotly.js it loads from _static, instead of inlining 3+ MB a chart."""

    shown = 0

    def to_mimebundle(self, fig_dict):
        fig_dict = _only_used_templates(fig_dict)
        bundle = PlotlyRenderer(config={"displaylogo": False}).to_mimebundle(fig_dict)
        # a div id from the figure itself, so that running a notebook twice gives the same page
        BookRenderer.shown += 1
        digest = hashlib.sha1(json.dumps(fig_dict, sort_keys=True, default=str).encode()).hexdigest()
        bundle["text/html"] = go.Figure(fig_dict).to_html(
            include_plotlyjs=False, full_html=False, div_id=f"fig-{digest[:12]}-{BookRenderer.shown}",
            config={"displaylogo": False, "responsive": True})
        return bundle


pio.renderers["book"] = BookRenderer()
# Colab draws neither plotly's mimetype nor a div that expects the book's plotly.js: its own
# renderer inlines plotly.js in the output
NOTEBOOK_RENDERER = "colab" if "google.colab" in sys.modules else "book"
pio.renderers.default = NOTEBOOK_RENDERER
pio.templates.default = "plotly+attention_profiled"


def literal(text: str) -> str:
    """A kernel name for plotly text, whose subset of HTML would eat `<...>`."""
    return html.escape(str(text), quote=False)


def _title(fig: go.Figure, title: str, subtitle: str = "") -> go.Figure:
    text = f"{title}<br><sup>{subtitle}</sup>" if subtitle else title
    fig.update_layout(title=dict(text=text, x=0, xanchor="left"))
    return fig


def _source(prof: Profile) -> str:
    p = prof.provenance
    return f"{p.mode}: {p.gpu}, torch {p.torch}, {prof.shape.key}"


def kernel_durations(prof: Profile) -> go.Figure:
    """Each GPU event of each forward, in launch order, coloured by kind."""
    table = prof.kernels("all")
    fig = go.Figure()
    for step, events in table.groupby("step", sort=True):
        events = events.reset_index(drop=True)
        labels = [f"{i + 1}. {kind}" + (f" ({op})" if op else "")
                  for i, (kind, op) in enumerate(zip(events["kind"], events["op"]))]
        fig.add_bar(
            x=labels, y=events["dur_us"], name=f"ProfilerStep#{step}",
            marker_color=[KIND_COLORS.get(k, KIND_COLORS["unknown"]) for k in events["kind"]],
            marker_line=dict(width=0), opacity=0.55 + 0.15 * (step - table["step"].min()),
            customdata=list(zip(events["name"].map(literal), events["launched_by"].fillna(""),
                                events["top_aten_op"].fillna(""))),
            hovertemplate="%{customdata[0]}<br>%{y:.1f} µs, launched by %{customdata[1]} "
                          "in %{customdata[2]}<extra>%{fullData.name}</extra>")
    fig.update_layout(barmode="group", yaxis_title="duration (µs)", height=420)
    return _title(fig, f"{prof.stage}: GPU events of each forward",
                  f"one bar per event and profiler step · {_source(prof)}")


def stage_summaries(profiles: Sequence[Profile]) -> pd.DataFrame:
    rows = [prof.summary() for prof in profiles]
    return pd.DataFrame(rows).reset_index(drop=True)


def kernels_per_forward(profiles: Sequence[Profile]) -> go.Figure:
    """GPU events (kernels + memcpy + memset) per forward, one bar per stage."""
    table = stage_summaries(profiles)
    fig = go.Figure(go.Bar(x=table["stage"], y=table["gpu_events"], text=table["gpu_events"],
                           textposition="outside", marker_color=SERIES_COLORS["GPU time"],
                           hovertemplate="%{x}: %{y} GPU events per forward<extra></extra>"))
    fig.update_layout(yaxis_title="GPU events per forward", height=380)
    return _title(fig, "Kernels per forward", _source(profiles[-1]))


def gpu_and_cpu_time(profiles: Sequence[Profile]) -> go.Figure:
    """GPU time and CPU time per forward, side by side, for each stage."""
    table = stage_summaries(profiles)
    fig = go.Figure()
    for label, column in (("GPU time", "gpu_time_us"), ("CPU time", "cpu_time_us")):
        fig.add_bar(x=table["stage"], y=table[column], name=label,
                    marker_color=SERIES_COLORS[label],
                    hovertemplate="%{x}: %{y:.1f} µs " + label + " per forward<extra></extra>")
    fig.update_layout(barmode="group", yaxis_title="µs per forward (median of 3 steps)", height=400)
    return _title(fig, "GPU time and CPU time per forward",
                  "GPU: sum of the forward's GPU events · CPU: the attn_fwd annotation")


def timeline(prof: Profile, step: int | None = None) -> go.Figure:
    """One profiler step: the CPU lane (aten ops, nested) above the GPU lane, launches linked."""
    ops, gpu = prof.cpu_ops(step), prof.kernels(step)
    launches = prof.launches(step)
    t0 = ops["start_us"].min() if len(ops) else gpu["start_us"].min()
    max_depth = int(ops["depth"].max()) if len(ops) else 0
    cpu_rows = [f"CPU {d}" for d in range(max_depth + 1)]
    fig = go.Figure()
    fig.add_bar(
        orientation="h", base=ops["start_us"] - t0, x=ops["dur_us"], y=[f"CPU {d}" for d in ops["depth"]],
        marker_color=SERIES_COLORS["CPU time"], marker_line=dict(width=0.5, color="white"),
        opacity=0.85, name="CPU ops", customdata=list(zip(ops["name"].map(literal), ops["self_us"])),
        hovertemplate="%{customdata[0]}<br>%{x:.1f} µs (self %{customdata[1]:.1f} µs)<extra></extra>")
    fig.add_bar(
        orientation="h", base=launches["start_us"] - t0, x=launches["dur_us"], y=["launch"] * len(launches),
        marker_color=MUTED, name="runtime / driver calls", customdata=launches["name"],
        hovertemplate="%{customdata}<br>%{x:.1f} µs<extra></extra>")
    fig.add_bar(
        orientation="h", base=gpu["start_us"] - t0, x=gpu["dur_us"], y=["GPU"] * len(gpu),
        marker_color=[KIND_COLORS.get(k, KIND_COLORS["unknown"]) for k in gpu["kind"]],
        marker_line=dict(width=0.5, color="white"), name="GPU events",
        customdata=list(zip(gpu["name"].map(literal), gpu["launched_by"].fillna(""))),
        hovertemplate="%{customdata[0]}<br>%{x:.1f} µs, launched by %{customdata[1]}<extra></extra>")
    # launch links: from the runtime call on the CPU to the start of its GPU event
    xs, ys = [], []
    for row in gpu.dropna(subset=["launch_start_us"]).itertuples():
        xs += [row.launch_start_us - t0, row.start_us - t0, None]
        ys += ["launch", "GPU", None]
    fig.add_scatter(x=xs, y=ys, mode="lines", line=dict(color=MUTED, width=1, dash="dot"),
                    name="launch → GPU event", hoverinfo="skip")
    order = ["GPU", "launch"] + cpu_rows[::-1]
    fig.update_layout(barmode="overlay", height=260 + 28 * len(order), xaxis_title="µs since attn_fwd began",
                      yaxis=dict(categoryorder="array", categoryarray=order))
    return _title(fig, f"{prof.stage}: one forward (ProfilerStep#{step or prof.forward_step})",
                  "CPU lane (aten ops by depth) above the GPU lane; dotted lines link each launch to its event")


def sweep_lines(table: pd.DataFrame, x: str = "seq", y: str = "gpu_time_us") -> go.Figure:
    """GPU time per forward against one shape parameter, a line per stage (from `widgets.sweep`)."""
    fig = go.Figure()
    for stage, rows in table.groupby("stage", sort=False):
        rows = rows.sort_values(x)
        fig.add_scatter(x=rows[x], y=rows[y], mode="lines+markers", name=stage,
                        hovertemplate=f"{stage}<br>{x} %{{x}}: %{{y:.1f}} µs<extra></extra>")
    fig.update_layout(xaxis_title=x, yaxis_title="GPU µs per forward", yaxis_type="log", height=420)
    return _title(fig, f"GPU time per forward against {x}", "log scale; each point is one profiled shape")
