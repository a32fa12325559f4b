"""The roofline: each stage's forward as one point under the ceilings of the GPU it ran on.

A point's x is its arithmetic intensity, the FLOPs its kernels did (Nsight Compute's work
counters, turned into FLOPs by the calibration matmuls) over the bytes they moved to and from
DRAM (ncu's DRAM counters); its y is the FLOP/s it achieved, the same FLOPs over ncu's kernel
time. The roof over a point is the lower of two ceilings measured on that GPU with
triton.testing.do_bench: a bf16 matmul's FLOP/s, and a device-to-device copy's bytes per second
times the intensity. The datasheet's figures are drawn too, labelled as the datasheet's.

    from helpers import Session, counters, roofline
    s = Session()
    c = counters.show(s.counters(stages))
    recorded, measured = s.ceilings()
    roof = roofline.load_ceilings(c, recorded, measured)
    times = roofline.timings(s.timed(c))
    pts = roofline.points(c, roof, times)
    roofline.chart(pts, roof, roofline.kernel_points(c, roof))
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..core.bound import CPU, EVEN, GPU, LINE, NO_TIMER, NO_TIMER_WORDS, WORDS, of_call
from ..core.bound import words as bound_words
from ..core.profile import Profile
from ..core.wording import names, sentence_for
from ..core.stages import DEFAULT_SHAPE, PINNED_BACKENDS, STAGES, Shape, get_stage, stages_where  # noqa: F401
from ..views.charts import KIND_COLORS, MUTED, SERIES_COLORS, _title, literal
from ..core import quantities as q
from ..counters.chapter import Counters, copy_bytes, flops_per_unit, kernel_flops, pipe_roofs
from ..views.prose import glue

TB = 1e12
# the stages whose counters were recorded at several sequence lengths too
SWEEP_STAGES = stages_where(ncu_swept=True)
SEQ_OPTIONS = ("right, to more FLOPs per byte", "left, to more bytes per FLOP", "nowhere: it stays where it is")
# bound by the CPU: the book's one definition (helpers.core.bound), the caller's loop against the GPU's busy time
CPU_BOUND_TOLERANCE = LINE

# The datasheets' figures, labelled as such wherever they appear: dense (no sparsity) bf16 tensor
# FLOP/s, fp32 (non-tensor) FLOP/s and memory bandwidth, from NVIDIA's product pages. The SXM parts
# where there are several.
DATASHEET = {
    "NVIDIA H200": {"part": "H200 SXM", "bf16 TFLOP/s": 989.0, "fp32 TFLOP/s": 67.0, "TB/s": 4.8},
    "NVIDIA H100 80GB HBM3": {"part": "H100 SXM", "bf16 TFLOP/s": 989.0, "fp32 TFLOP/s": 67.0, "TB/s": 3.35},
    "NVIDIA A100-SXM4-80GB": {"part": "A100 SXM 80GB", "bf16 TFLOP/s": 312.0, "fp32 TFLOP/s": 19.5, "TB/s": 2.039},
    "NVIDIA L4": {"part": "L4", "bf16 TFLOP/s": 121.0, "fp32 TFLOP/s": 30.3, "TB/s": 0.3},
}
# each stage's colour and marker: the registry's (Stage.colour, Stage.symbol)
STAGE_COLORS = {name: st.colour for name, st in STAGES.items()}


# ------------------------------------------------------------------------------------- ceilings

def _roof(table: pd.DataFrame, gpu: str, how: str, pipes: dict | None = None) -> dict:
    """The roofs of one GPU. The compute roofs are the ledger's (helpers.core.quantities): the
    calibration matmuls' FLOPs over their ncu time, bf16 on the tensor cores and fp32 on the FMA
    units, timed as the points are; do_bench's bf16 matmul rides along for the ceilings table, and
    is the roof only where no calibration was recorded."""
    by = table.set_index("ceiling")["value"]
    bench = float(by[next(c for c in by.index if "matmul" in c)])
    copy = float(by[next(c for c in by.index if "copy" in c)])
    pipes = pipes or {}
    matmul = pipes.get(q.TENSOR_PIPE, bench)
    fp32 = pipes.get(q.FFMA_PIPE)
    return {"matmul TFLOP/s": matmul, "copy TB/s": copy, "ridge FLOP/B": q.ridge(matmul, copy),
            "fp32 TFLOP/s": fp32, "fp32 ridge FLOP/B": q.ridge(fp32, copy) if fp32 else None,
            "do_bench matmul TFLOP/s": bench, "compute roof from": "ncu calibration" if q.TENSOR_PIPE in pipes
            else "do_bench", "gpu": gpu, "mode": how, "table": table, "datasheet": DATASHEET.get(gpu), "live": None}


def pipe_roof(roof: dict, pipe: str | None) -> float:
    """The compute roof (TFLOP/s) of a pipe: fp32 FFMA's where the roofs have one, else bf16 tensor."""
    return roof["fp32 TFLOP/s"] if pipe == q.FFMA_PIPE and roof.get("fp32 TFLOP/s") else roof["matmul TFLOP/s"]


def load_ceilings(c: Counters | None, recorded: pd.DataFrame | None,
                  measured: tuple[pd.DataFrame, str] | None = None, quiet: bool = False) -> dict:
    """The roofs of the GPU the counters `c` come from: `measured` (this GPU's ceilings and its
    name, measured now where this process has a CUDA GPU; else None), else `recorded` (the replay
    set's recording). Where the counters are replayed from another GPU than this one, the roofs
    are that GPU's recording (a point belongs under its own GPU's roof), and those measured live
    here ride along under "live", for the table.

    Returns {"matmul TFLOP/s", "copy TB/s", "ridge FLOP/B", "gpu", "mode", "table", "datasheet",
    "live"}; the datasheet's figures for that GPU (or None) are labelled as the datasheet's.
    A Session's `ceilings()` is the pair (recorded, measured)."""
    pipes = pipe_roofs(c) if c is not None and c.calibration else None
    live = None if measured is None else _roof(measured[0], measured[1], "live",
                                               pipes if c is not None and c.gpu == measured[1] else None)
    if live is not None and (c is None or c.gpu == live["gpu"]):
        roof = live
        line = f"Measured the ceilings live on {live['gpu']} with triton.testing.do_bench."
    else:
        if recorded is None:
            raise ValueError("no ceilings: none measured here and none recorded for this replay set")
        table = recorded
        p = table.attrs.get("provenance", {})
        roof = _roof(table, p.get("gpu", "?"), "replay", pipes)
        roof["live"] = live
        line = (f"Replaying the ceilings measured on {roof['gpu']} on {p.get('date', '?')[:10]} with "
                f"triton.testing.do_bench (torch {p.get('torch', '?')})")
        line += (f", the GPU the counters come from; measured live on {live['gpu']} too, in the table."
                 if live else ".")
    if not quiet:
        print(line)
    return roof


def ceilings_table(roof: dict) -> pd.DataFrame:
    """The two ceilings as measured, beside the datasheet's figures for the same GPU (and, where
    the counters come from another GPU, this GPU's own, measured live)."""
    rows = []
    for r in (roof, roof.get("live")):
        if r is None:
            continue
        sheet = r["datasheet"]
        for row in r["table"].to_dict("records"):
            key = "bf16 TFLOP/s" if "matmul" in row["ceiling"] else "TB/s"
            rows.append({"ceiling": row["ceiling"], "measured on": f"{r['gpu']} ({r['mode']})",
                         "what was timed": row["what was timed"],
                         "do_bench median (ms)": round(row["median ms"], 3),
                         "measured": f"{row['value']:,.2f} {row['value unit']}",
                         "datasheet": f"{sheet[key]:g} {row['value unit']} ({sheet['part']} datasheet)"
                         if sheet else "—",
                         "measured / datasheet": round(row["value"] / sheet[key], 2) if sheet else None})
        for name, value in ((f"{q.TENSOR_PIPE} roof (bf16 calibration matmul)", r.get("matmul TFLOP/s")),
                            (f"{q.FFMA_PIPE} roof (fp32 calibration matmul)", r.get("fp32 TFLOP/s"))):
            if value is None or r.get("compute roof from") != "ncu calibration":
                continue
            key = "fp32 TFLOP/s" if "fp32" in name else "bf16 TFLOP/s"
            rows.append({"ceiling": name, "measured on": f"{r['gpu']} ({r['mode']})",
                         "what was timed": "Nsight Compute's calibration matmul (the next section), its ncu time",
                         "do_bench median (ms)": None, "measured": f"{value:,.2f} TFLOP/s",
                         "datasheet": f"{sheet[key]:g} TFLOP/s ({sheet['part']} datasheet)" if sheet else "—",
                         "measured / datasheet": round(value / sheet[key], 2) if sheet else None})
    return pd.DataFrame(rows).set_index("ceiling")


def roof_at(intensity, roof: dict, pipe: str | None = None) -> np.ndarray:
    """The attainable FLOP/s at an arithmetic intensity (FLOP/B) on a pipe's roofs:
    min(the pipe's compute roof, intensity × copy); the bf16 tensor roof by default."""
    return q.attainable(intensity, pipe_roof(roof, pipe), roof["copy TB/s"])


# --------------------------------------------------------------------------------------- points

def timings(profiles: Sequence[Profile]) -> pd.DataFrame:
    """The profiler's GPU time, do_bench's median and the caller's loop (its bound, `bound.of_call`:
    None without a caller's timer) per forward, one row per profile: the
    forwards of every (stage, shape) whose counters a page holds, on the GPU the counters come
    from (a Session's `timed(c)`: live, or the replay set's traces recorded on that GPU)."""
    return pd.DataFrame([_timing(prof) for prof in profiles],
                        columns=["stage", "shape", "profiler GPU µs", "CPU µs", "do_bench µs",
                                 "copy bytes", "copy µs", "bound"])


def _timing(prof: Profile) -> dict:
    s = prof.summary()
    e = prof.gpu_events()
    copies = e[e["category"].isin(["memcpy", "memset"])]
    # ncu counts kernels only: the forward's memcpy and memset bytes and time come from the trace
    return {"stage": prof.stage, "shape": prof.shape.key, "profiler GPU µs": float(s["gpu_time_us"]),
            "CPU µs": float(s["cpu_time_us"]), "do_bench µs": s["do_bench_us"],
            "copy bytes": copy_bytes(prof), "copy µs": float(copies["dur_us"].sum()), "bound": of_call(s)}


def _cpu_bound(times: pd.DataFrame | None, stage: str, shape: Shape) -> tuple:
    """(profiler GPU µs, do_bench µs, the bound by the caller's loop or None) of a stage at `shape`."""
    if times is None or times.empty:
        return None, None, None
    row = times[(times["stage"] == stage) & (times["shape"] == shape.key)]
    if row.empty:
        return None, None, None
    gpu, bench = float(row["profiler GPU µs"].iloc[0]), row["do_bench µs"].iloc[0]
    b = row["bound"].iloc[0] if "bound" in row else None
    return gpu, None if bench is None or pd.isna(bench) else float(bench), b


def _copies(times: pd.DataFrame | None, stage: str, shape: Shape) -> tuple[float, float]:
    """(bytes, seconds) of a forward's memcpy and memset events, from `timings`; 0 where untimed."""
    if times is None or times.empty or "copy bytes" not in times:
        return 0.0, 0.0
    row = times[(times["stage"] == stage) & (times["shape"] == shape.key)]
    if row.empty:
        return 0.0, 0.0
    return float(row["copy bytes"].iloc[0]), float(row["copy µs"].iloc[0]) / 1e6


def points(c: Counters, roof: dict, times: pd.DataFrame | None = None,
           shapes: Sequence[Shape] | None = None) -> pd.DataFrame:
    """One row per (stage, shape): measured FLOPs and DRAM bytes, ncu's kernel time, arithmetic
    intensity, achieved FLOP/s, the roof at that intensity and how much of it the forward reached,
    which ceiling is the roof there (memory or compute), and, with `times` (from `timings`), the
    book's one bound (`bound.of_call`): the caller's loop per call against the GPU's busy time;
    "bound by the CPU" is True, False, or None (about even, or no caller's timer)."""
    factors = flops_per_unit(c)
    keys = {s.key for s in shapes} if shapes else None
    rows = []
    for (stage, key), table in c.kernels.items():
        if keys is not None and key not in keys:
            continue
        shape = Shape.from_key(key)
        tensor, ffma = float(q.tensor_flops(table, factors).sum()), float(q.fp32_flops(table, factors).sum())
        flops = tensor + ffma
        # the pipe that did most of the forward's FLOPs sets its compute roof (sdpa_math's fp32
        # matmuls run on the FMA units, not the tensor cores)
        pipe = q.FFMA_PIPE if ffma > tensor else q.TENSOR_PIPE
        # the whole forward, as chapter 5 counts it: the kernels' DRAM bytes (ncu) and the bytes of
        # its copies (the trace: naive's hidden Memcpy), and the copies' time beside the kernels'
        copy_b, copy_s = _copies(times, stage, shape)
        moved = q.forward_dram_bytes(table, copy_b)
        seconds = q.ncu_seconds(table, copy_s)
        intensity = flops / moved if moved else float("nan")
        attainable = float(roof_at(intensity, roof, pipe))
        ridge = q.ridge(pipe_roof(roof, pipe), roof["copy TB/s"])
        gpu_us, bench_us, b = _cpu_bound(times, stage, shape)
        cpu = None if b is None or b.by == EVEN else b.cpu_bound
        rows.append({
            "stage": stage, "seq": shape.seq, "shape": key, "kernels": len(table),
            "GFLOP": flops / 1e9, "DRAM MB": moved / 1e6, "ncu µs": seconds * 1e6,
            "FLOP/B": intensity, "TFLOP/s": flops / seconds / TB, "TB/s": moved / seconds / TB,
            "pipe": pipe, "roof TFLOP/s": attainable / TB, "% of roof": 100 * flops / seconds / attainable,
            "roof": "memory" if intensity < ridge else "compute",
            "profiler GPU µs": gpu_us, "do_bench µs": bench_us,
            "loop µs": None if b is None else b.wall_us, "busy µs": None if b is None else b.busy_us,
            "loop min µs": None if b is None else b.spread[0], "loop max µs": None if b is None else b.spread[1],
            "loop / busy": None if b is None else b.wall_us / b.busy_us,
            "bound": bound_words(b), "bound by the CPU": cpu})
    return pd.DataFrame(rows)


def kernel_points(c: Counters, roof: dict, shape: Shape = DEFAULT_SHAPE) -> pd.DataFrame:
    """The same, one row per kernel of each stage's forward at `shape` (kernels that did no
    counted work have no intensity and are left out of the chart)."""
    factors = flops_per_unit(c)
    rows = []
    for (stage, key), table in c.kernels.items():
        if key != shape.key:
            continue
        rows += kernel_rows(stage, table, factors, roof)
    return pd.DataFrame(rows)


def kernel_rows(stage: str, table: pd.DataFrame, factors: dict, roof: dict) -> list[dict]:
    """One row per kernel of an ncu table: executed FLOPs, DRAM bytes, ncu time, the pipe that did
    its FLOPs, and where it stands against that pipe's roofs (helpers.core.quantities.limit)."""
    flops, pipes = kernel_flops(table, factors), q.pipe_of(table, factors)
    rows = []
    for r, f, pipe in zip(table.to_dict("records"), flops, pipes):
        seconds = r["time_ns"] / 1e9
        intensity = f / r["dram_bytes"] if r["dram_bytes"] else float("nan")
        lim = q.limit(f, r["dram_bytes"], seconds, pipe_roof(roof, pipe), roof["copy TB/s"]) if seconds else {}
        rows.append({"stage": stage, "#": r["#"], "kernel": r["kernel"], "GFLOP": f / 1e9,
                     "DRAM MB": r["dram_bytes"] / 1e6, "ncu µs": seconds * 1e6, "FLOP/B": intensity,
                     "TFLOP/s": f / seconds / TB if seconds else float("nan"), "pipe": pipe or "—",
                     "% of roof": 100 * f / seconds / float(roof_at(intensity, roof, pipe))
                     if seconds and f else float("nan"),
                     "% of copy roof": lim.get("% of copy roof", float("nan")),
                     "bound by": lim.get("bound", "—")})
    return rows


def kernel_table(kernels: pd.DataFrame) -> pd.DataFrame:
    """The per-kernel points as a reader reads them, indexed by stage and kernel number."""
    out = kernels.set_index(["stage", "#"]).round({"GFLOP": 2, "DRAM MB": 1, "ncu µs": 1, "FLOP/B": 1,
                                                    "TFLOP/s": 1, "% of roof": 1, "% of copy roof": 1})
    out.attrs = {"caption": ("pipe: the pipe that did the kernel's FLOPs (the tensor pipe's counters against fp32 "
                             "FFMA instructions); % of roof: of that pipe's roof at its intensity; bound by: the "
                             f"roof it reaches {q.BOUND_SHARE:.0%} of (compute or memory), else neither roof (latency); "
                             "% of copy roof: ncu's DRAM bytes per ncu µs, of the copy's TB/s. It can pass 100: a "
                             "copy reads and writes the same bytes, and a kernel that mostly reads keeps DRAM "
                             "reading, without turning round to write.")}
    return out


def table(pts: pd.DataFrame) -> pd.DataFrame:
    """The points as a reader reads them, rounded, one row per stage."""
    cols = ["stage", "kernels", "GFLOP", "DRAM MB", "FLOP/B", "TFLOP/s", "pipe", "% of roof", "roof", "ncu µs",
            "loop µs", "bound by the CPU"]
    out = pts[cols].copy()
    out["bound by the CPU"] = [{True: "yes", False: "no"}.get(c, "about even" if w == WORDS[EVEN] else "—")
                               for c, w in zip(pts["bound by the CPU"], pts["bound"])]
    out = out.set_index("stage")
    out.attrs = {"caption": ("One forward per row. GFLOP: executed FLOPs (the counters). pipe: the one that did "
                             "most of them; its roof is the one over the point. DRAM MB: its kernels' bytes (Nsight Compute) plus its "
                             "copies' bytes (the trace: naive's hidden Memcpy), as chapter 5 counts them; "
                             "ncu µs: the kernels' time plus the copies'. loop µs: the caller's loop per call (median "
                             f"of its repeats). Bound by the CPU: the loop more than {LINE:.0%} over the GPU's busy time; "
                             f"about even: that line inside the loop's spread (the glossary's definition)."
                             + ("" if pts["bound"].ne(NO_TIMER_WORDS).all() else f" A dash: {NO_TIMER}."))}
    return out.round({"GFLOP": 1, "DRAM MB": 1, "ncu µs": 1, "FLOP/B": 1, "TFLOP/s": 1,
                                          "TB/s": 2, "roof TFLOP/s": 1, "% of roof": 1,
                                          "profiler GPU µs": 1, "do_bench µs": 1, "loop µs": 1})


# ---------------------------------------------------------------------------------------- chart

STAGE_SYMBOLS = {name: st.symbol for name, st in STAGES.items()}


def _roof_lines(fig: go.Figure, roof: dict, box: tuple) -> None:
    """The measured roof and the datasheet's, named where they run flat (not in the legend, which
    a phone stacks under the chart); drawn inside the axes' box (`_box`) only, where a reader sees
    them."""
    (x_lo, x_hi), (y_lo, _) = box
    xs = np.logspace(np.log10(x_lo), np.log10(x_hi), 400)
    ys = roof_at(xs, roof) / TB
    seen = ys >= y_lo  # the sloped roof enters the box through its floor
    fig.add_scatter(x=xs[seen], y=ys[seen], mode="lines", name=f"roof measured on {literal(roof['gpu'])}",
                    line=dict(color=SERIES_COLORS["GPU time"], width=3), showlegend=False,
                    hovertemplate="measured roof at %{x:.1f} FLOP/B: %{y:.0f} TFLOP/s<extra></extra>")
    fig.add_annotation(x=1, xref="x domain", xanchor="right", y=np.log10(roof["matmul TFLOP/s"]), yanchor="top",
                       text="measured roof (bf16 tensor cores)", showarrow=False,
                       font=dict(color=SERIES_COLORS["GPU time"], size=12))
    if roof.get("fp32 TFLOP/s"):
        # the roof of the kernels whose FLOPs are fp32 FFMA instructions (sdpa_math's matmuls)
        ys32 = roof_at(xs, roof, q.FFMA_PIPE) / TB
        seen32 = ys32 >= y_lo  # its slope enters the box through the floor too
        fig.add_scatter(x=xs[seen32], y=ys32[seen32], mode="lines", showlegend=False,
                        name=f"fp32 roof measured on {literal(roof['gpu'])}",
                        line=dict(color=SERIES_COLORS["GPU time"], width=1.5, dash="dot"),
                        hovertemplate="fp32 (FFMA) roof at %{x:.1f} FLOP/B: %{y:.0f} TFLOP/s<extra></extra>")
        fig.add_annotation(x=1, xref="x domain", xanchor="right", y=np.log10(roof["fp32 TFLOP/s"]), yanchor="bottom",
                           text="measured fp32 roof (FFMA, no tensor cores)", showarrow=False,
                           font=dict(color=SERIES_COLORS["GPU time"], size=11))
    sheet = roof.get("datasheet")
    if sheet:
        ys = np.minimum(sheet["bf16 TFLOP/s"], xs * sheet["TB/s"])
        seen = ys >= y_lo
        fig.add_scatter(x=xs[seen], y=ys[seen], mode="lines", name=f"{sheet['part']} datasheet", showlegend=False,
                        line=dict(color=MUTED, width=1.5, dash="dash"),
                        hovertemplate=f"{sheet['part']} datasheet at %{{x:.1f}} FLOP/B: %{{y:.0f}} TFLOP/s"
                                      "<extra></extra>")
        fig.add_annotation(x=1, xref="x domain", xanchor="right", y=np.log10(sheet["bf16 TFLOP/s"]),
                           yanchor="bottom", text=f"{sheet['part']} datasheet", showarrow=False,
                           font=dict(color=MUTED, size=12))


def _hover(r) -> str:
    cpu = ""
    if r["bound by the CPU"] is True:
        cpu = (f"<br>bound by the CPU: a loop pays {r['loop µs']:.1f} µs per call, the GPU is busy "
               f"{r['busy µs']:.1f} µs of it")
    return (f"<b>{r['stage']}</b> · seq {r['seq']}<br>{r['GFLOP']:.1f} GFLOP over {r['DRAM MB']:.1f} MB "
            f"of DRAM: {r['FLOP/B']:.1f} FLOP/B<br>{r['TFLOP/s']:.1f} TFLOP/s in {r['ncu µs']:.1f} µs "
            f"(ncu): {r['% of roof']:.0f}% of the {r['roof']} roof{cpu}")


def _waited(r) -> float:
    """TFLOP/s over the caller's loop per call: what a caller waiting for each forward gets."""
    return r["GFLOP"] * 1e9 / (r["loop µs"] * 1e-6) / TB


def _box(pts: pd.DataFrame, roof: dict) -> tuple:
    """The axes' ranges, in FLOP/B and TFLOP/s: around the points and the ridge, up to the roofs."""
    ok = pts[np.isfinite(pts["FLOP/B"]) & (pts["FLOP/B"] > 0) & (pts["TFLOP/s"] > 0)]
    lows = list(ok["TFLOP/s"]) + [_waited(r) for r in ok.to_dict("records") if r["bound by the CPU"] is True]
    x = (min(ok["FLOP/B"].min(), roof["ridge FLOP/B"]) / 4, max(ok["FLOP/B"].max(), roof["ridge FLOP/B"]) * 4)
    top = max(roof["matmul TFLOP/s"], (roof["datasheet"] or {}).get("bf16 TFLOP/s", 0))
    return x, (min(lows) / 2, top * 1.8)


def _axes(fig: go.Figure, box: tuple, height: int) -> None:
    """Log axes over the box; the legend under the chart, where a phone has room for it."""
    x, y = box
    fig.update_layout(
        height=height, hovermode="closest", margin=dict(t=90, b=60),
        xaxis=dict(type="log", title="FLOP per DRAM byte", range=np.log10(x).tolist(), dtick=1),
        yaxis=dict(type="log", title="TFLOP/s achieved", range=np.log10(y).tolist(), dtick=1),
        legend=dict(orientation="h", x=0, xanchor="left", y=-0.14, yanchor="top"))


def chart(pts: pd.DataFrame, roof: dict, kernels: pd.DataFrame | None = None) -> go.Figure:
    """The roofline, log-log: the measured roof, the datasheet's, one point per stage; per-kernel
    points are in the legend, hidden until clicked ("on demand"). A stage bound by the CPU gets a
    hollow twin at its FLOPs over the caller's loop per call: what a caller that waits for it gets."""
    fig = go.Figure()
    box = _box(pts, roof)
    _roof_lines(fig, roof, box)
    for r in pts.to_dict("records"):
        color = STAGE_COLORS.get(r["stage"], KIND_COLORS["unknown"])
        fig.add_scatter(x=[r["FLOP/B"]], y=[r["TFLOP/s"]], mode="markers", name=r["stage"],
                        marker=dict(size=14, color=color, symbol=STAGE_SYMBOLS.get(r["stage"], "circle"),
                                    line=dict(width=1.5, color=color)),
                        hovertext=[_hover(r)], hovertemplate="%{hovertext}<extra></extra>",
                        legendgroup=r["stage"])
        if r["bound by the CPU"] is True:
            fig.add_scatter(x=[r["FLOP/B"], r["FLOP/B"]], y=[r["TFLOP/s"], _waited(r)], mode="lines+markers",
                            line=dict(color=color, dash="dot", width=1),
                            marker=dict(size=[0, 12], color="rgba(0,0,0,0)", line=dict(width=2, color=color)),
                            name=f"{r['stage']} timed by the caller's loop", legendgroup=r["stage"], showlegend=False,
                            hovertemplate=f"{r['stage']}, timed by the caller's loop: %{{y:.1f}} TFLOP/s<extra></extra>")
    if kernels is not None and len(kernels):
        k = kernels[np.isfinite(kernels["FLOP/B"]) & (kernels["GFLOP"] > 0)]
        fig.add_scatter(
            x=k["FLOP/B"], y=k["TFLOP/s"], mode="markers", name="each kernel (click to show)",
            visible="legendonly", marker=dict(size=8, symbol=[STAGE_SYMBOLS.get(s, "circle") for s in k["stage"]],
                                              color=[STAGE_COLORS.get(s, KIND_COLORS["unknown"]) for s in k["stage"]],
                                              opacity=0.6),
            customdata=list(zip(k["stage"], k["#"], k["kernel"].map(lambda n: literal(n[:90])),
                                k["ncu µs"], k["% of roof"])),
            hovertemplate="%{customdata[0]} · kernel %{customdata[1]}<br>%{customdata[2]}<br>%{x:.1f} FLOP/B, "
                          "%{y:.1f} TFLOP/s in %{customdata[3]:.1f} µs: %{customdata[4]:.0f}% of the roof"
                          "<extra></extra>")
    _axes(fig, box, 620)
    shapes = ", ".join(dict.fromkeys(f"seq {s}" for s in pts["seq"]))
    return _title(fig, f"Roofline · {literal(roof['gpu'])}",
                  f"a point per forward ({shapes}) · hollow: per call of a loop, where the CPU holds it back<br>"
                  f"FLOPs, bytes: ncu · {_roof_sources(roof)}")


def _roof_sources(roof: dict) -> str:
    """Where the chart's roofs come from, in a subtitle's words: the compute roofs from the ncu
    calibration matmuls where recorded (else do_bench's matmul), the copy roof from do_bench."""
    compute = ("compute roofs: ncu calibration matmuls" if roof["compute roof from"] == "ncu calibration"
               else "compute roof: do_bench matmul")
    return f"{compute} · copy roof: do_bench ({roof['mode']})"


def sweep_chart(pts: pd.DataFrame, roof: dict) -> go.Figure:
    """The stages recorded at several sequence lengths: one line per stage through its points, the
    marker growing with the sequence; a hollow twin where the CPU holds a forward back."""
    fig = go.Figure()
    finite = pts[np.isfinite(pts["FLOP/B"]) & (pts["FLOP/B"] > 0)]
    finite = finite[finite.groupby("stage")["seq"].transform("nunique") > 1]
    box = _box(finite, roof)
    _roof_lines(fig, roof, box)
    for stage, rows in finite.groupby("stage", sort=False):
        rows = rows.sort_values("seq")
        color = STAGE_COLORS.get(stage, KIND_COLORS["unknown"])
        sizes = [6 + 3 * np.log2(s / rows["seq"].min()) for s in rows["seq"]]
        fig.add_scatter(x=rows["FLOP/B"], y=rows["TFLOP/s"], mode="lines+markers", name=stage,
                        line=dict(color=color, width=1.5),
                        marker=dict(size=sizes, color=color, symbol=STAGE_SYMBOLS.get(stage, "circle")),
                        hovertext=[_hover(r) for r in rows.to_dict("records")],
                        hovertemplate="%{hovertext}<extra></extra>", legendgroup=stage)
        waited = rows[rows["bound by the CPU"] == True]  # noqa: E712
        if len(waited):
            fig.add_scatter(x=waited["FLOP/B"], y=[_waited(r) for r in waited.to_dict("records")],
                            mode="markers", legendgroup=stage, showlegend=False,
                            marker=dict(size=10, color="rgba(0,0,0,0)", line=dict(width=2, color=color)),
                            customdata=waited["seq"], hovertemplate=f"{stage} at seq %{{customdata}}, timed by "
                                                                    "the caller's loop: %{y:.1f} TFLOP/s<extra></extra>")
    _axes(fig, box, 600)
    seqs = sorted(finite["seq"].unique())
    return _title(fig, "As the sequence grows",
                  f"seq {', '.join(map(str, seqs))}: larger marker, longer sequence<br>"
                  "hollow: per call of a loop, where the CPU holds it back")


# ----------------------------------------------------------------------------------------- glue

def _and(items) -> str:
    """"a", "a and b", "a, b and c"; "no stage" for none (a glued list never reads "none")."""
    return names(list(items)) or "no stage"


def _places(pts: pd.DataFrame, memory: list[str], compute: list[str]) -> dict:
    """The sentences that say which stages sit under which roof, with a form for none, one, several
    and every stage (`wording.sentence_for`): `memory_sentence`, `compute_sentence`, `fp32_sentence`."""
    total = len(pts)
    reach = pts[pts["roof"] == "compute"]["% of roof"]
    pct = (f"{reach.min():.0f}%" if len(reach) == 1 or round(reach.min()) == round(reach.max())
           else f"{reach.min():.0f}–{reach.max():.0f}%") if len(reach) else ""
    fp32 = pts[pts["pipe"] == q.FFMA_PIPE]["stage"].tolist()
    return {
        "memory_sentence": sentence_for(
            memory, none="No stage sits under the memory roof: every point is right of its pipe's ridge.",
            one="Under the memory roof, left of the ridge of its pipe: {name}. Its FLOP/s is capped by bytes, so "
                "the way up is fewer bytes, which is exactly what fusion buys: the score matrix that never goes to HBM.",
            several="Under the memory roof, left of the ridge of their pipe: {names}. Their FLOP/s is capped by bytes, "
                    "so the way up is fewer bytes, which is exactly what fusion buys: the score matrix that never "
                    "goes to HBM.",
            every="Every stage sits under the memory roof, left of the ridge of its pipe: {names}. Their FLOP/s is "
                  "capped by bytes, so the way up is fewer bytes.", total=total),
        "compute_sentence": sentence_for(
            compute, none="No stage sits under a compute roof: every point is left of its pipe's ridge.",
            one="Under the compute roof, right of the ridge: {name}. Right of the ridge is not the same as bound by "
                f"compute: it reaches {pct} of it, held back by neither roof (the per-kernel table below says which).",
            several="Under the compute roof, right of the ridge: {names}. Right of the ridge is not the same as bound "
                    f"by compute: they reach {pct} of it, held back by neither roof (the per-kernel table below says "
                    "which).",
            every="Every stage sits under the compute roof, right of its pipe's ridge: {names}. Right of the ridge is "
                  f"not the same as bound by compute: they reach {pct} of it.", total=total),
        "fp32_sentence": sentence_for(
            fp32, none="No point sits under the fp32 roof: every stage does most of its FLOPs on the tensor cores.",
            one="{name}'s point sits under the fp32 roof, not the tensor cores': most of its FLOPs are fp32 FFMAs.",
            several="The points of {names} sit under the fp32 roof, not the tensor cores': most of their FLOPs are "
                    "fp32 FFMAs."),
    }


def glue_ceilings(roof: dict) -> dict:
    """Glue the ceilings, measured and the datasheet's, as `roof_<name>`."""
    sheet = roof["datasheet"]
    values = {
        "gpu": roof["gpu"], "matmul_tflops": f"{roof['matmul TFLOP/s']:.0f}", "copy_tbps": f"{roof['copy TB/s']:.2f}",
        "ridge": f"{roof['ridge FLOP/B']:.0f}", "bound_share": f"{100 * q.BOUND_SHARE:.0f}", "bench_tflops": f"{roof['do_bench matmul TFLOP/s']:.0f}",
        "fp32_tflops": f"{roof['fp32 TFLOP/s']:.1f}" if roof.get("fp32 TFLOP/s") else "—",
        "fp32_ridge": f"{roof['fp32 ridge FLOP/B']:.1f}" if roof.get("fp32 ridge FLOP/B") else "—",
        "bench_of_sheet": f"{100 * roof['do_bench matmul TFLOP/s'] / sheet['bf16 TFLOP/s']:.0f}" if sheet else "—",
        "sheet_part": sheet["part"] if sheet else "this GPU",
        "sheet_tflops": f"{sheet['bf16 TFLOP/s']:g}" if sheet else "—",
        "sheet_tbps": f"{sheet['TB/s']:g}" if sheet else "—",
        "matmul_of_sheet": f"{100 * roof['matmul TFLOP/s'] / sheet['bf16 TFLOP/s']:.0f}" if sheet else "—",
        "copy_of_sheet": f"{100 * roof['copy TB/s'] / sheet['TB/s']:.0f}" if sheet else "—",
    }
    for key, value in values.items():
        glue(f"roof_{key}", value)
    return values


def _cap(text: str) -> str:
    return text[0].upper() + text[1:]


def verdict_sentence(pts: pd.DataFrame) -> str:
    """The bound of every point in one sentence, from its `bound` column (`bound.of_call`'s words):
    the stages bound by the CPU with the loop over the busy time, those about even with the line
    and the loop's spread, then the others; the no-timer line where no point has the caller's timer."""
    rows = pts.to_dict("records")
    if all(r["bound"] == NO_TIMER_WORDS for r in rows):
        return _cap(NO_TIMER) + ": no stage here is called bound by either."
    cpu = [f"{r['stage']} (the loop {r['loop / busy']:.2f}× the GPU's busy time)" for r in rows
           if r["bound"] == WORDS[CPU]]
    even = [f"{r['stage']} (line {(1 + LINE) * r['busy µs']:,.1f} µs, loop {r['loop min µs']:,.1f}–"
            f"{r['loop max µs']:,.1f} µs)" for r in rows if r["bound"] == WORDS[EVEN]]
    gpu = [r["stage"] for r in rows if r["bound"] == WORDS[GPU]]
    parts = [f"bound by the CPU: {_and(cpu)}" if cpu else "no stage is bound by the CPU"]
    if even:
        parts.append(f"about even: {_and(even)}")
    parts.append(f"bound by the GPU: {_and(gpu)}" if gpu else "no stage is bound by the GPU")
    untimed = [r["stage"] for r in rows if r["bound"] == NO_TIMER_WORDS]
    tail = (f" No verdict for {_and(untimed)}: the caller's timer did not time {'it' if len(untimed) == 1 else 'them'}; "
            "do_bench's figure decides nothing." if untimed else "")
    return _cap("; ".join(parts)) + "." + tail


def glue_roofline(pts: pd.DataFrame, roof: dict) -> dict:
    """Glue what the chapter says in numbers, as `roof_<name>`: the best stage and how far it is
    from its roof, which stages sit under the memory roof, which are bound by the CPU."""
    best = pts.loc[pts["TFLOP/s"].idxmax()]
    closest = pts.loc[pts["% of roof"].idxmax()]
    memory = pts[pts["roof"] == "memory"]["stage"].tolist()
    compute = pts[pts["roof"] == "compute"]["stage"].tolist()
    cpu = pts[pts["bound by the CPU"] == True]["stage"].tolist()  # noqa: E712 (None: no timer)
    values = {
        "best": best["stage"], "best_tflops": f"{best['TFLOP/s']:.0f}", "best_ai": f"{best['FLOP/B']:.0f}",
        "best_roof_tflops": f"{best['roof TFLOP/s']:.0f}", "best_pct": f"{best['% of roof']:.0f}",
        "best_gap_pct": f"{100 - best['% of roof']:.0f}", "best_roof": best["roof"],
        "closest": closest["stage"], "closest_pct": f"{closest['% of roof']:.0f}",
        "memory": _and(memory), "memory_count": len(memory), "compute": _and(compute),
        "cpu": _and(cpu), "cpu_count": len(cpu), "stages": len(pts),
        "fp32_stages": _and(pts[pts["pipe"] == q.FFMA_PIPE]["stage"].tolist()),
        # right of the ridge is not bound by compute: the share of the compute roof they reach
        "compute_pct_min": f"{pts[pts['roof'] == 'compute']['% of roof'].min():.0f}" if len(compute) else "—",
        "compute_pct_max": f"{pts[pts['roof'] == 'compute']['% of roof'].max():.0f}" if len(compute) else "—",
        "cpu_detail": verdict_sentence(pts),
        **_places(pts, memory, compute),
    }
    # the closest as the page prints it (whole percent): stages that print the same share tie
    shown = pts["% of roof"].round()
    tied = pts[shown == shown.max()]["stage"].tolist()
    values["closest_sentence"] = sentence_for(
        tied, none="No stage has a point here.",
        one=f"The stage closest to its own roof is {{name}}, at {closest['% of roof']:.0f}%.",
        several=f"The stages closest to their own roof are {{names}}, tied at {closest['% of roof']:.0f}%.")
    for key, value in values.items():
        glue(f"roof_{key}", value)
    return {**values, "closest_tied": tied}


def glue_kernels(kernels: pd.DataFrame) -> dict:
    """Glue what the per-kernel reading says of the stages whose point sits left of the ridge, as
    `roof_<name>`: sdpa_math's fp32 matmuls against the fp32 roof, the share of its forward's ncu
    time in kernels bound by compute (its matmuls) and by memory."""
    values = {}
    math = kernels[kernels["stage"] == "sdpa_math"]
    if len(math):
        gemms = math[(math["pipe"] == q.FFMA_PIPE) & math["kernel"].str.contains("gemm")]
        total = float(math["ncu µs"].sum())
        if len(gemms) and total:
            values |= {"math_gemms": len(gemms),
                       "math_gemm_pct_min": f"{gemms['% of roof'].min():.0f}",
                       "math_gemm_pct_max": f"{gemms['% of roof'].max():.0f}",
                       "math_gemm_bound": _and(sorted(set(gemms["bound by"]))),
                       "math_gemm_share": f"{100 * gemms['ncu µs'].sum() / total:.0f}",
                       "math_memory_share": f"{100 * math[math['bound by'] == 'memory']['ncu µs'].sum() / total:.0f}"}
    for key, value in values.items():
        glue(f"roof_{key}", value)
    return values


def _direction(rows: pd.DataFrame) -> str:
    rows = rows.sort_values("seq")
    first, last = rows["FLOP/B"].iloc[0], rows["FLOP/B"].iloc[-1]
    if last > 1.1 * first:
        return SEQ_OPTIONS[0]
    if last < first / 1.1:
        return SEQ_OPTIONS[1]
    return SEQ_OPTIONS[2]


def glue_sweep(pts: pd.DataFrame) -> dict:
    """Glue how the flash and naive stages' intensity moves with the sequence, as `sweep_<name>`."""
    shortest, longest = int(pts["seq"].min()), int(pts["seq"].max())
    cpu_short = pts[(pts["seq"] == shortest) & (pts["bound by the CPU"] == True)]["stage"]  # noqa: E712
    cpu_long = pts[(pts["seq"] == longest) & (pts["bound by the CPU"] == True)]["stage"]  # noqa: E712
    values = {"seq_min": shortest, "seq_max": longest, "cpu_short": _and(cpu_short), "cpu_long": _and(cpu_long),
              "cpu_short_count": len(cpu_short),
              "verdicts_short": verdict_sentence(pts[pts["seq"] == shortest]),
              "verdicts_long": verdict_sentence(pts[pts["seq"] == longest])}
    for stage in (s for s in STAGES if s in set(pts["stage"])):   # the prose reads flash, naive and cuDNN
        key = get_stage(stage).short
        rows = pts[pts["stage"] == stage]
        if len(rows) < 2:
            continue
        ai = rows.sort_values("seq")["FLOP/B"]
        sides = set(rows["roof"])
        side = (f"under the {sides.pop()} roof at every sequence length" if len(sides) == 1 else
                "under the memory roof at some sequence lengths and the compute roof at others")
        ordered = rows.sort_values("seq")
        first, last = ordered.iloc[0], ordered.iloc[-1]
        # how the FLOPs and the bytes grew from the shortest sequence to the longest, beside the
        # growth of the sequence itself (q, k, v and the output grow with it)
        values |= {f"{key}_flops_growth": f"{last['GFLOP'] / first['GFLOP']:.0f}",
                   f"{key}_bytes_growth": f"{last['DRAM MB'] / first['DRAM MB']:.1f}",
                   f"{key}_seq_growth": f"{last['seq'] / first['seq']:.0f}"}
        values |= {f"{key}_ai_min": f"{ai.min():.0f}", f"{key}_ai_max": f"{ai.max():.0f}", f"{key}_side": side,
                   f"{key}_ai_first": f"{ai.iloc[0]:.0f}", f"{key}_ai_last": f"{ai.iloc[-1]:.0f}",
                   f"{key}_direction": _direction(rows)}
    for key, value in values.items():
        glue(f"sweep_{key}", value)
    return values
