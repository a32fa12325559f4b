"""What HTA gives, per profiler step, as views of a Profile: busy against idle, idle by cause,
the top kernels (decoded), the kernels each op launched, and a verdict in words, computed.

The definitions are in `helpers.breakdown.core`. Every view takes any Profile: a stage, your
code through `profile_code`, or any trace through `load_trace`.
"""
from __future__ import annotations

from typing import Sequence

import pandas as pd
import plotly.graph_objects as go

from . import core as bd
from ..core.bound import CPU, Bound, of_step
from ..core.errors import TraceError
from ..core.profile import Profile
from ..views.charts import KIND_COLORS, MUTED, SERIES_COLORS, _title

CAUSE_COLORS = {"busy": SERIES_COLORS["GPU time"], "host": SERIES_COLORS["CPU time"],
                "gpu": KIND_COLORS["masked_fill"], "unknown": MUTED}


def _name(prof: Profile) -> str:
    return prof.trace_path.name if prof.trace_path is not None else prof.stage


def require_gpu(prof: Profile) -> None:
    """A clear error, naming the trace, where there is no GPU event to break down."""
    if prof.gpu_events("all").empty:
        raise TraceError(f"{_name(prof)} holds no GPU events (kernels, memcpys, memsets), so there is "
                         f"no GPU time to break down. Profile with ProfilerActivity.CUDA on a CUDA "
                         f"GPU (profile_code does where CUDA is present).")


def _step(prof: Profile, step: int | None) -> int:
    return prof.forward_step if step is None else step


def gpu_breakdown(prof: Profile) -> pd.DataFrame:
    """Per step: GPU span, busy and idle time, idle split by cause (µs and % of the span)."""
    require_gpu(prof)
    return bd.step_breakdown(prof.gpu_events("all"), prof.steps)


def idle_gaps(prof: Profile, step: int | None = None) -> pd.DataFrame:
    """Every gap of one step's GPU window, its cause and the op whose work ended it."""
    require_gpu(prof)
    return bd.idle_gaps(prof.gpu_events(_step(prof, step))).reset_index(drop=True)


def step_bound(prof: Profile, step: int | None = None) -> Bound:
    """The bound of one step, by the book's one definition (`helpers.core.bound`): the step's
    GPU span against its busy time, the idle split by cause."""
    return of_step(gpu_breakdown(prof).set_index("step").loc[_step(prof, step)])


def verdict(prof: Profile, step: int | None = None) -> str:
    """What bounds one step, in words, with the numbers the line was drawn from (`step_bound`)."""
    step = _step(prof, step)
    b = step_bound(prof, step)
    text = b.sentence()
    if b.by == CPU:
        gaps = idle_gaps(prof, step)
        by_op = gaps[gaps["cause"] == "host"].groupby("top_aten_op", dropna=False)["idle_us"].sum()
        if len(by_op):
            op, wait = by_op.idxmax(), by_op.max()
            where = op if isinstance(op, str) else "an op the trace does not name"
            text += (f"; the longest share of that wait, {wait:.0f} µs, comes before work launched "
                     f"by {where}")
    return text


def step_table(prof: Profile) -> pd.DataFrame:
    """The per-step breakdown as a reader sees it, with the verdict of each step."""
    table = gpu_breakdown(prof)
    return pd.DataFrame({
        "step": table["step"], "GPU events": table["gpu_events"],
        "GPU span µs": table["span_us"].round(1), "busy µs": table["busy_us"].round(1),
        "busy %": table["busy_pct"].round(1), "idle µs": table["idle_us"].round(1),
        "waiting for the host µs": table["host_wait_us"].round(1),
        "waiting for the host %": table["host_wait_pct"].round(1),
        "waiting on other GPU work µs": table["other_wait_us"].round(1),
        "waiting on other GPU work %": table["other_wait_pct"].round(1),
        "verdict": [verdict(prof, s) for s in table["step"]],
    }).set_index("step")


def idle_by_op(prof: Profile, step: int | None = None, n: int = 10) -> pd.DataFrame:
    """Idle time of one step by cause and by the op (line of code) whose work ended each gap."""
    gaps = idle_gaps(prof, step)
    span = gpu_breakdown(prof).set_index("step").loc[_step(prof, step), "span_us"]
    gaps = gaps.assign(op=gaps["top_aten_op"].fillna("(no op: launched outside any op)"),
                       cause=gaps["cause"].map(bd.CAUSES))
    table = (gaps.groupby(["cause", "op"], sort=False)["idle_us"].agg(["count", "sum"])
             .reset_index().sort_values("sum", ascending=False, ignore_index=True).head(n))
    return pd.DataFrame({"cause": table["cause"], "work that ended the gap, launched by": table["op"],
                         "gaps": table["count"], "idle µs": table["sum"].round(1),
                         "% of the step": (100 * table["sum"] / span).round(1)}).set_index(
        ["cause", "work that ended the gap, launched by"])


def top_kernels(prof: Profile, step: int | None = None, n: int = 10) -> pd.DataFrame:
    """The GPU events of one step that take the most time, grouped by name, decoded."""
    require_gpu(prof)
    k = prof.kernels(_step(prof, step))
    total = k["dur_us"].sum()
    groups = k.groupby("name", sort=False)
    table = pd.DataFrame({
        "calls": groups.size(), "total µs": groups["dur_us"].sum(), "mean µs": groups["dur_us"].mean(),
        "kind": groups["kind"].first(), "reads as": groups["summary"].first(),
        "launched by": groups["top_aten_op"].agg(lambda s: ", ".join(dict.fromkeys(s.dropna()))),
    }).sort_values("total µs", ascending=False).head(n)
    table.insert(3, "% of GPU time", (100 * table["total µs"] / total).round(1))
    table["total µs"], table["mean µs"] = table["total µs"].round(1), table["mean µs"].round(2)
    table = table.rename_axis("kernel").reset_index()[
        ["kind", "reads as", "calls", "total µs", "mean µs", "% of GPU time", "launched by", "kernel"]]
    table.index = pd.RangeIndex(1, len(table) + 1, name="#")  # rank by total time
    return table


def kernels_per_op(prof: Profile, step: int | None = None, n: int | None = 15) -> pd.DataFrame:
    """For each op that launched GPU work in one step (the outermost: the line of code), what it
    launched: how many events, of which kinds, and their GPU time."""
    require_gpu(prof)
    k = prof.kernels(_step(prof, step))
    k = k.assign(op=k["top_aten_op"].fillna("(launched outside any op)"))
    total = k["dur_us"].sum()
    rows = []
    for op, group in k.groupby("op", sort=False):
        kinds = group["kind"].value_counts()
        rows.append({"op": op, "GPU events": len(group), "kernels": int((group["category"] == "kernel").sum()),
                     "GPU µs": round(float(group["dur_us"].sum()), 1),
                     "% of GPU time": round(100 * float(group["dur_us"].sum()) / total, 1),
                     "kinds": ", ".join(f"{kind} ×{count}" for kind, count in kinds.items())})
    table = pd.DataFrame(rows).sort_values("GPU µs", ascending=False).set_index("op")
    return table.head(n) if n else table


def breakdown_chart(profiles: Profile | Sequence[Profile], step: str | int | None = None) -> go.Figure:
    """Each step's GPU window split into busy, waiting for the host and waiting on other GPU work.

    One bar per step of each profile (`step=None`); or one bar per profile (`step="last"`)."""
    profiles = [profiles] if isinstance(profiles, Profile) else list(profiles)
    labels, parts = [], {"busy": [], "host": [], "gpu": []}
    for prof in profiles:
        table = gpu_breakdown(prof)
        if step == "last":
            table = table[table["step"] == prof.forward_step]
        for row in table.itertuples():
            label = prof.stage if step == "last" else f"{prof.stage} · step {row.step}"
            labels.append(label)
            parts["busy"].append(row.busy_pct)
            parts["host"].append(row.host_wait_pct)
            parts["gpu"].append(row.other_wait_pct)
    names = {"busy": "GPU busy", "host": bd.CAUSES["host"], "gpu": bd.CAUSES["gpu"]}
    fig = go.Figure()
    for key, values in parts.items():
        fig.add_bar(orientation="h", y=labels, x=values, name=names[key], marker_color=CAUSE_COLORS[key],
                    hovertemplate="%{y}<br>" + names[key] + ": %{x:.1f}% of the step<extra></extra>")
    fig.update_layout(barmode="stack", xaxis=dict(title="% of the step's GPU span", range=[0, 100]),
                      yaxis=dict(autorange="reversed"), height=200 + 34 * len(labels),
                      legend=dict(traceorder="normal"),
                      margin=dict(l=20))
    fig.update_yaxes(automargin=True)
    gpus = ", ".join(dict.fromkeys(f"{p.mode} on {p.provenance.gpu}" for p in profiles))
    return _title(fig, "Where each step's GPU time goes",
                  f"busy, or idle waiting for the host or for other GPU work · {gpus}")


def compare(profiles: Sequence[Profile]) -> pd.DataFrame:
    """Several profiles side by side, one row each (their last step): what changed in the trace."""
    rows = []
    for prof in profiles:
        require_gpu(prof)
        b = gpu_breakdown(prof).set_index("step").loc[prof.forward_step]
        s = prof.per_step.set_index("step").loc[prof.forward_step]
        rows.append({"profile": prof.stage, "GPU events": int(s["gpu_events"]), "kernels": int(s["kernels"]),
                     "GPU span µs": round(float(b["span_us"]), 1), "busy %": round(float(b["busy_pct"]), 1),
                     "waiting for the host %": round(float(b["host_wait_pct"]), 1),
                     "CPU µs": round(float(s["cpu_time_us"]), 1), "verdict": verdict(prof)})
    return pd.DataFrame(rows).set_index("profile")

