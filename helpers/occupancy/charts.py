"""Occupancy charts, in the book's one plotly style (helpers.charts).

* ``impact_curves``: the three "impact of varying ..." curves of Nsight Compute's occupancy
  calculator (block size, registers per thread, shared memory per block), the current point marked;
* ``utilization_bars``: how much of each SM resource one launch configuration takes, the limiter
  marked;
* ``stage_occupancy``: the kernels of several stage traces, theoretical occupancy (with the
  shared-memory opt-in) beside CUPTI's ``est. achieved occupancy %``, registers per thread and
  warps per SM;
* ``traced_kernels``: the kernels of the recorded stage traces, the calculator's presets.

The browser calculator (``helpers.occupancy.browser``) draws the impact curves itself, from
``impact_axes``, in the same colours.

Every number a chart shows comes from ``helpers.occupancy.occupancy``; nothing is typed in.
"""
from __future__ import annotations

from typing import Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..views.charts import KIND_COLORS, MUTED, SERIES_COLORS, _title, literal, reference_line
from ..core.measured_on import hatched_note, marks
from ..core.profile import Profile, TraceError
from ..core.stages import DEFAULT_SHAPE, STAGES
from .calculator import LIMITERS, UNLIMITED, Occupancy, occupancy
from .gpus import GPUSpec, gpu_spec

RESOURCE_LABELS = {"warps": "warp slots", "registers": "registers",
                   "shared_memory": "shared memory", "blocks": "block slots"}
CURRENT_COLOR = "#E45756"
CURVE_COLOR = SERIES_COLORS["GPU time"]
THEORETICAL_COLOR = KIND_COLORS["attention"]
CUPTI_COLOR = MUTED


def limiter_label(result: Occupancy) -> str:
    """The limiting resource(s) of one result, in words ("registers", "warps + registers")."""
    return " + ".join(RESOURCE_LABELS[k] for k in LIMITERS if k in result.limiters)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _gpu_label(spec: GPUSpec) -> str:
    return f"{spec.name} (sm {spec.capability_str})" if spec.product else f"sm {spec.capability_str}"


# ------------------------------------------------------------------------------------ kernels

def traced_kernels(profiles: Sequence[Profile]) -> pd.DataFrame:
    """One row per distinct kernel in the traces of ``profiles`` (the calculator's presets: a
    Session's ``recorded()``, every stage of the replay set at the default shape), with its
    launch values exactly as the trace has them.

    A kernel that several stages launch (the cuDNN kernel of sdpa_cudnn and sdpa_auto) is one
    row; ``stages`` names them all. Columns: label, name, kind, stages, gpu, capability,
    sm_count, registers, threads, shared_memory, block, grid, grid_blocks, est_occupancy_pct,
    launched_by, dur_us.
    """
    rows: dict[tuple, dict] = {}
    for prof in profiles:
        k = prof.kernels()
        k = k[k["category"] == "kernel"]
        for r in k.itertuples():
            if pd.isna(r.registers_per_thread) or r.threads_per_block is None:
                continue
            key = (r.name, int(r.registers_per_thread), int(r.threads_per_block),
                   int(r.shared_memory_bytes), prof.provenance.gpu)
            if key in rows:
                if prof.stage not in rows[key]["stages"]:
                    rows[key]["stages"].append(prof.stage)
                continue
            op = r.op if isinstance(r.op, str) else r.kind
            rows[key] = {
                "label": f"{r.library} {op}" if isinstance(r.library, str) else op,
                "name": r.name, "kind": r.kind, "stages": [prof.stage],
                "gpu": prof.provenance.gpu, "capability": prof.provenance.capability,
                "sm_count": prof.provenance.sm_count,
                "registers": int(r.registers_per_thread), "threads": int(r.threads_per_block),
                "shared_memory": int(r.shared_memory_bytes), "block": r.block, "grid": r.grid,
                "grid_blocks": int(r.grid_blocks),
                "est_occupancy_pct": None if pd.isna(r.est_occupancy_pct) else int(r.est_occupancy_pct),
                "launched_by": r.launched_by, "dur_us": float(r.dur_us)}
    table = pd.DataFrame(list(rows.values()))
    if len(table):
        table["stages"] = table["stages"].map(", ".join)
    replayed = bool(profiles) and all(p.mode == "replay" for p in profiles)
    table.attrs["source"] = (
        f"Replaying the recorded traces of {len(profiles)} stages for the kernels: recorded on "
        f"{profiles[0].provenance.description}." if replayed else
        f"Kernels of {len(profiles)} profiles: " + "; ".join(
            dict.fromkeys(f"{p.mode} on {p.provenance.gpu}" for p in profiles)) + ".")
    return table


def spec_of(prof_or_gpu) -> GPUSpec:
    """The GPUSpec of a profile's GPU (its product when known, else its compute capability)."""
    if isinstance(prof_or_gpu, Profile):
        p = prof_or_gpu.provenance
        try:
            spec = gpu_spec(p.gpu)
        except ValueError:
            spec = gpu_spec(p.capability)
        return spec
    return gpu_spec(prof_or_gpu)


# ------------------------------------------------------------------------------ impact curves

def impact_axes(gpu) -> dict:
    """The values each impact curve varies over, before the current value is added:
    {"threads"|"registers"|"shared_memory": {"range": (start, stop, step), "extra": [...]}}, the
    range as Python's range() takes it. The browser calculator is handed these same axes."""
    spec = gpu_spec(gpu)
    smem_step = max(1024, 4 * spec.shared_memory_allocation_unit)
    return {
        "threads": {"range": (spec.warp_size, spec.max_threads_per_block + 1, spec.warp_size),
                    "extra": []},
        "registers": {"range": (0, spec.max_registers_per_thread + 1, 1), "extra": []},
        "shared_memory": {"range": (0, spec.shared_memory_per_block_optin + 1, smem_step),
                          "extra": [spec.shared_memory_per_block_optin]},
    }


def impact_series(gpu, threads: int, registers: int, shared_memory: int,
                  carveout: int | None = None, shared_memory_limit: str = "opt-in") -> dict:
    """The three curves as data: {"threads"|"registers"|"shared_memory": (xs, results)}."""
    spec = gpu_spec(gpu)
    now = {"threads": threads, "registers": registers, "shared_memory": shared_memory}
    out = {}
    for what, axis in impact_axes(spec).items():
        xs = sorted(set(range(*axis["range"])) | set(axis["extra"]) | {now[what]})
        results = []
        for x in xs:
            args = {**now, what: x}
            results.append(occupancy(spec, args["threads"], args["registers"],
                                     args["shared_memory"], carveout=carveout,
                                     shared_memory_limit=shared_memory_limit))
        out[what] = (xs, results)
    return out


def impact_curves(gpu, threads: int, registers: int, shared_memory: int,
                  carveout: int | None = None, shared_memory_limit: str = "opt-in") -> go.Figure:
    """Occupancy against block size, registers per thread and shared memory per block, each
    varied alone from the current configuration (marked), as Nsight Compute draws them."""
    spec = gpu_spec(gpu)
    current = occupancy(spec, threads, registers, shared_memory, carveout=carveout,
                        shared_memory_limit=shared_memory_limit)
    series = impact_series(spec, threads, registers, shared_memory, carveout, shared_memory_limit)
    titles = {"threads": "threads per block", "registers": "registers per thread",
              "shared_memory": "shared memory per block (B)"}
    # one curve under the other: three side by side leave a phone 80 px a curve, and their axis
    # titles run into each other
    fig = make_subplots(rows=3, cols=1, vertical_spacing=0.14)
    now = {"threads": threads, "registers": registers, "shared_memory": shared_memory}
    for col, (what, (xs, results)) in enumerate(series.items(), start=1):
        custom = [(r.active_blocks, r.active_warps, limiter_label(r)) for r in results]
        fig.add_scatter(
            x=xs, y=[round(r.occupancy_pct, 2) for r in results], mode="lines",
            line=dict(color=CURVE_COLOR, width=2, shape="hv"), name=titles[what],
            customdata=custom, showlegend=False,
            hovertemplate=(f"{titles[what]} %{{x}}<br>occupancy %{{y:.1f}}%: blocks "
                           f"%{{customdata[0]}}, warps %{{customdata[1]}} of "
                           f"{spec.max_warps_per_sm}<br>limited by %{{customdata[2]}}<extra></extra>"),
            row=col, col=1)
        fig.add_scatter(
            x=[now[what]], y=[round(current.occupancy_pct, 2)], mode="markers",
            marker=dict(color=CURRENT_COLOR, size=11, symbol="diamond",
                        line=dict(width=1, color="white")),
            name="current", showlegend=False,
            customdata=[(current.active_blocks, current.active_warps, limiter_label(current))],
            hovertemplate=(f"current: {titles[what]} %{{x}}<br>occupancy %{{y:.1f}}%: blocks "
                           f"%{{customdata[0]}}, warps %{{customdata[1]}} of "
                           f"{spec.max_warps_per_sm}<br>limited by %{{customdata[2]}}"
                           "<extra></extra>"),
            row=col, col=1)
        fig.add_vline(x=now[what], line=dict(color=CURRENT_COLOR, width=1, dash="dot"),
                      row=col, col=1)
        fig.update_xaxes(title_text=titles[what], title_standoff=4, row=col, col=1)
        # every warp slot: the axis runs to 100% whatever the curve reaches
        reference_line(fig, 100, axis="y", ref="y" if col == 1 else f"y{col}", dash="dot", width=1)
    fig.update_yaxes(range=[0, 105], title_text="occupancy %")
    fig.update_layout(height=620, hovermode="closest", margin=dict(t=110), showlegend=False)
    carve = "no carveout preference" if carveout is None else f"carveout {carveout}%"
    return _title(fig, f"Impact of varying each resource · {_gpu_label(spec)}",
                  f"◆ now: {threads} threads, {registers} registers/thread, {shared_memory} B shared "
                  f"memory · {carve}<br>→ {current.active_warps} of {spec.max_warps_per_sm} warps "
                  f"({current.occupancy_pct:.1f}%), limited by {limiter_label(current)}; each "
                  f"curve varies one of the three")


# --------------------------------------------------------------------------- utilization bars

def utilization_rows(result: Occupancy) -> list[dict]:
    """Per resource: used, capacity, utilization and the blocks it alone would allow."""
    spec = result.gpu
    b = result.active_blocks
    rows = [
        {"resource": "warps", "used": result.active_warps, "capacity": spec.max_warps_per_sm,
         "unit": "warps"},
        {"resource": "registers", "used": b * result.registers_per_block,
         "capacity": spec.registers_per_sm, "unit": "registers"},
        {"resource": "shared_memory", "used": b * result.shared_memory_allocated_per_block,
         "capacity": result.shared_memory_per_sm, "unit": "B"},
        {"resource": "blocks", "used": b, "capacity": spec.max_blocks_per_sm, "unit": "blocks"},
    ]
    for row in rows:
        row["utilization"] = result.utilization[row["resource"]]
        limit = result.block_limits[row["resource"]]
        row["blocks_allowed"] = None if limit == UNLIMITED else limit
        row["limiter"] = row["resource"] in result.limiters
    return rows


def utilization_bars(result: Occupancy) -> go.Figure:
    """How much of each SM resource the resident blocks take; the limiting one(s) marked."""
    rows = utilization_rows(result)
    labels = [RESOURCE_LABELS[r["resource"]] for r in rows]
    pct = [round(100 * r["utilization"], 2) for r in rows]
    colors = [CURRENT_COLOR if r["limiter"] else CURVE_COLOR for r in rows]
    text = [f"{r['used']:,} of {r['capacity']:,} {r['unit']}" + ("  ◀ limiter" if r["limiter"] else "")
            for r in rows]
    allowed = ["no limit" if r["blocks_allowed"] is None else f"{r['blocks_allowed']} blocks"
               for r in rows]
    fig = go.Figure(go.Bar(
        orientation="h", y=labels, x=pct, marker_color=colors, text=text, textposition="auto",
        customdata=allowed, cliponaxis=False,
        hovertemplate="%{y}: %{x:.1f}% used<br>alone it would allow %{customdata}<extra></extra>"))
    fig.update_layout(height=300, xaxis=dict(range=[0, 105], title="% of the SM's resource used"),
                      yaxis=dict(autorange="reversed"), margin=dict(l=110, t=100))
    spec = result.gpu
    return _title(fig, f"What the resident blocks take · {_gpu_label(spec)}",
                  f"{result.threads_per_block} threads, {result.registers_per_thread} registers/"
                  f"thread, {result.shared_memory_per_block} B shared memory<br>→ "
                  f"{_plural(result.active_blocks, 'block')}, {result.active_warps} of "
                  f"{result.max_warps} warps; "
                  f"limiter: {limiter_label(result)}")


# ---------------------------------------------------------------------------- stage occupancy

def _distinct_launches(k: pd.DataFrame, top: int) -> pd.DataFrame:
    """One row per kernel launch configuration (name, registers, threads, shared memory): the
    `top` by total time, with their calls (`calls`) and summed time (`dur_us`), in launch order."""
    keys = ["name", "registers_per_thread", "threads_per_block", "shared_memory_bytes"]
    first = k.drop_duplicates(keys).set_index(keys)
    totals = k.groupby(keys, sort=False)["dur_us"].agg(["sum", "size"])
    first = first.assign(dur_us=totals["sum"], calls=totals["size"])
    kept = first.sort_values("dur_us", ascending=False).head(top)
    return kept.sort_values("start_us").reset_index()


def stage_kernel_table(profiles: Sequence[Profile] | Profile, top: int | None = None) -> pd.DataFrame:
    """The kernels of one forward of each profile, with the calculator's figures beside CUPTI's.

    With `top`, a step's many launches of the same kernel are one row (its `calls`, its summed
    `dur_us`), and only the `top` of them by time are kept: a training step launches thousands."""
    if isinstance(profiles, Profile):
        profiles = [profiles]
    rows = []
    for prof in profiles:
        spec = spec_of(prof)
        k = prof.kernels()
        # a kernel CUPTI gave no launch figures for (none in the recorded stages) has no occupancy
        k = k[(k["category"] == "kernel") & k["registers_per_thread"].notna()
              & k["threads_per_block"].notna() & k["shared_memory_bytes"].notna()].reset_index(drop=True)
        if top is not None:
            k = _distinct_launches(k, top)
        for i, r in enumerate(k.itertuples(), start=1):
            theo = occupancy(spec, int(r.threads_per_block), int(r.registers_per_thread),
                             int(r.shared_memory_bytes))
            op = r.op if isinstance(r.op, str) else r.kind
            rows.append({
                "stage": prof.stage, "#": i, "label": f"{prof.stage} · {i}. {op}" if top is None else
                         # one profile's top kernels: the name is in the title, the label stays short
                         (f"{i}. {op} ×{r.calls}" if len(profiles) == 1 else f"{prof.stage} · {i}. {op} ×{r.calls}"),
                "kernel": r.name, "kind": r.kind, "launched_by": r.launched_by,
                "gpu": spec.name, "registers": int(r.registers_per_thread),
                "threads": int(r.threads_per_block), "shared_memory": int(r.shared_memory_bytes),
                "grid_blocks": int(r.grid_blocks),
                "cupti_pct": None if pd.isna(r.est_occupancy_pct) else int(r.est_occupancy_pct),
                "theoretical_pct": theo.occupancy_pct, "active_blocks": theo.active_blocks,
                "active_warps": theo.active_warps, "max_warps": theo.max_warps,
                "limiter": limiter_label(theo), "dur_us": float(r.dur_us),
                **({"calls": int(r.calls)} if top is not None else {})})
    return pd.DataFrame(rows)


def stage_occupancy(profiles: Sequence[Profile] | Profile, theoretical: bool = True,
                    top: int | None = None) -> go.Figure:
    """Register and warp occupancy of the stage kernels: CUPTI's ``est. achieved occupancy %``
    beside the theoretical occupancy (with the shared-memory opt-in, as the kernels launch),
    registers per thread, and warps per SM.

    With ``theoretical=False`` the calculator's bar is left out and the warps per SM are the ones
    CUPTI's figure implies (its percentage of the SM's warp slots).
    """
    table = stage_kernel_table(profiles, top)
    # live, a stage this GPU cannot run is another GPU's recording (its occupancy that GPU's):
    # its bars hatched, their hover and the subtitle saying where (measured_on's mark)
    marked = marks([profiles] if isinstance(profiles, Profile) else list(profiles))
    hatch = dict(pattern=dict(shape=["/" if s in marked else "" for s in table["stage"]])) if marked else {}
    where_text = [marked.get(s, "") for s in table["stage"]]
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.06,
                        row_heights=[0.4, 0.3, 0.3],
                        subplot_titles=["occupancy (% of warp slots)",
                                        "registers per thread", "resident warps per SM"])
    x = table["label"]
    names = table["kernel"].map(literal)
    custom = list(zip(names, table["limiter"], table["active_blocks"], table["shared_memory"],
                      table["launched_by"].fillna(""), where_text))
    away = "<br>%{customdata[5]}" if marked else ""
    fig.add_bar(x=x, y=table["cupti_pct"], name="CUPTI est. achieved %",
                marker=dict(color=CUPTI_COLOR, **hatch), customdata=custom,
                hovertemplate="%{customdata[0]}<br>CUPTI: %{y}%<br>launched by %{customdata[4]},"
                              " %{customdata[3]} B shared memory" + away + "<extra></extra>", row=1, col=1)
    if theoretical:
        fig.add_bar(x=x, y=table["theoretical_pct"].round(2),
                    name="theoretical (smem opt-in)",
                    marker=dict(color=THEORETICAL_COLOR, **hatch), customdata=custom,
                    hovertemplate="%{customdata[0]}<br>theoretical: %{y:.1f}%, blocks "
                                  "%{customdata[2]}, limited by %{customdata[1]}"
                                  + away + "<extra></extra>", row=1, col=1)
    kind_colors = [KIND_COLORS.get(k, KIND_COLORS["unknown"]) for k in table["kind"]]
    fig.add_bar(x=x, y=table["registers"], name="registers per thread", marker=dict(color=kind_colors, **hatch),
                showlegend=False, customdata=custom,
                hovertemplate="%{customdata[0]}<br>%{y} registers per thread" + away + "<extra></extra>",
                row=2, col=1)
    if theoretical:
        warps, label = table["active_warps"], "resident warps (calculator)"
    else:
        warps = (table["cupti_pct"].astype(float) * table["max_warps"] / 100).round(1)
        label = "warps per SM that CUPTI's figure implies"
    fig.add_bar(x=x, y=warps, name=label, marker=dict(color=kind_colors, **hatch), showlegend=False,
                customdata=list(zip(names, table["max_warps"], where_text)),
                hovertemplate="%{customdata[0]}<br>%{y} of %{customdata[1]} warps per SM"
                              + ("<br>%{customdata[2]}" if marked else "") + "<extra></extra>", row=3, col=1)
    fig.add_scatter(x=x, y=table["max_warps"], mode="lines", name="max warps per SM",
                    line=dict(color=MUTED, dash="dash", width=1, shape="hvh"),
                    hovertemplate="max %{y} warps per SM<extra></extra>", row=3, col=1)
    fig.update_yaxes(range=[0, 105], row=1, col=1)
    reference_line(fig, 100, axis="y", dash="dot", width=1)  # every warp slot: the axis runs to 100%
    fig.update_layout(barmode="group", height=800, margin=dict(t=150, b=160),
                      legend=dict(orientation="h", x=0, y=1.05, yanchor="bottom"))
    fig.update_xaxes(tickangle=-40)
    gpus = ", ".join(dict.fromkeys(table["gpu"]))
    if marked:
        gpus += " · " + hatched_note([profiles] if isinstance(profiles, Profile) else list(profiles))
    return _title(fig, "Register and warp occupancy of the stage kernels",
                  f"one forward of {', '.join(dict.fromkeys(table['stage']))} · {gpus}"
                  + (" · theoretical: helpers.occupancy with the shared-memory opt-in"
                     if theoretical else ""))
