"""Occupancy charts, in the book's one plotly style (helpers.charts).

* ``impact_curves``: the three "impact of varying ..." curves of Nsight Compute's occupancy
  calculator (block size, registers per thread, shared memory per block), the current point marked;
* ``utilization_bars``: how much of each SM resource one launch configuration takes, the limiter
  marked;
* ``stage_occupancy``: the kernels of several stage traces, theoretical occupancy (with the
  shared-memory opt-in) beside CUPTI's ``est. achieved occupancy %``, registers per thread and
  warps per SM;
* ``explorer``: the static occupancy explorer, a heatmap of occupancy over registers per thread
  x threads per block for each GPU product and several shared-memory levels, precomputed, with a
  GPU dropdown and a shared-memory slider, and the traced kernels as points.

Every number a chart shows comes from ``helpers.occupancy.occupancy``; nothing is typed in.
"""
from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..pages.charts import KIND_COLORS, MUTED, SERIES_COLORS, _title, literal
from ..profiling.modes import profile_stage
from ..profiling.profile import Profile, TraceError
from ..profiling.stages import DEFAULT_SHAPE, STAGES
from .calculator import LIMITERS, UNLIMITED, Occupancy, occupancy
from .gpus import KiB, PRODUCTS, GPUSpec, gpu_spec

RESOURCE_LABELS = {"warps": "warp slots", "registers": "registers",
                   "shared_memory": "shared memory", "blocks": "block slots"}
CURRENT_COLOR = "#E45756"
CURVE_COLOR = SERIES_COLORS["GPU time"]
THEORETICAL_COLOR = KIND_COLORS["attention"]
CUPTI_COLOR = MUTED
# the explorer's shared-memory levels per block, bytes: none, a little, the 48 KiB default cap
# (FlashAttention-2's 49152 B), and sizes only the opt-in reaches, up to Hopper's maximum
EXPLORER_SMEM_LEVELS = (0, 16 * KiB, 48 * KiB, 96 * KiB, 160 * KiB, 227 * KiB)
EXPLORER_GPUS = tuple(PRODUCTS)


def limiter_label(result: Occupancy) -> str:
    """The limiting resource(s) of one result, in words ("registers", "warps + registers")."""
    return " + ".join(RESOURCE_LABELS[k] for k in LIMITERS if k in result.limiters)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _kib(nbytes: int) -> str:
    return f"{nbytes / KiB:g} KiB"


def _gpu_label(spec: GPUSpec) -> str:
    return f"{spec.name} (sm {spec.capability_str})" if spec.product else f"sm {spec.capability_str}"


# ------------------------------------------------------------------------------------ kernels

def traced_kernels(profiles: Sequence[Profile] | None = None) -> pd.DataFrame:
    """One row per distinct kernel in the traces of ``profiles`` (default: the replay set of
    every stage at the default shape), with its launch values exactly as the trace has them.

    A kernel that several stages launch (the cuDNN kernel of sdpa_cudnn and sdpa_auto) is one
    row; ``stages`` names them all. Columns: label, name, kind, stages, gpu, capability,
    sm_count, registers, threads, shared_memory, block, grid, grid_blocks, est_occupancy_pct,
    launched_by, dur_us.
    """
    source = None
    if profiles is None:
        profiles = recorded_profiles()
        if profiles:
            source = (f"Replaying the recorded traces of {len(profiles)} stages for the kernels: "
                      f"recorded on {profiles[0].provenance.description}.")
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
    table.attrs["source"] = source or (
        f"Kernels of {len(profiles)} profiles: " + "; ".join(
            dict.fromkeys(f"{p.mode} on {p.provenance.gpu}" for p in profiles)) + ".")
    return table


def recorded_profiles(shape=None) -> list[Profile]:
    """The replay set at ``shape`` (default: the default shape): every stage with a recording."""
    out = []
    for stage in STAGES:
        try:
            out.append(profile_stage(stage, shape or DEFAULT_SHAPE, mode="replay", quiet=True))
        except TraceError:   # a stage recorded on no GPU yet has no kernels to offer
            continue
    return out


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
    fig = make_subplots(rows=1, cols=3, shared_yaxes=True, horizontal_spacing=0.05)
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
            row=1, col=col)
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
            row=1, col=col)
        fig.add_vline(x=now[what], line=dict(color=CURRENT_COLOR, width=1, dash="dot"),
                      row=1, col=col)
        fig.update_xaxes(title_text=titles[what], row=1, col=col)
    fig.update_yaxes(range=[0, 105], title_text="occupancy (% of max warps)", row=1, col=1)
    fig.update_layout(height=380, hovermode="closest", margin=dict(t=110), showlegend=False)
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

def stage_kernel_table(profiles: Sequence[Profile] | Profile) -> pd.DataFrame:
    """The kernels of one forward of each profile, with the calculator's figures beside CUPTI's."""
    if isinstance(profiles, Profile):
        profiles = [profiles]
    rows = []
    for prof in profiles:
        spec = spec_of(prof)
        k = prof.kernels()
        k = k[k["category"] == "kernel"].reset_index(drop=True)
        for i, r in enumerate(k.itertuples(), start=1):
            theo = occupancy(spec, int(r.threads_per_block), int(r.registers_per_thread),
                             int(r.shared_memory_bytes))
            op = r.op if isinstance(r.op, str) else r.kind
            rows.append({
                "stage": prof.stage, "#": i, "label": f"{prof.stage} · {i}. {op}",
                "kernel": r.name, "kind": r.kind, "launched_by": r.launched_by,
                "gpu": spec.name, "registers": int(r.registers_per_thread),
                "threads": int(r.threads_per_block), "shared_memory": int(r.shared_memory_bytes),
                "grid_blocks": int(r.grid_blocks),
                "cupti_pct": None if pd.isna(r.est_occupancy_pct) else int(r.est_occupancy_pct),
                "theoretical_pct": theo.occupancy_pct, "active_blocks": theo.active_blocks,
                "active_warps": theo.active_warps, "max_warps": theo.max_warps,
                "limiter": limiter_label(theo), "dur_us": float(r.dur_us)})
    return pd.DataFrame(rows)


def stage_occupancy(profiles: Sequence[Profile] | Profile, theoretical: bool = True) -> go.Figure:
    """Register and warp occupancy of the stage kernels: CUPTI's ``est. achieved occupancy %``
    beside the theoretical occupancy (with the shared-memory opt-in, as the kernels launch),
    registers per thread, and warps per SM.

    With ``theoretical=False`` the calculator's bar is left out and the warps per SM are the ones
    CUPTI's figure implies (its percentage of the SM's warp slots).
    """
    table = stage_kernel_table(profiles)
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.06,
                        row_heights=[0.4, 0.3, 0.3],
                        subplot_titles=["occupancy (% of the SM's warp slots)",
                                        "registers per thread", "resident warps per SM"])
    x = table["label"]
    names = table["kernel"].map(literal)
    custom = list(zip(names, table["limiter"], table["active_blocks"], table["shared_memory"],
                      table["launched_by"].fillna("")))
    fig.add_bar(x=x, y=table["cupti_pct"], name="CUPTI est. achieved %",
                marker_color=CUPTI_COLOR, customdata=custom,
                hovertemplate="%{customdata[0]}<br>CUPTI: %{y}%<br>launched by %{customdata[4]},"
                              " %{customdata[3]} B shared memory<extra></extra>", row=1, col=1)
    if theoretical:
        fig.add_bar(x=x, y=table["theoretical_pct"].round(2),
                    name="theoretical (smem opt-in)",
                    marker_color=THEORETICAL_COLOR, customdata=custom,
                    hovertemplate="%{customdata[0]}<br>theoretical: %{y:.1f}%, blocks "
                                  "%{customdata[2]}, limited by %{customdata[1]}"
                                  "<extra></extra>", row=1, col=1)
    kind_colors = [KIND_COLORS.get(k, KIND_COLORS["unknown"]) for k in table["kind"]]
    fig.add_bar(x=x, y=table["registers"], name="registers per thread", marker_color=kind_colors,
                showlegend=False, customdata=custom,
                hovertemplate="%{customdata[0]}<br>%{y} registers per thread<extra></extra>",
                row=2, col=1)
    if theoretical:
        warps, label = table["active_warps"], "resident warps (calculator)"
    else:
        warps = (table["cupti_pct"].astype(float) * table["max_warps"] / 100).round(1)
        label = "warps per SM that CUPTI's figure implies"
    fig.add_bar(x=x, y=warps, name=label, marker_color=kind_colors, showlegend=False,
                customdata=list(zip(names, table["max_warps"])),
                hovertemplate="%{customdata[0]}<br>%{y} of %{customdata[1]} warps per SM"
                              "<extra></extra>", row=3, col=1)
    fig.add_scatter(x=x, y=table["max_warps"], mode="lines", name="max warps per SM",
                    line=dict(color=MUTED, dash="dash", width=1, shape="hvh"),
                    hovertemplate="max %{y} warps per SM<extra></extra>", row=3, col=1)
    fig.update_yaxes(range=[0, 105], row=1, col=1)
    fig.update_layout(barmode="group", height=800, margin=dict(t=150, b=160),
                      legend=dict(orientation="h", x=0, y=1.05, yanchor="bottom"))
    fig.update_xaxes(tickangle=-40)
    gpus = ", ".join(dict.fromkeys(table["gpu"]))
    return _title(fig, "Register and warp occupancy of the stage kernels",
                  f"one forward of {', '.join(dict.fromkeys(table['stage']))} · {gpus}"
                  + (" · theoretical: helpers.occupancy with the shared-memory opt-in"
                     if theoretical else ""))


# ----------------------------------------------------------------------------------- explorer

def explorer_axes(registers_step: int = 8, threads_step: int = 32,
                  spec: GPUSpec | None = None) -> tuple[list[int], list[int]]:
    """The explorer's grid: registers per thread (x) and threads per block (y)."""
    max_regs = spec.max_registers_per_thread if spec else 255
    max_threads = spec.max_threads_per_block if spec else 1024
    regs = list(range(registers_step, max_regs + 1, registers_step))
    if regs[-1] != max_regs:
        regs.append(max_regs)
    threads = list(range(threads_step, max_threads + 1, threads_step))
    return regs, threads


def _per_sm_key(spec: GPUSpec) -> tuple:
    """What decides the grid: two products with the same per-SM limits share one."""
    return (spec.max_warps_per_sm, spec.max_blocks_per_sm, spec.registers_per_sm,
            spec.max_registers_per_block, spec.register_allocation_unit, spec.sm_subpartitions,
            spec.shared_memory_carveouts_kib, spec.shared_memory_per_block_optin,
            spec.reserved_shared_memory_per_block, spec.shared_memory_allocation_unit,
            spec.max_threads_per_block, spec.max_registers_per_thread)


def explorer_grid(gpu, shared_memory: int, regs: Sequence[int], threads: Sequence[int]) -> dict:
    """Occupancy % (rounded half up), blocks, warps and limiter over threads (rows) x regs."""
    spec = gpu_spec(gpu)
    shape = (len(threads), len(regs))
    z = np.zeros(shape, dtype=np.uint8)
    blocks = np.zeros(shape, dtype=np.uint8)
    warps = np.zeros(shape, dtype=np.uint8)
    limiter = [[""] * len(regs) for _ in threads]
    for i, t in enumerate(threads):
        for j, r in enumerate(regs):
            res = occupancy(spec, t, r, shared_memory)
            z[i, j] = math.floor(res.occupancy_pct + 0.5)
            blocks[i, j] = res.active_blocks
            warps[i, j] = res.active_warps
            limiter[i][j] = limiter_label(res)
    return {"z": z, "blocks": blocks, "warps": warps, "limiter": limiter}


def _edges(values: Sequence[int]) -> list[float]:
    """Cell edges the way plotly draws a heatmap's bricks: midpoints, half a gap past the ends."""
    v = list(values)
    if len(v) == 1:
        return [v[0] - 0.5, v[0] + 0.5]
    mids = [(a + b) / 2 for a, b in zip(v, v[1:])]
    return [v[0] - (v[1] - v[0]) / 2] + mids + [v[-1] + (v[-1] - v[-2]) / 2]


def _runs(grid: dict, regs: Sequence[int], threads: Sequence[int]) -> list[tuple]:
    """Runs of equal cells along each row whose limiter is not registers alone, as bars:
    (threads, base, length, occupancy %, blocks, warps, first regs, last regs, limiter)."""
    edges = _edges(regs)
    out = []
    for i, t in enumerate(threads):
        j = 0
        while j < len(regs):
            key = (grid["limiter"][i][j], grid["z"][i, j], grid["blocks"][i, j], grid["warps"][i, j])
            k = j
            while k + 1 < len(regs) and (grid["limiter"][i][k + 1], grid["z"][i, k + 1],
                                         grid["blocks"][i, k + 1], grid["warps"][i, k + 1]) == key:
                k += 1
            if key[0] != RESOURCE_LABELS["registers"]:
                out.append((t, edges[j], edges[k + 1] - edges[j], int(key[1]), int(key[2]),
                            int(key[3]), regs[j], regs[k], key[0]))
            j = k + 1
    return out


# the explorer's hovers, once in the figure's template; meta = [shared memory B, max warps]
_CELL_HOVER = ("%{y} threads × %{x} registers, %{meta[0]} B shared memory<br>occupancy %{z}%: "
               "blocks %{customdata[0]}, warps %{customdata[1]} of %{meta[1]}<br>"
               "limited by registers<extra></extra>")
_RUN_HOVER = ("%{y} threads × %{customdata[3]}–%{customdata[4]} registers, %{meta[0]} B shared "
              "memory<br>occupancy %{customdata[0]}%: blocks %{customdata[1]}, warps %{customdata[2]}"
              " of %{meta[1]}<br>limited by %{text}<extra></extra>")


def _kernel_points(spec: GPUSpec, kernels: pd.DataFrame) -> tuple[list, list, list, list]:
    """One point per (registers, threads) of the traced kernels, hover text for this GPU."""
    xs, ys, texts, colors = [], [], [], []
    for (regs, threads), group in kernels.groupby(["registers", "threads"], sort=True):
        lines = []
        for r in group.itertuples():
            head = (f"<b>{literal(r.label)}</b> ({literal(r.stages)}), "
                    f"{r.shared_memory} B shared memory")
            if r.shared_memory > spec.shared_memory_per_block_optin:
                lines.append(f"{head}<br>  cannot launch on {spec.name}: above its opt-in "
                             f"maximum of {spec.shared_memory_per_block_optin} B per block")
                continue
            res = occupancy(spec, int(threads), int(regs), int(r.shared_memory))
            lines.append(f"{head}<br>  {_plural(res.active_blocks, 'block')}, {res.active_warps} of "
                         f"{res.max_warps} warps ({res.occupancy_pct:.1f}%), limited by "
                         f"{limiter_label(res)}")
        xs.append(int(regs))
        ys.append(int(threads))
        texts.append(f"{regs} registers × {threads} threads, traced on "
                     f"{literal(group['gpu'].iloc[0])}<br>" + "<br>".join(lines))
        colors.append(KIND_COLORS.get(group["kind"].iloc[0], KIND_COLORS["unknown"]))
    return xs, ys, texts, colors


def explorer(gpus: Iterable[str] = EXPLORER_GPUS,
             shared_memory_levels: Sequence[int] = EXPLORER_SMEM_LEVELS,
             kernels: pd.DataFrame | None = None, initial_gpu: str | None = None,
             initial_shared_memory: int | None = None, registers_step: int = 8,
             threads_step: int = 32) -> go.Figure:
    """The static occupancy explorer: occupancy over registers per thread x threads per block.

    A dropdown picks the GPU product, a slider the shared memory per block; every grid is
    precomputed with ``occupancy()`` (opt-in shared-memory limit, no carveout preference).
    Products with the same per-SM limits share one grid. The traced kernels (``kernels``, default
    ``traced_kernels()``) are points, each with its occupancy on the selected GPU at its own
    shared memory. The hover of a cell tells its occupancy, active blocks, warps and limiter.

    How it stays small and works with no kernel: occupancy, blocks and warps are uint8 typed
    arrays (base64 in the JSON); the heatmap's own hover speaks for register-limited cells, and
    transparent bars over the runs of cells limited by anything else speak for those (a row's
    non-register limit is one number, so a run is one bar). The slider toggles ``visible`` by
    shared-memory level; the dropdown moves the other GPUs' traces to a hidden pair of axes, so
    the two controls never undo each other and no data is copied into them.
    """
    specs = [gpu_spec(g) for g in gpus]
    names = [s.name for s in specs]
    if kernels is None:
        kernels = traced_kernels()
    levels = list(shared_memory_levels)
    if initial_gpu is None:
        initial_gpu = names[0]
        if len(kernels):
            try:
                traced = gpu_spec(kernels["gpu"].iloc[0]).name
                initial_gpu = traced if traced in names else initial_gpu
            except ValueError:
                pass
    initial = specs[names.index(initial_gpu)]
    if initial_shared_memory in levels:
        initial_level = levels.index(initial_shared_memory)
    else:
        initial_level = levels.index(48 * KiB) if 48 * KiB in levels else 0

    regs, threads = explorer_axes(registers_step, threads_step)
    fig = go.Figure()
    trace_level: list[int | None] = []   # the slider level of each trace (None: every level)
    trace_owner: list[tuple] = []        # the per-SM key (grids) or ("gpu", name) (points)
    initial_key = _per_sm_key(initial)
    done = set()

    def add(trace, level, owner):
        on_gpu = owner == initial_key or owner == ("gpu", initial.name)
        trace.update(visible=level is None or level == initial_level,
                     xaxis="x" if on_gpu else "x2", yaxis="y" if on_gpu else "y2")
        fig.add_trace(trace)
        trace_level.append(level)
        trace_owner.append(owner)

    for spec in specs:
        key = _per_sm_key(spec)
        for li, level in enumerate(levels):
            if (key, li) in done:
                continue
            done.add((key, li))
            if level > spec.shared_memory_per_block_optin:
                add(go.Scatter(
                    x=[regs[len(regs) // 2]], y=[threads[len(threads) // 2]], mode="text",
                    text=[f"{_kib(level)} per block is above the opt-in maximum<br>of "
                          f"sm {spec.capability_str} ({spec.shared_memory_per_block_optin} B)"],
                    textfont=dict(size=15, color=MUTED), showlegend=False, hoverinfo="skip"),
                    li, key)
                continue
            grid = explorer_grid(spec, level, regs, threads)
            meta = [level, spec.max_warps_per_sm]
            add(go.Heatmap(
                x=np.array(regs, dtype=np.uint8), y=np.array(threads, dtype=np.uint16),
                z=grid["z"], coloraxis="coloraxis", meta=meta,
                customdata=np.stack([grid["blocks"], grid["warps"]], axis=-1)), li, key)
            runs = _runs(grid, regs, threads)
            if runs:
                cols = list(zip(*runs))
                add(go.Bar(
                    orientation="h", y=np.array(cols[0], dtype=np.uint16),
                    base=np.floor(np.array(cols[1])).astype(np.uint16),
                    x=np.ceil(np.array(cols[2])).astype(np.uint16), text=list(cols[8]),
                    meta=meta, customdata=np.array(cols[3:8], dtype=np.uint8).T), li, key)
    for spec in specs:
        if not len(kernels):
            break
        xs, ys, texts, colors = _kernel_points(spec, kernels)
        add(go.Scatter(x=xs, y=ys, mode="markers", text=texts, name="traced kernels",
                       marker=dict(size=12, color=colors, line=dict(width=2, color="white")),
                       hovertemplate="%{text}<extra></extra>", showlegend=False),
            None, ("gpu", spec.name))

    def axes_for(spec: GPUSpec) -> tuple[list[str], list[str]]:
        mine = [o == _per_sm_key(spec) or o == ("gpu", spec.name) for o in trace_owner]
        return (["x" if m else "x2" for m in mine], ["y" if m else "y2" for m in mine])

    buttons = []
    for spec in specs:
        xa, ya = axes_for(spec)
        buttons.append(dict(label=spec.name, method="update",
                            args=[{"xaxis": xa, "yaxis": ya},
                                  {"title.text": _explorer_title(spec, kernels)}]))
    sliding = [i for i, lv in enumerate(trace_level) if lv is not None]
    steps = [dict(label=_kib(level), method="restyle",
                  args=[{"visible": [trace_level[i] == li for i in sliding]}, sliding])
             for li, level in enumerate(levels)]
    hidden = dict(domain=[0, 0.001], range=[-2, -1], visible=False, fixedrange=True)
    fig.layout.template.data.heatmap = [go.Heatmap(hovertemplate=_CELL_HOVER, xgap=1, ygap=1)]
    fig.layout.template.data.bar = [go.Bar(
        hovertemplate=_RUN_HOVER, width=threads_step, textposition="none", showlegend=False,
        marker=dict(color="rgba(0,0,0,0)", line=dict(width=0)))]
    fig.update_layout(
        height=660, margin=dict(t=130, b=120, l=70, r=30), barmode="overlay",
        coloraxis=dict(cmin=0, cmax=100, colorscale="Viridis",
                       colorbar=dict(title=dict(text="occupancy %"), thickness=14)),
        xaxis=dict(title="registers per thread", range=[0, regs[-1] + registers_step],
                   showgrid=False, domain=[0, 1]),
        yaxis=dict(title="threads per block", range=[0, threads[-1] + threads_step],
                   showgrid=False, domain=[0, 1]),
        xaxis2=dict(hidden, anchor="y2"), yaxis2=dict(hidden, anchor="x2"),
        hovermode="closest", showlegend=False,
        annotations=[dict(text="GPU", x=0.80, xref="paper", y=-0.115, yref="paper",
                          xanchor="left", yanchor="top", showarrow=False, font=dict(color=MUTED))],
        updatemenus=[dict(type="dropdown", buttons=buttons, active=specs.index(initial),
                          direction="up", x=1.0, xanchor="right", y=-0.16, yanchor="top",
                          showactive=True, bgcolor="rgba(138,143,152,0.15)",
                          font=dict(color=MUTED))],
        sliders=[dict(steps=steps, active=initial_level, x=0, len=0.76, y=-0.12, yanchor="top",
                      currentvalue=dict(prefix="shared memory per block: ",
                                        font=dict(color=MUTED)),
                      pad=dict(t=30), font=dict(color=MUTED))])
    return _title(fig, _explorer_title(initial, kernels))


def _explorer_title(spec: GPUSpec, kernels: pd.DataFrame) -> str:
    traced = ", ".join(dict.fromkeys(kernels["gpu"])) if len(kernels) else "none"
    return (f"Occupancy explorer · {_gpu_label(spec)}"
            f"<br><sup>per SM: {spec.max_warps_per_sm} warps, {spec.max_blocks_per_sm} blocks, "
            f"{spec.registers_per_sm // KiB}K registers; up to "
            f"{spec.shared_memory_per_block_optin // KiB} KiB of shared memory a block (opt-in)"
            f"<br>points: kernels traced on {literal(traced)}, each at its own shared memory</sup>")


def figure_json_size(fig: go.Figure) -> int:
    """Bytes of the figure's JSON, as the page carries it."""
    return len(fig.to_json().encode())


def decode_array(value):
    """A plotly figure-JSON array back to numpy: a plain list, or {dtype, bdata, shape}."""
    import base64
    if isinstance(value, dict) and "bdata" in value:
        arr = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        if value.get("shape"):
            arr = arr.reshape([int(s) for s in str(value["shape"]).split(",")])
        return arr
    return np.asarray(value, dtype=object)
