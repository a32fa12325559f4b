"""The Hopper chapter's chart: per stage's main kernel, the warp instructions of each family it
executed, on a log axis (a few thousand TMA loads beside millions of MMAs). Handed a table."""
from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go

from ..views.charts import _title, literal

# the families drawn, with their colours: tensor paths warm, loads cool, the rest grey-green
DRAWN = {
    "HGMMA": ("#d62728", "wgmma (HGMMA)"),
    "HMMA": ("#ff7f0e", "mma.sync (HMMA)"),
    "UTMALDG": ("#1f77b4", "TMA load (UTMALDG)"),
    "LDGSTS": ("#17becf", "cp.async (LDGSTS)"),
    "USETMAXREG": ("#9467bd", "setmaxnreg (USETMAXREG)"),
    "MUFU.EX2": ("#8c564b", "2^x (MUFU.EX2)"),
    "FFMA": ("#7f7f7f", "fp32 FMA (FFMA)"),
}


def families_chart(main: pd.DataFrame, subtitle: str = "") -> go.Figure:
    """Horizontal bars, one group per stage (its main kernel), one bar per family it executed
    (none drawn where it executed none: the log axis has no zero); hover for the kernel."""
    t = main.iloc[::-1]   # plotly draws categories bottom-up: the first stage at the top
    fig = go.Figure()
    labels = [literal(s) for s in t["stage"]]
    drawn = [k for k in DRAWN if k in t.columns and (t[k].fillna(0) > 0).any()]
    for key in reversed(drawn):   # within a group plotly draws the first trace at the bottom
        colour, name = DRAWN[key]
        values = [v if isinstance(v, (int, float)) and not math.isnan(v) and v > 0 else None for v in t[key]]
        fig.add_bar(orientation="h", y=labels, x=values, name=name, marker_color=colour,
                    legendrank=list(DRAWN).index(key),
                    customdata=list(zip(t["label"].map(lambda s: literal(str(s)[:70])), t["kernel"].map(
                        lambda s: literal(str(s)[:90])))),
                    hovertemplate=f"{name}: %{{x:,.0f}} warp instructions<br>%{{customdata[0]}}"
                                  "<br>%{customdata[1]}<extra></extra>")
    shown = [v for k in drawn for v in t[k] if isinstance(v, (int, float)) and not math.isnan(v) and v > 0]
    # a bar starts where the axis does: the axis starts below the smallest count, so that it shows
    span = [math.log10(min(shown)) - 0.8, math.log10(max(shown)) + 0.1] if shown else None
    fig.update_layout(barmode="group", height=170 + 14 * len(t) * max(1, len(drawn)), bargap=0.2,
                      xaxis=dict(type="log", title="warp instructions executed (log)", range=span),
                      yaxis=dict(automargin=True), margin=dict(t=80, l=10, b=60))
    return _title(fig, "Instruction families, per stage's main kernel",
                  subtitle or "one forward · hover for the kernel")
