"""Every plotly chart of the book, in one style, so a reader learns to read a chart once."""
from __future__ import annotations

import hashlib
import html
import json
import math
import re
import sys
import textwrap
from pathlib import Path
from typing import Sequence

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
from plotly.io.base_renderers import ColabRenderer, MimetypeRenderer, PlotlyRenderer

from ..core.measured_on import hatched_note, marks
from ..core.profile import Profile

from ..core.palette import KIND_COLORS, MUTED, SERIES_COLORS  # noqa: F401  (the book's one palette)

TEMPLATE = "attention_profiled"   # the book's plotly template, registered by use_book_style()
# run after each figure of the static book is drawn: the title wraps to the chart's width and a
# legend above the plot sits under the title, measured (plotly does neither at 390 px)
FIT_JS = (Path(__file__).with_name("chart_fit.js")).read_text(encoding="utf-8")


def book_template() -> go.layout.Template:
    return go.layout.Template(layout=go.Layout(
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


# --- one layout at any width: the figure itself fits a phone -----------------------------------
#
# JupyterLab draws a chart from plotly's mimetype, with no script of ours, so the figure the
# renderer hands on must already read at 390 px: its title wrapped to a phone's width at the top
# of the chart, a legend above the plot placed under the title with room for as many rows as a
# phone needs, subplot titles left-aligned and wrapped to their subplot. chart_fit.js (the static
# book, Colab) then re-fits from the original (kept in layout.meta.fit) to the width it measures.

# the narrowest chart it must fit: JupyterLab's output area on a 390 px screen (file browser
# closed) is 274 px wide, the book's article there 358 px; a plot area 80 px narrower
PHONE_PLOT_PX = 200
TITLE_CHARS, SUBTITLE_CHARS = 28, 40   # a line of the title (18 px) / its smaller <sup> subtitle
# measured in Chromium: a title's lines are 24 px apart (a <sup> line too), its first 22 px tall;
# with title.pad.t 12 the title starts 4 px below the chart's top, but a title with a <sup> line
# is drawn 13 px higher than plotly's anchor says (so its pad is 13 px more)
TITLE_FIRST_PX, TITLE_LINE_PX, TITLE_TOP_PX, TITLE_PAD_PX, SUP_SHIFT_PX = 22, 24, 4, 12, 13
LEGEND_ROW_PX, LEGEND_PAD_PX, LEGEND_CHAR_PX, LEGEND_ITEM_PX = 20, 10, 7.4, 46
LEGEND_GAP_PX = 10  # between the legend and the plot (or the top subplot's title)
SUBPLOT_TITLE_SIZE, SUBPLOT_CHAR_PX, SUBPLOT_RIGHT_PX = 13, 7.2, 20  # a title may run into the right margin
SUBPLOT_LINE_PX = 18


def wrap_title(text: str, limit: int = TITLE_CHARS, sup_limit: int = SUBTITLE_CHARS) -> str:
    """A plotly title's lines (split at <br>) wrapped at word boundaries to a phone's width; a
    <sup>…</sup> line, drawn smaller, wraps longer and stays <sup> on each of its lines."""
    out = []
    for segment in text.split("<br>"):
        m = re.fullmatch(r"<sup>(.*)</sup>", segment, flags=re.S)
        inner, width = (m.group(1), sup_limit) if m else (segment, limit)
        lines = textwrap.wrap(inner, width, break_long_words=False, break_on_hyphens=False) or [""]
        out += [f"<sup>{line}</sup>" if m else line for line in lines]
    return "<br>".join(out)


def _title_px(text: str) -> int:
    """Where a wrapped title ends, in px from the chart's top."""
    lines = text.split("<br>") if text else []
    return TITLE_TOP_PX + TITLE_FIRST_PX + TITLE_LINE_PX * (len(lines) - 1) if lines else 0


def _legend_rows(fig_dict: dict) -> int:
    """Rows of a horizontal legend on a phone: its entries packed into the plot's width."""
    names, groups = [], set()
    for trace in fig_dict.get("data", []):
        if trace.get("showlegend") is False or (trace.get("legendgroup") in groups and trace.get("legendgroup")):
            continue
        groups.add(trace.get("legendgroup"))
        names.append(re.sub(r"<[^>]+>", "", str(trace.get("name", ""))))
    shown = fig_dict["layout"].get("showlegend")
    if not names or (len(names) < 2 and shown is not True):
        return 0
    rows, used = 1, 0.0
    for name in names:
        item = LEGEND_ITEM_PX + LEGEND_CHAR_PX * len(name)
        if used and used + item > PHONE_PLOT_PX:
            rows, used = rows + 1, 0.0
        used += item
    return rows


def _subplot_titles(layout: dict) -> int:
    """make_subplots' titles (centred, 16 px) left-aligned on their subplot, in the book's size,
    wrapped to the subplot's width on a phone. Returns the px the titles above the top subplot
    need between the legend and the plot."""
    top = 0
    domains = [v["domain"] for k, v in layout.items() if k.startswith("xaxis") and isinstance(v, dict)
               and isinstance(v.get("domain"), (list, tuple))]
    for a in layout.get("annotations") or []:
        if not (a.get("xref") == "paper" and a.get("yref") == "paper" and a.get("showarrow") is False
                and a.get("xanchor") == "center" and a.get("yanchor") == "bottom" and a.get("text")):
            continue
        domain = next((d for d in domains if abs((d[0] + d[1]) / 2 - a["x"]) < 1e-6), None)
        if domain is None:
            continue
        chars = max(12, int((PHONE_PLOT_PX * (domain[1] - domain[0]) + SUBPLOT_RIGHT_PX) / SUBPLOT_CHAR_PX))
        lines = textwrap.wrap(a["text"], chars, break_long_words=False)
        a.update(x=domain[0], xanchor="left", align="left", text="<br>".join(lines),
                 font={**(a.get("font") or {}), "size": SUBPLOT_TITLE_SIZE})
        if a.get("y", 0) >= 0.999:
            top = max(top, SUBPLOT_LINE_PX * len(lines))
    return top


def fit_layout(fig_dict: dict) -> dict:
    """The figure laid out to read on a 390 px phone, with no script: see above. The original
    title, top margin and height go to layout.meta.fit, for chart_fit.js to re-fit from."""
    layout = dict(fig_dict.get("layout") or {})
    if "fit" in (layout.get("meta") or {}) or not isinstance(layout.get("meta", {}), dict):
        return fig_dict
    title = layout.get("title") or {}
    title = {"text": title} if isinstance(title, str) else dict(title)
    text = title.get("text") or ""
    margin = dict(layout.get("margin") or {})
    top = margin.get("t", 90)
    height = layout.get("height") or 450
    legend = dict(layout.get("legend") or {})
    on_top = (layout.get("showlegend") is not False and legend.get("yref") != "container"
              and (legend.get("y") is None or legend.get("y") >= 1))
    rows = _legend_rows({**fig_dict, "layout": layout}) if on_top else 0
    above = _subplot_titles(layout)  # the top subplot's title sits between the legend and the plot
    gap = LEGEND_GAP_PX + above
    layout["meta"] = {**(layout.get("meta") or {}),
                      "fit": {"title": text, "top": top, "height": height, "legendOnTop": on_top, "gap": gap}}
    wrapped = wrap_title(text)
    title_px = _title_px(wrapped) if text else 0
    if text:
        layout["title"] = {**title, "text": wrapped, "x": 0, "xanchor": "left", "yref": "container",
                           "y": 1, "yanchor": "top",
                           "pad": {"t": TITLE_PAD_PX + (SUP_SHIFT_PX if "<sup>" in wrapped else 0)}}
    need = title_px + (rows * LEGEND_ROW_PX + LEGEND_PAD_PX + 4 + gap if rows else 10 + above)
    if need > top:
        height, top = height + need - top, need
    layout.update(margin={**margin, "t": top}, height=height)
    if rows:
        layout["legend"] = {**legend, "yref": "container", "y": 1 - (title_px + 6) / height,
                            "yanchor": "top", "x": 0, "xanchor": "left"}
    return {**fig_dict, "layout": layout}


PLOTLY_CONFIG = {"displaylogo": False, "responsive": True}


class BookRenderer(MimetypeRenderer):
    """One output, two forms: JupyterLab draws the plotly mimetype itself; the static book takes
    a div that uses the one plotly.js it loads from _static, instead of inlining 3+ MB a chart.
    Both carry the figure as fit_layout lays it out; the book's div also re-fits it (FIT_JS)."""

    shown = 0

    def to_mimebundle(self, fig_dict):
        fig_dict = fit_layout(_only_used_templates(fig_dict))
        bundle = PlotlyRenderer(config={"displaylogo": False}).to_mimebundle(fig_dict)
        # a div id from the figure itself, so that running a notebook twice gives the same page
        BookRenderer.shown += 1
        digest = hashlib.sha1(json.dumps(fig_dict, sort_keys=True, default=str).encode()).hexdigest()
        bundle["text/html"] = go.Figure(fig_dict).to_html(
            include_plotlyjs=False, full_html=False, div_id=f"fig-{digest[:12]}-{BookRenderer.shown}",
            config=PLOTLY_CONFIG, post_script=FIT_JS)
        return bundle


class ColabBookRenderer(ColabRenderer):
    """Colab draws neither plotly's mimetype nor a div that expects the book's plotly.js: its
    own renderer inlines plotly.js in the output. The same layout and the same re-fit."""

    def __init__(self):
        super().__init__(config=PLOTLY_CONFIG, post_script=FIT_JS)

    def to_mimebundle(self, fig_dict):
        return super().to_mimebundle(fit_layout(_only_used_templates(fig_dict)))


def install() -> None:
    """The book's plotly style (called by helpers.use_book_style): its template by default, and
    its renderer (in Colab, its Colab renderer)."""
    pio.templates[TEMPLATE] = book_template()
    pio.templates.default = f"plotly+{TEMPLATE}"
    pio.renderers["book"] = BookRenderer()
    pio.renderers["book_colab"] = ColabBookRenderer()
    pio.renderers.default = "book_colab" if "google.colab" in sys.modules else "book"


def literal(text: str) -> str:
    """A kernel name for plotly text, whose subset of HTML would eat `<...>`."""
    return html.escape(str(text), quote=False)


def _title(fig: go.Figure, title: str, subtitle: str = "") -> go.Figure:
    text = f"{title}<br><sup>{subtitle}</sup>" if subtitle else title
    fig.update_layout(title=dict(text=text, x=0, xanchor="left"))
    return fig


def _axis_is_log(fig: go.Figure, ref: str) -> bool:
    """Whether the axis a trace or mark refers to ('x', 'y2', …) is a log axis, as laid out so far."""
    axis = fig.layout[f"{ref[0]}axis{ref[1:]}"]
    return axis is not None and axis.type == "log"


def reference_line(fig: go.Figure, value: float, text: str = "", axis: str = "y", color: str = MUTED,
                   dash: str = "dash", width: float = 1.5, position: str = "end", ref: str | None = None) -> go.Figure:
    """A line across the plot at `value` (in data units) on one axis, with its label beside it:
    the book's one way to mark a value (a memory limit, a ridge, 100%).

    On a log axis plotly reads a shape's coordinates in data units but an annotation's in log10
    units, so plotly.py's add_hline/add_vline(annotation_text=…) puts the label decades away (and
    autorange follows it: an axis to 10^139). Here the label's coordinate is converted where the
    axis is log: set the axis type before calling. `ref` names the axis ('y2'); `position` puts
    the label at the 'end' (right, top) or the 'start' of the line."""
    ref = ref or axis
    if axis not in ("x", "y") or ref[0] != axis:
        raise ValueError(f"reference_line: axis {axis!r} with ref {ref!r}")
    other = "y" if axis == "x" else "x"
    other_ref = other + ref[1:] if ref[1:] else other
    domain = f"{other_ref} domain"
    fig.add_shape(type="line", xref=ref if axis == "x" else domain, yref=ref if axis == "y" else domain,
                  **({"x0": value, "x1": value, "y0": 0, "y1": 1} if axis == "x" else
                     {"y0": value, "y1": value, "x0": 0, "x1": 1}),
                  line=dict(color=color, dash=dash, width=width), layer="below")
    if text:
        at = math.log10(value) if _axis_is_log(fig, ref) else value
        end = position == "end"
        if axis == "y":
            fig.add_annotation(yref=ref, y=at, xref=domain, x=1 if end else 0, xanchor="right" if end else "left",
                               yanchor="bottom", text=text, showarrow=False, font=dict(color=color, size=11))
        else:
            fig.add_annotation(xref=ref, x=at, yref=domain, y=1 if end else 0, yanchor="top" if end else "bottom",
                               xanchor="left", xshift=3, text=text, showarrow=False, font=dict(color=color, size=11))
    return fig


def _source(prof: Profile) -> str:
    p = prof.provenance
    return f"{p.mode}: {p.gpu}, torch {p.torch}, {prof.shape.key if prof.shape else prof.stage}"


# above this many GPU events in a step, kernel_durations shows the kernels that take the most time
DURATION_BARS_MAX = 48
DURATION_TOP = 25


def _top_kernel_durations(prof: Profile, table: pd.DataFrame, top: int) -> go.Figure:
    """The `top` kernels by total time, one bar per kernel name and step (a step's thousands of
    events as one bar each would be unreadable)."""
    totals = table.groupby("name")["dur_us"].sum().sort_values(ascending=False)
    names = list(totals.index[:top])
    labels = {n: f"{i + 1}. {kind}" + (f" ({op})" if isinstance(op, str) and op else "")
              for i, (n, kind, op) in enumerate(zip(
                  names, table.drop_duplicates("name").set_index("name").loc[names, "kind"],
                  table.drop_duplicates("name").set_index("name").loc[names, "op"]))}
    fig = go.Figure()
    first = table["step"].min()
    for step, events in table[table["name"].isin(names)].groupby("step", sort=True):
        g = events.groupby("name").agg(total=("dur_us", "sum"), calls=("dur_us", "size"),
                                       kind=("kind", "first"),
                                       op=("top_aten_op", lambda s: ", ".join(dict.fromkeys(s.dropna()))))
        g = g.reindex([n for n in names if n in g.index])
        fig.add_bar(
            x=[labels[n] for n in g.index], y=g["total"], name=f"ProfilerStep#{step}",
            marker_color=[KIND_COLORS.get(k, KIND_COLORS["unknown"]) for k in g["kind"]],
            marker_line=dict(width=0), opacity=min(1.0, 0.55 + 0.15 * (step - first)),
            customdata=list(zip(g.index.map(literal), g["calls"], g["op"].map(literal))),
            hovertemplate="%{customdata[0]}<br>%{y:.1f} µs in %{customdata[1]} calls, launched in "
                          "%{customdata[2]}<extra>%{fullData.name}</extra>")
    fig.update_layout(barmode="group", yaxis_title="total duration in the step (µs)", height=460)
    fig.update_xaxes(tickangle=-40)
    return _title(fig, f"{prof.stage}: the {len(names)} kernels that take the most GPU time",
                  f"one bar per kernel and profiler step, its calls summed · {_source(prof)}")


def kernel_durations(prof: Profile, top: int | None = None) -> go.Figure:
    """Each GPU event of each forward, in launch order, coloured by kind.

    A step of more than DURATION_BARS_MAX events (or `top` given) shows instead the `top`
    kernels by total time, their calls summed, one bar per kernel and step."""
    table = prof.kernels("all")
    per_step = table.groupby("step").size()
    if top is not None or (len(per_step) and per_step.max() > DURATION_BARS_MAX):
        return _top_kernel_durations(prof, table, top or DURATION_TOP)
    fig = go.Figure()
    for step, events in table.groupby("step", sort=True):
        events = events.reset_index(drop=True)
        labels = [f"{i + 1}. {kind}" + (f" ({op})" if isinstance(op, str) and op else "")
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
    what = "forward" if prof.provenance.source == "stage" else "step"
    return _title(fig, f"{prof.stage}: GPU events of each {what}",
                  f"one bar per event and profiler step · {_source(prof)}")


def stage_summaries(profiles: Sequence[Profile]) -> pd.DataFrame:
    rows = [prof.summary() for prof in profiles]
    return pd.DataFrame(rows).reset_index(drop=True)


# a bar of a stage measured on another GPU than the page's (live, one this GPU cannot run is its
# recording): hatched, in a trace of its own whose legend entry and hover carry measured_on's mark
ELSEWHERE_PATTERN = "/"


def _split_by_gpu(profiles: Sequence[Profile]) -> list[tuple[list[Profile], str]]:
    """The profiles in groups to draw as one trace each: the page's own GPU's first (mark ""),
    then each other GPU's, with its mark (the stages of one GPU share one)."""
    marked = marks(profiles)
    groups: dict[str, list[Profile]] = {}
    for prof in profiles:
        groups.setdefault(marked.get(prof.stage, ""), []).append(prof)
    return [(group, mark) for mark, group in sorted(groups.items(), key=lambda kv: kv[0] != "")]


def _marker(color: str, mark: str) -> dict:
    """A bar's marker: hatched where `mark` says it was measured on another GPU."""
    return dict(color=color, pattern=dict(shape=ELSEWHERE_PATTERN)) if mark else dict(color=color)


def _marked_name(label: str, mark: str) -> str:
    """A legend entry carrying measured_on's mark on a line of its own (a phone's legend is narrow)."""
    return f"{label},<br>{mark}" if mark else label


def _subtitle_gpus(profiles: Sequence[Profile], fallback: str) -> str:
    """The subtitle's source: one GPU's line, or (two GPUs) which stages are hatched and where they ran."""
    return hatched_note(profiles) or fallback


def gpu_events_per_forward(profiles: Sequence[Profile]) -> go.Figure:
    """GPU events (kernels + memcpy + memset) per forward, one bar per stage; a stage measured on
    another GPU hatched, its legend entry saying where."""
    fig = go.Figure()
    for group, mark in _split_by_gpu(profiles):
        table = stage_summaries(group)
        fig.add_bar(x=table["stage"], y=table["gpu_events"], text=table["gpu_events"], textposition="outside",
                    name=_marked_name("GPU events", mark), showlegend=bool(mark),
                    marker=_marker(SERIES_COLORS["GPU time"], mark),
                    hovertemplate="%{x}: %{y} GPU events per forward" + (f", {mark}" if mark else "")
                                  + "<extra></extra>")
    fig.update_layout(yaxis_title="GPU events per forward", height=380, barmode="relative",
                      xaxis=dict(categoryorder="array", categoryarray=[p.stage for p in profiles]))
    return _title(fig, "GPU events per forward", _subtitle_gpus(profiles, _source(profiles[-1])))


def gpu_and_cpu_time(profiles: Sequence[Profile]) -> go.Figure:
    """GPU time and CPU time per forward, side by side, for each stage; a stage measured on
    another GPU hatched, its legend entries saying where."""
    fig = go.Figure()
    for group, mark in _split_by_gpu(profiles):
        table = stage_summaries(group)
        for label, column in (("GPU time", "gpu_time_us"), ("CPU time", "cpu_time_us")):
            # one offset group per series: a hatched GPU bar sits where the others' GPU bars do
            fig.add_bar(x=table["stage"], y=table[column], name=_marked_name(label, mark), offsetgroup=label,
                        marker=_marker(SERIES_COLORS[label], mark),
                        hovertemplate="%{x}: %{y:.1f} µs " + label + " per forward"
                                      + (f", {mark}" if mark else "") + "<extra></extra>")
    fig.update_layout(barmode="group", yaxis_title="µs per forward (the last profiled step)", height=400,
                      xaxis=dict(categoryorder="array", categoryarray=[p.stage for p in profiles]))
    regions = set(prof.annotation for prof in profiles)
    cpu = (f"the {regions.pop()} annotation" if len(regions) == 1 and None not in regions
           else "each profile's annotation (or its whole step)")
    note = hatched_note(profiles)
    return _title(fig, "GPU time and CPU time per forward",
                  f"GPU: sum of the forward's GPU events · CPU: {cpu}" + (f" · {note}" if note else ""))


# the timeline draws at most this many bars per kind of lane (CPU ops, launches, GPU events);
# above it, lanes are cut to fewer depths and then merged into segments, so that a training
# step of thousands of events stays a figure a browser draws at once
TIMELINE_MAX_BARS = 1000
TIMELINE_MAX_DEPTHS = 12   # CPU lanes per thread
TIMELINE_MAX_LINKS = 300   # dotted launch → event lines, beyond which they are noise
TIMELINE_RESOLUTION = 800  # segments: events closer than 1/800 of the window merge


def _segments(frame: pd.DataFrame, resolution: float, kind_column: str | None) -> pd.DataFrame:
    """Events of one lane closer than `resolution` µs merged into segments: where, how many, what.

    Columns: start_us, end_us, events, total_us (the events' summed time), kind (the kind with
    the most time), name (the event with the most time)."""
    frame = frame.sort_values("start_us", kind="stable")
    reach = frame["end_us"].cummax().shift(1, fill_value=-float("inf"))
    segment = (frame["start_us"] > reach + resolution).cumsum().to_numpy()
    frame = frame.assign(segment=segment)
    groups = frame.groupby("segment", sort=True)
    out = pd.DataFrame({"start_us": groups["start_us"].min(), "end_us": groups["end_us"].max(),
                        "events": groups.size(), "total_us": groups["dur_us"].sum()})
    heaviest = frame.loc[groups["dur_us"].idxmax()].set_index("segment")
    out["name"] = heaviest["name"]
    if kind_column:
        by_kind = frame.groupby(["segment", kind_column], sort=False)["dur_us"].sum().reset_index()
        top = by_kind.loc[by_kind.groupby("segment")["dur_us"].idxmax()].set_index("segment")
        out["kind"] = top[kind_column]
    return out.reset_index(drop=True)


def _density(seg: pd.DataFrame) -> list[float]:
    """A merged segment's opacity: the share of it its events fill (a faint bar is a mostly idle
    stretch, not a busy one), never fainter than can be seen."""
    width = (seg["end_us"] - seg["start_us"]).clip(lower=1e-9)
    return (seg["total_us"] / width).clip(0.12, 1.0).round(3).tolist()


def _thread_labels(prof: Profile, ops: pd.DataFrame) -> dict:
    """'CPU' for the thread the step runs on; the others by what they are (autograd's backward)."""
    tids = list(dict.fromkeys(ops["tid"]))
    if len(tids) <= 1:
        return {t: "CPU" for t in tids}
    roots = ops[ops["depth"] == 0]
    main = roots["tid"].iloc[0] if prof.annotation is not None and len(roots) else ops["tid"].value_counts().idxmax()
    labels = {}
    for t in tids:
        name = str(prof.threads.get(t) or "")
        labels[t] = ("CPU" if t == main else "autograd" if "autograd" in name.lower() else f"tid {t}")
    return labels


def timeline(prof: Profile, step: int | None = None, window: tuple[float, float] | None = None,
             max_bars: int = TIMELINE_MAX_BARS) -> go.Figure:
    """One profiler step: the CPU lane (aten ops, nested) above the GPU lane, launches linked.

    `window=(from_us, to_us)`, in µs since the step's first event, shows that stretch alone. A step
    with more than `max_bars` events of a kind is drawn coarser: fewer op depths first, then
    events merged into segments (hover says how many); the subtitle says what was merged, and a
    narrower window shows it whole."""
    step = prof.forward_step if step is None else step
    ops, gpu = prof.cpu_ops(step), prof.kernels(step)
    launches = prof.launches(step)
    # the step's first event: its first op, or where a step has none (a CUDA graph's replay: one
    # cudaGraphLaunch, no aten op) its first launch call, which can precede its kernels by the
    # queue ahead of them
    t0 = min(float(f["start_us"].min()) for f in (ops, gpu, launches) if len(f))
    notes = []
    if window is not None:
        lo, hi = t0 + window[0], t0 + window[1]
        ops = ops[(ops["end_us"] >= lo) & (ops["start_us"] <= hi)]
        gpu = gpu[(gpu["end_us"] >= lo) & (gpu["start_us"] <= hi)]
        launches = launches[(launches["start_us"] + launches["dur_us"] >= lo) & (launches["start_us"] <= hi)]
        notes.append(f"{window[0]:,.0f}–{window[1]:,.0f} µs")
    span = max([float(f["start_us"].max() + f["dur_us"].max()) for f in (ops, gpu, launches) if len(f)]
               + [t0 + 1]) - t0
    resolution = (window[1] - window[0] if window else span) / TIMELINE_RESOLUTION

    # CPU lanes: one per thread and depth (at most TIMELINE_MAX_DEPTHS deep). Too many ops to draw
    # one by one: each lane's ops merge into segments at the window's resolution (a bar no
    # narrower than a pixel or two), and the deepest lanes go while the segments overflow
    threads = _thread_labels(prof, ops)
    deepest = int(ops["depth"].max()) if len(ops) else 0
    hidden = int((ops["depth"] >= TIMELINE_MAX_DEPTHS).sum())
    ops = ops[ops["depth"] < TIMELINE_MAX_DEPTHS]
    lane = lambda tid, d: f"{threads[tid]} {d}"  # noqa: E731
    seg = None
    if len(ops) > max_bars:
        parts = {key: _segments(g, resolution, None).assign(lane=lane(*key), depth=key[1])
                 for key, g in ops.groupby(["tid", "depth"], sort=True)}
        per_depth = pd.Series({k[1]: len(v) for k, v in parts.items()}).groupby(level=0).sum().sort_index()
        fits = per_depth.cumsum() <= max_bars
        depth_limit = int(per_depth.index[fits].max()) if fits.any() else int(per_depth.index.min())
        seg = pd.concat([v for k, v in parts.items() if k[1] <= depth_limit], ignore_index=True)
        hidden += int((ops["depth"] > depth_limit).sum())
        notes.append(f"{int((ops['depth'] <= depth_limit).sum()):,} CPU ops merged into {len(seg):,} segments")
        ops = ops[ops["depth"] <= depth_limit]
    if hidden:
        notes.append(f"{hidden:,} ops deeper than depth {min(deepest, int(ops['depth'].max()) if len(ops) else 0)} hidden")
    cpu_rows = [lane(t, d) for t in threads for d in sorted(set(ops.loc[ops["tid"] == t, "depth"]))]

    # every bar here has a base (its start): plotly's %{x} on such a bar is where it ends, not its
    # length, so each hover reads its duration from customdata
    fig = go.Figure()
    if seg is None:
        fig.add_bar(
            orientation="h", base=ops["start_us"] - t0, x=ops["dur_us"],
            y=[lane(t, d) for t, d in zip(ops["tid"], ops["depth"])],
            marker_color=SERIES_COLORS["CPU time"], marker_line=dict(width=0.5, color="white"),
            opacity=0.85, name="CPU ops", customdata=list(zip(ops["name"].map(literal), ops["self_us"], ops["dur_us"])),
            hovertemplate="%{customdata[0]}<br>%{customdata[2]:.1f} µs (self %{customdata[1]:.1f} µs)<extra></extra>")
    else:
        fig.add_bar(
            orientation="h", base=seg["start_us"] - t0, x=seg["end_us"] - seg["start_us"], y=seg["lane"],
            marker=dict(color=SERIES_COLORS["CPU time"], opacity=_density(seg)), name="CPU ops (merged)",
            customdata=list(zip(seg["events"], seg["name"].map(literal), seg["total_us"], seg["end_us"] - seg["start_us"])),
            hovertemplate="%{customdata[0]} ops, %{customdata[2]:.1f} µs of %{customdata[3]:.1f} µs; the longest "
                          "%{customdata[1]}<extra></extra>")
    if len(launches) <= max_bars:
        fig.add_bar(
            orientation="h", base=launches["start_us"] - t0, x=launches["dur_us"], y=["launch"] * len(launches),
            marker_color=MUTED, name="runtime / driver calls", customdata=list(zip(launches["name"], launches["dur_us"])),
            hovertemplate="%{customdata[0]}<br>%{customdata[1]:.1f} µs<extra></extra>")
    else:
        seg = _segments(launches.assign(end_us=launches["start_us"] + launches["dur_us"]), resolution, None)
        notes.append(f"{len(launches):,} launches merged into {len(seg):,} segments")
        fig.add_bar(
            orientation="h", base=seg["start_us"] - t0, x=seg["end_us"] - seg["start_us"], y=["launch"] * len(seg),
            marker=dict(color=MUTED, opacity=_density(seg)), name="runtime / driver calls (merged)",
            customdata=list(zip(seg["events"], seg["total_us"], seg["end_us"] - seg["start_us"])),
            hovertemplate="%{customdata[0]} calls, %{customdata[1]:.1f} µs of %{customdata[2]:.1f} µs<extra></extra>")
    streams = list(dict.fromkeys(gpu["stream"]))
    gpu_lane = (lambda s: "GPU") if len(streams) <= 1 else (lambda s: f"GPU stream {s}")  # noqa: E731
    gpu_rows = [gpu_lane(s) for s in streams] or ["GPU"]
    if len(gpu) <= max_bars:
        fig.add_bar(
            orientation="h", base=gpu["start_us"] - t0, x=gpu["dur_us"], y=[gpu_lane(s) for s in gpu["stream"]],
            marker_color=[KIND_COLORS.get(k, KIND_COLORS["unknown"]) for k in gpu["kind"]],
            marker_line=dict(width=0.5, color="white"), name="GPU events",
            customdata=list(zip(gpu["name"].map(literal), gpu["launched_by"].fillna(""), gpu["dur_us"])),
            hovertemplate="%{customdata[0]}<br>%{customdata[2]:.1f} µs, launched by %{customdata[1]}<extra></extra>")
    else:
        seg = pd.concat([_segments(g, resolution, "kind").assign(lane=gpu_lane(s))
                         for s, g in gpu.groupby("stream", sort=False)], ignore_index=True)
        notes.append(f"{len(gpu):,} GPU events merged into {len(seg):,} segments, shaded by how busy")
        fig.add_bar(
            orientation="h", base=seg["start_us"] - t0, x=seg["end_us"] - seg["start_us"], y=seg["lane"],
            marker=dict(color=[KIND_COLORS.get(k, KIND_COLORS["unknown"]) for k in seg["kind"]],
                        opacity=_density(seg)),
            name="GPU events (merged)",
            customdata=list(zip(seg["events"], seg["total_us"], seg["kind"], seg["name"].map(literal),
                                seg["end_us"] - seg["start_us"])),
            hovertemplate="%{customdata[0]} GPU events, busy %{customdata[1]:.1f} µs of %{customdata[4]:.1f} µs, "
                          "mostly %{customdata[2]}<br>the longest: %{customdata[3]}<extra></extra>")
    # launch links: from the runtime call on the CPU to the start of its GPU event
    linked = gpu.dropna(subset=["launch_start_us"])
    if len(gpu) <= max_bars and len(launches) <= max_bars and len(linked) <= TIMELINE_MAX_LINKS:
        xs, ys = [], []
        for row in linked.itertuples():
            xs += [row.launch_start_us - t0, row.start_us - t0, None]
            ys += ["launch", gpu_lane(row.stream), None]
        fig.add_scatter(x=xs, y=ys, mode="lines", line=dict(color=MUTED, width=1, dash="dot"),
                        name="launch → GPU event", hoverinfo="skip")
    elif len(linked):
        notes.append("launch links left out")
    order = gpu_rows + ["launch"] + cpu_rows[::-1]
    since = prof.annotation if prof.annotation and prof.annotation in set(ops["name"]) else "the step"
    fig.update_layout(barmode="overlay", height=260 + 28 * len(order),
                      xaxis_title=f"µs since {since} began",
                      yaxis=dict(categoryorder="array", categoryarray=order))
    if window is not None:
        fig.update_xaxes(range=list(window))
    what = "one forward" if prof.provenance.source == "stage" else "one step"
    which = f"ProfilerStep#{step}" if prof.profiler_steps else "the whole trace"
    subtitle = ("CPU lane (aten ops by depth) above the GPU lane; dotted lines link each launch to its event"
                if not notes else "CPU lanes above the GPU lane · " + " · ".join(notes))
    return _title(fig, f"{prof.stage}: {what} ({which})", subtitle)


def sweep_lines(table: pd.DataFrame, x: str = "seq", y: str = "gpu_time_us") -> go.Figure:
    """GPU time per forward against one shape parameter, a line per stage (a Session's `sweep`); a
    stage measured on another GPU (its `elsewhere` mark) dashed, its legend entry saying where."""
    fig = go.Figure()
    marked = []
    for stage, rows in table.groupby("stage", sort=False):
        rows = rows.sort_values(x)
        mark = "; ".join(dict.fromkeys(m for m in rows.get("elsewhere", pd.Series(dtype=str)).fillna("") if m))
        marked += [stage] if mark else []
        fig.add_scatter(x=rows[x], y=rows[y], mode="lines+markers", name=_marked_name(stage, mark),
                        line=dict(dash="dash") if mark else None,
                        hovertemplate=f"{stage}<br>{x} %{{x}}: %{{y:.1f}} µs" + (f"<br>{mark}" if mark else "")
                                      + "<extra></extra>")
    fig.update_layout(xaxis_title=x, yaxis_title="GPU µs per forward", yaxis_type="log", height=420)
    subtitle = "log scale; each point is one profiled shape"
    if marked:
        subtitle += f" · dashed: {', '.join(marked)}, measured on another GPU (its legend entry says which)"
    return _title(fig, f"GPU time per forward against {x}", subtitle)
