"""The decode chapter's views (08b): handed a DecodeSet (helpers.decode.core) and the set's
ceilings table, never fetching. Guesses, tables, the bandwidth chart and the glued figures, each
sentence built to hold for any recording: a part missing, another backend fastest, a tie."""
from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go
from IPython.display import HTML

from ..core.bound import SPEED_WORDS, WORDS, bound, median, speed_words
from ..core.stages import STAGES, get_stage
from ..views import charts, guess, prose
from ..views.render import html_table
from .core import (MODE_WORDS, SPLIT_RULE_LIMIT, DecodeSet, auto_picks, first_unsplit_batch, kv_bytes,
                   split_switch)

AUTO = next(n for n, st in STAGES.items() if st.dispatched and st.decodes)   # SDPA left to choose
NOT_RECORDED = "not recorded in this set"
LOOK_KV = 4096            # the KV length the kernel questions look at
BIG = (64, 32768)         # the largest call: where bandwidth is judged
SMALL = (1, 1024)         # the smallest call: where launch cost is judged
# a right call in bf16 lands within about 0.01 of the float32 reference; a wrong mask is off by ~1
WRONG_ABOVE = 0.05


def wrong_answer(error: float) -> bool:
    """The page's one definition of a wrong answer: max abs error against the right one over WRONG_ABOVE."""
    return float(error) > WRONG_ABOVE


def _fmt(x: float, decimals: int = 1) -> str:
    return f"{x:,.{decimals}f}"


def _sentence(text: str) -> str:
    """`text` as a sentence: its first letter upper-case (the rest as written), one final period."""
    text = text.strip()
    return (text[:1].upper() + text[1:]).rstrip(".") + "."


def _kernel(name: str, limit: int = 44) -> str:
    """A kernel's name as prose quotes it: cut after `limit` characters (the tables give it whole)."""
    return name if len(name) <= limit else name[:limit - 1] + "…"


def _names(items: list[str]) -> str:
    items = list(dict.fromkeys(items))
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def label(backend: str) -> str:
    """A backend as the page names it: the stage's short name (flash, cudnn, auto, ...)."""
    if backend in STAGES:
        return get_stage(backend).short
    return backend.replace("_", " ")


def copy_roof_gbps(ceilings: pd.DataFrame | None) -> float | None:
    """The set's measured copy roof (ceilings.json's device-to-device copy) in GB/s, or None."""
    if ceilings is None or ceilings.empty:
        return None
    rows = ceilings[ceilings["ceiling"].astype(str).str.contains("copy")]
    if rows.empty:
        return None
    value, unit = float(rows["value"].iloc[0]), str(rows["value unit"].iloc[0])
    return value * {"TB/s": 1e3, "GB/s": 1.0}.get(unit, float("nan"))


def _point(d: DecodeSet, backend: str, batch: int, kv: int, parts=("sweep", "flex", "split")) -> pd.Series | None:
    p = d.points(parts)
    rows = p[(p["backend"] == backend) & (p["batch"] == batch) & (p["kv"] == kv)]
    return None if rows.empty else rows.iloc[0]


def _pinned(d: DecodeSet) -> list[str]:
    return [b for b in d.backends() if b in STAGES and get_stage(b).sdpa_backend and get_stage(b).fused]


# --- what SDPA picks, and split-KV ---------------------------------------------------------------

def picks(d: DecodeSet) -> pd.DataFrame:
    """Per (batch, KV): the pinned backend whose kernels SDPA's own choice ran."""
    return auto_picks(d.points(("sweep",)), AUTO, tuple(_pinned(d)))


def picked(d: DecodeSet) -> str | None:
    """The backend SDPA picks at decode where it picks one backend at every recorded point, else None."""
    p = picks(d)
    chosen = set(p["picked"].dropna())
    return chosen.pop() if len(chosen) == 1 and p["picked"].notna().all() and len(p) else None


def switch(d: DecodeSet, backend: str = "sdpa_flash") -> pd.DataFrame:
    return split_switch(d.points(("sweep", "split")), backend)


# --- the figures of the page, glued ------------------------------------------------------------

def figures(d: DecodeSet, ceilings: pd.DataFrame | None = None) -> dict:
    """Every figure the page's prose quotes, computed once; a figure the recording lacks is absent."""
    out: dict = {"gpu": d.gpu}
    roof = copy_roof_gbps(ceilings)
    if roof:
        out["roof_gbps"] = roof
    for batch in (1, 8):
        p = _point(d, AUTO, batch, LOOK_KV)
        if p is not None:
            out[f"kernels_b{batch}"] = int(p["kernels"])
            out[f"names_b{batch}"] = list(p["kernel_names"])
            out[f"combine_b{batch}"] = p["combine"] if isinstance(p["combine"], str) else None
    pick = picked(d)
    if pick:
        out["picked"] = pick
    sw = switch(d)
    if not sw.empty:
        kvs = sorted(set(sw["kv"]))
        out["switch"] = {int(kv): first_unsplit_batch(sw, kv) for kv in kvs}
        out["split_batches"] = sorted(set(int(b) for b in sw["batch"]))
    small = _point(d, AUTO, *SMALL)
    if small is not None and small["loop_us"] is not None:
        b = bound(small["loop_us"], small["busy_us"], spread=(small["loop_min_us"], small["loop_max_us"]))
        out["small_bound"] = b
    steps = d.steps()
    for row in steps.itertuples():
        out[f"step_{row.mode}"] = row
    if "step_eager" in out and "step_graph" in out and out["step_graph"].us_per_token:
        out["graph_speedup"] = out["step_eager"].us_per_token / out["step_graph"].us_per_token
    if "step_eager" in out and "step_compiled" in out and out["step_compiled"].us_per_token:
        out["compiled_speedup"] = out["step_eager"].us_per_token / out["step_compiled"].us_per_token
    trap = d.trap()
    auto = trap[trap["backend"] == AUTO]
    if not auto.empty:
        out["trap"] = auto.iloc[0]
    best = best_bandwidth(d, *BIG)
    if best is not None:
        out["best_big"] = best
    return out


def best_bandwidth(d: DecodeSet, batch: int, kv: int) -> pd.DataFrame | None:
    """The pinned backends and flex at (batch, kv), best GB/s first (from the trace's busy time); the
    best may be tied (within 10 %, the book's "about the same")."""
    p = d.points(("sweep", "flex"))
    rows = p[(p["batch"] == batch) & (p["kv"] == kv) & (p["backend"] != AUTO) & p["gbps"].notna()]
    if rows.empty:
        return None
    return rows.sort_values("gbps", ascending=False).reset_index(drop=True)


def leaders(table: pd.DataFrame) -> list[str]:
    """The backends about as fast as the best (within 10 %: `speed_words`' "about the same")."""
    top = float(table["gbps"].iloc[0])
    return [r.backend for r in table.itertuples()
            if speed_words(top / r.gbps, 1.0) == SPEED_WORDS[1] or r.gbps == top]


def glue_page(d: DecodeSet | None, ceilings: pd.DataFrame | None = None) -> dict:
    """Glue the page's figures and sentences (prefix `dec_`); where the set has no decode recording
    every sentence is the one reader-facing line. Returns what it glued."""
    g: dict[str, str] = {}
    if d is None:
        for key in GLUED:
            g[key] = NOT_RECORDED
        for key, value in g.items():
            prose.glue(f"dec_{key}", value)
        return g
    f = figures(d, ceilings)
    g["gpu"] = d.gpu
    g["kernels_sentence"] = kernels_sentence(f)
    g["pick_sentence"] = _sentence(pick_sentence(d, f))
    g["split_sentence"] = split_sentence(d, f)
    g["small_sentence"] = _sentence(f"at batch {SMALL[0]} and KV {SMALL[1]:,}, one call of SDPA's choice is "
                                    f"{f['small_bound'].sentence()}" if "small_bound" in f else
                                    "the smallest call has no caller's timer in this set")
    g["step_sentence"] = _sentence(step_sentence(f))
    g["timeline_sentence"] = _sentence(timeline_sentence(f))
    g["trap_sentence"] = trap_sentence(d, f)
    g["bandwidth_sentence"] = _sentence(bandwidth_sentence(d, f))
    g["ncu_sentence"] = _sentence(ncu_sentence(d, f))
    for key, value in g.items():
        prose.glue(f"dec_{key}", value)
    return g


GLUED = ("gpu", "kernels_sentence", "pick_sentence", "split_sentence", "small_sentence", "step_sentence",
         "timeline_sentence", "trap_sentence", "bandwidth_sentence", "ncu_sentence")


def kernels_sentence(f: dict) -> str:
    parts = []
    for batch in (1, 8):
        if f"kernels_b{batch}" in f:
            n = f[f"kernels_b{batch}"]
            combine = f[f"combine_b{batch}"]
            what = f"{n} kernel{'s' if n != 1 else ''} ({_names([_kernel(k) for k in f[f'names_b{batch}']])})"
            if combine:
                what += f", the last, {combine}, combining the partial results of a split KV"
            parts.append(f"at batch {batch}, {what}")
    if not parts:
        return f"SDPA's own choice at KV {LOOK_KV:,} is not in this recording"
    return f"One call of SDPA's own choice at KV {LOOK_KV:,}: " + "; ".join(parts) + "."


def pick_sentence(d: DecodeSet, f: dict) -> str:
    p = picks(d)
    if p.empty:
        return "SDPA's own choice is not in this recording"
    if "picked" in f:
        return (f"at every recorded batch and KV length, SDPA ran exactly the kernels of the "
                f"{label(f['picked'])} backend ({len(p)} points)")
    chosen = p["picked"].fillna("none of the pinned backends")
    counts = chosen.map(lambda b: label(b) if b in STAGES else b).value_counts()
    return "SDPA's choice changes with the call: " + ", ".join(f"{k} at {v} point{'s' if v != 1 else ''}"
                                                                for k, v in counts.items())


def split_sentence(d: DecodeSet, f: dict) -> str:
    """Where flash stops splitting the KV, per KV length, and the issue's rule against it."""
    sw = switch(d)
    if sw.empty:
        return "The flash backend is not in this recording."
    out = []
    for kv, rows in sw.groupby("kv", sort=True):
        split = [int(b) for b in rows[rows["split"]]["batch"]]
        whole = [int(b) for b in rows[~rows["split"]]["batch"]]
        if split and whole:
            out.append(f"at KV {kv:,} flash splits at batch {_names([str(b) for b in split])} and runs one kernel "
                       f"at batch {_names([str(b) for b in whole])}")
        else:
            out.append(f"at KV {kv:,} flash {'splits' if split else 'runs one kernel'} at every recorded batch "
                       f"({_names([str(b) for b in split or whole])})")
    wrong = sw[sw["split"] != sw["rule_says_split"]]
    rule = f"The rule (split while batch × 32 heads × 1 query block is under about {SPLIT_RULE_LIMIT})"
    if wrong.empty:
        verdict = f"{rule} holds at every recorded point."
    else:
        where = _names([f"batch {r.batch} at KV {r.kv:,}" for r in wrong.itertuples()][:4])
        verdict = (f"{rule} differs at {len(wrong)} of {len(sw)} recorded points ({where}): it predicts "
                   f"{'a split' if bool(wrong['rule_says_split'].iloc[0]) else 'one kernel'} where the trace shows "
                   f"{'one kernel' if bool(wrong['rule_says_split'].iloc[0]) else 'a split'}.")
    return _sentence("; ".join(out)) + " " + verdict


def step_sentence(f: dict) -> str:
    if "step_eager" not in f:
        return "the decode step is not in this recording"
    e = f["step_eager"]
    text = (f"eager, one token takes {_fmt(e.us_per_token)} µs and launches {e.kernel_launches} kernels one by one; "
            f"the GPU is busy {_fmt(e.busy_us)} µs of it ({e.busy_pct:.0f}%): {e.bound}")
    if "step_graph" in f:
        g = f["step_graph"]
        text += (f". Replayed as one CUDA graph ({g.graph_launches} cudaGraphLaunch, {g.kernels} kernels), "
                 f"{_fmt(g.us_per_token)} µs per token, {speedup_words(f['graph_speedup'])}; "
                 f"busy {g.busy_pct:.0f}%: {g.bound}")
    if "step_compiled" in f:
        c = f["step_compiled"]
        # a code span: the page shows the sentence as Markdown, whose smart quotes would curl the
        # code's straight quotes (mode=”reduce-overhead”) and make it uncopyable
        text += (f". Under `{MODE_WORDS['compiled']}`, {_fmt(c.us_per_token)} µs per token ({c.kernels} kernels, "
                 f"{c.graph_launches} graph launch{'es' if c.graph_launches != 1 else ''}), after a first call of "
                 f"{c.first_call_s:.0f} s")
    return text + "."


def timeline_sentence(f: dict) -> str:
    """What the two timelines show, in the step table's figures."""
    if "step_eager" not in f:
        return "the decode step is not in this recording"
    e = f["step_eager"]
    gaps = e.busy_pct is not None and e.busy_pct < 100 / (1 + 0.10)
    text = (f"eager, {e.kernel_launches} launch calls on the CPU lane for {e.kernels} kernels; the GPU lane is busy "
            f"{e.busy_pct:.0f}% of the step" + (", idle in the gaps between kernels" if gaps else ""))
    if "step_graph" in f:
        g = f["step_graph"]
        text += (f"; under the graph, {g.graph_launches} cudaGraphLaunch and {g.kernel_launches} other launch "
                 f"call{'s' if g.kernel_launches != 1 else ''} for {g.kernels} kernels, the GPU busy {g.busy_pct:.0f}%")
    return text


def speedup_words(ratio: float) -> str:
    """A time ratio (before / after) in words, with the book's "about the same" (within 10 %)."""
    said = speed_words(1 / ratio, 1.0)
    if said == SPEED_WORDS[1]:
        return f"about the same as eager ({ratio:.2f}×)"
    return f"{ratio:.1f}× faster than eager" if ratio > 1 else f"{1 / ratio:.1f}× slower than eager"


def trap_sentence(d: DecodeSet, f: dict) -> str:
    trap = d.trap()
    if trap.empty:
        return "the is_causal trap is not in this recording"
    ran = trap[trap["ran"]]
    refused = trap[~trap["ran"]]
    parts = []
    if "trap" in f and bool(f["trap"]["ran"]):
        t = f["trap"]
        who = label(pinned_like(d, t))
        parts.append(f"with is_causal=True, SDPA's choice runs {_names([_kernel(k) for k in t['kernel_names']])} ({who}) and "
                     f"returns an answer off by up to {t['error']:.3g} from the right one, and within "
                     f"{t['error_upper_left']:.3g} of a mask aligned to the top left, where the one query sees only the first key")
    if not refused.empty:
        parts.append(f"pinned, {_names([label(b) for b in refused['backend']])} refuse{'s' if refused['backend'].nunique() == 1 else ''} the call")
    wrong = ran[ran["error"].map(wrong_answer)]["backend"].unique()
    if len(wrong):
        parts.append(f"every backend that ran ({_names([label(b) for b in wrong])}) gives the wrong answer")
    return _sentence("; ".join(parts)) if parts else "No backend ran the trap in this recording."


def pinned_like(d: DecodeSet, row: pd.Series) -> str:
    """The pinned backend of the trap whose kernels SDPA's choice ran with is_causal=True."""
    trap = d.trap()
    same = trap[(trap["batch"] == row["batch"]) & (trap["kv"] == row["kv"]) & (trap["backend"] != AUTO) & trap["ran"]]
    for r in same.itertuples():
        if sorted(r.kernel_names) == sorted(row["kernel_names"]):
            return r.backend
    return "none of the pinned backends"


# why a decode call's share of the copy roof can pass 100 (the sentence and the ncu table say it alike)
WHY_PAST_COPY_ROOF = ("a copy reads and writes the same bytes, and a decode call only reads, so DRAM never turns "
                      "round to write")


def bandwidth_sentence(d: DecodeSet, f: dict) -> str:
    if "best_big" not in f:
        return f"the largest call (batch {BIG[0]}, KV {BIG[1]:,}) is not in this recording"
    table = f["best_big"]
    top = leaders(table)
    gbps = float(table["gbps"].iloc[0])
    text = (f"at batch {BIG[0]} and KV {BIG[1]:,}, {_names([label(b) for b in top])} "
            f"{'read' if len(top) > 1 else 'reads'} the KV fastest, {_fmt(gbps, 0)} GB/s")
    if len(top) > 1:
        text += f" (about the same: within 10% of each other)"
    if "roof_gbps" in f:
        text += f", {100 * gbps / f['roof_gbps']:.0f}% of the measured copy roof ({_fmt(f['roof_gbps'], 0)} GB/s)"
    small = best_bandwidth(d, *SMALL)
    if small is not None:
        s_gbps = float(small["gbps"].iloc[0])
        text += (f"; at batch {SMALL[0]} and KV {SMALL[1]:,} the best is {_fmt(s_gbps, 0)} GB/s"
                 + (f" ({100 * s_gbps / f['roof_gbps']:.0f}%)" if "roof_gbps" in f else ""))
    if "roof_gbps" in f and round(100 * gbps / f["roof_gbps"]) > 100:
        # an H100's cuDNN reads at 107 % of its copy roof (2026-12-07): say why beside the figure
        text += f". A share past 100% is no error: {WHY_PAST_COPY_ROOF}"
    return text


def ncu_sentence(d: DecodeSet, f: dict) -> str:
    n = d.ncu()
    if n.empty:
        return "Nsight Compute's DRAM counters are not in this recording"
    n = n.assign(ratio=n["read_bytes"] / n["kv_bytes"])
    lo, hi = float(n["ratio"].min()), float(n["ratio"].max())
    span = f"{lo:.2f}×" if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}× to {hi:.2f}×"
    return (f"over the {len(n)} calls measured under Nsight Compute, the bytes read from DRAM are "
            f"{span} the KV cache's size (K and V, bf16)")


# --- tables -------------------------------------------------------------------------------------

def kernels_table(d: DecodeSet, kv: int = LOOK_KV) -> HTML:
    """Per backend and batch at one KV length: the kernels one call launches."""
    p = d.points(("sweep", "flex"))
    p = p[p["kv"] == kv]
    rows = [{"backend": label(r.backend), "batch": r.batch, "kernels": r.kernels,
             "names": ", ".join(r.kernel_names), "split KV": "yes" if r.split else "no",
             "GPU µs": round(r.busy_us, 1)} for r in p.itertuples()]
    return HTML(html_table(pd.DataFrame(rows)))


def split_table(d: DecodeSet, backend: str = "sdpa_flash") -> HTML:
    sw = switch(d, backend)
    rows = [{"KV": r.kv, "batch": r.batch, "batch × heads": r.ctas, "kernels": r.kernels,
             "split (trace)": "yes" if r.split else "no", "split (rule)": "yes" if r.rule_says_split else "no"}
            for r in sw.itertuples()]
    return HTML(html_table(pd.DataFrame(rows)))


def step_table(d: DecodeSet) -> HTML:
    s = d.steps()
    rows = [{"step": MODE_WORDS.get(r.mode, r.mode), "µs per token": round(r.us_per_token, 1) if r.us_per_token else None,
             "GPU busy µs": round(r.busy_us, 1), "GPU busy %": round(r.busy_pct) if r.busy_pct else None,
             "kernels": r.kernels, "launch calls": r.kernel_launches, "graph launches": r.graph_launches,
             "bound": r.bound} for r in s.itertuples()]
    return HTML(html_table(pd.DataFrame(rows)))


def trap_table(d: DecodeSet) -> HTML:
    t = d.trap()
    rows = [{"backend": label(r.backend), "batch": r.batch, "KV": r.kv, "ran": "yes" if r.ran else "refused",
             "kernels": ", ".join(r.kernel_names) if r.ran else "",
             "max abs error vs the right answer": None if not r.ran else round(float(r.error), 4),
             "vs a top-left mask": None if not r.ran else round(float(r.error_upper_left), 4)}
            for r in t.itertuples()]
    return HTML(html_table(pd.DataFrame(rows)))


def ncu_table(d: DecodeSet, ceilings: pd.DataFrame | None = None) -> HTML:
    n = d.ncu()
    roof = copy_roof_gbps(ceilings)
    rows = [{"backend": label(r.backend), "batch": r.batch, "KV": r.kv, "kernels": r.kernels,
             "KV cache MB": round(r.kv_bytes / 1e6, 1), "DRAM read MB": round(r.read_bytes / 1e6, 1),
             "DRAM written MB": round(r.write_bytes / 1e6, 2), "time µs": round(r.time_us, 1),
             "GB/s": round(r.gbps), **({"% of copy roof": round(100 * r.gbps / roof)} if roof else {})}
            for r in n.itertuples()]
    frame = pd.DataFrame(rows)
    if roof:
        # the real H100's cuDNN calls reach 107 % (2026-12-07): a reader must see why that is no error
        frame.attrs["caption"] = ("% of copy roof: DRAM bytes read and written per ncu µs, of the rate a device-to-device "
                                  f"copy reached on this GPU. It can pass 100: {WHY_PAST_COPY_ROOF}.")
    return HTML(html_table(frame))


# --- the chart ---------------------------------------------------------------------------------

def _style(backend: str) -> dict:
    st = STAGES.get(backend) or STAGES.get(backend.split("_")[0])
    symbol = st.symbol if backend in STAGES else st.symbol + "-open" if not st.symbol.endswith("-open") else st.symbol
    return {"color": st.colour, "symbol": symbol}


def bandwidth_chart(d: DecodeSet, ceilings: pd.DataFrame | None = None) -> go.Figure:
    """Achieved GB/s (the KV bytes over the GPU's busy time per call) against KV length, one line per
    backend, one panel per batch, with the measured copy roof."""
    from plotly.subplots import make_subplots
    p = d.points(("sweep", "flex"))
    p = p[p["gbps"].notna() & (p["backend"] != AUTO)]   # SDPA's choice runs a pinned backend's kernels: drawn once
    batches = sorted(set(p["batch"]))
    kvs = sorted(set(p["kv"]))
    fig = make_subplots(rows=len(batches), cols=1, shared_xaxes=True, vertical_spacing=0.06,
                        subplot_titles=[f"batch {b}" for b in batches])
    roof = copy_roof_gbps(ceilings)
    for i, batch in enumerate(batches, start=1):
        rows = p[p["batch"] == batch]
        for backend, group in rows.groupby("backend", sort=False):
            group = group.sort_values("kv")
            style = _style(backend)
            fig.add_scatter(x=group["kv"], y=group["gbps"], mode="lines+markers", name=label(backend),
                            legendgroup=backend, showlegend=i == 1, row=i, col=1,
                            line=dict(color=style["color"]), marker=dict(symbol=style["symbol"], size=8),
                            hovertemplate=f"{label(backend)}, batch {batch}<br>KV %{{x:,}}: %{{y:,.0f}} GB/s<extra></extra>")
        fig.update_xaxes(type="log", row=i, col=1, tickvals=kvs, ticktext=[f"{kv // 1024}k" for kv in kvs])
        if roof:
            ref = "y" if i == 1 else f"y{i}"
            charts.reference_line(fig, roof, f"copy roof {roof:,.0f} GB/s" if i == 1 else "", ref=ref)
    fig.update_xaxes(title_text="KV length (tokens)", row=len(batches), col=1)
    fig.update_yaxes(title_text="GB/s")
    fig.update_layout(height=300 * len(batches) + 120)
    return charts._title(fig, "KV bytes read per second, per call at decode",
                         "K and V bytes / the GPU's busy time; the dashed line is the measured copy roof")


def timeline_pair(d: DecodeSet) -> list:
    """The timelines of one eager decode step and of its CUDA graph replay (the book's timeline view)."""
    out = []
    for mode in ("eager", "graph"):
        rec = d.step_record(mode)
        if rec is not None:
            out.append(charts.timeline(d.profile(rec)))
    return out


# --- the guesses -------------------------------------------------------------------------------

def questions(d: DecodeSet, ceilings: pd.DataFrame | None = None) -> guess.Questions:
    """The page's guesses, each answered by the recording; one the recording cannot answer is left out."""
    f = figures(d, ceilings)
    asked = []
    for batch in (1, 8):
        if f"kernels_b{batch}" in f:
            asked.append(guess.number(f"decode-kernels-b{batch}",
                                      f"How many kernels does one call of SDPA (no backend pinned) launch at decode, "
                                      f"batch {batch}, KV {LOOK_KV:,}?", f[f"kernels_b{batch}"],
                                      explained_by=("#decode-kernels", "the kernels per call")))
    if "names_b1" in f:
        options = ["none: one kernel does it all", "flash_fwd_splitkv_combine_kernel", "lean_reduction_kernel"]
        answer = f["combine_b1"] or options[0]
        if answer not in options:
            options.append(answer)
        asked.append(guess.choice("decode-combine", "At batch 1, which kernel combines the partial results of the KV's splits?",
                                  options, answer, explained_by=("#decode-kernels", "the kernels per call")))
    pinned = _pinned(d)
    if pinned and not picks(d).empty:
        answer = label(f["picked"]) if "picked" in f else "it changes with batch and KV"
        options = [label(b) for b in pinned] + ["it changes with batch and KV"]
        asked.append(guess.choice("decode-pick", "Which backend does SDPA pick at decode, left to choose?",
                                  options, answer, explained_by=("#decode-pick", "SDPA's pick")))
    sw = switch(d)
    if not sw.empty and f.get("switch"):
        kv = max(f["switch"])
        first = f["switch"][kv]
        batches = [str(b) for b in sorted(set(sw[sw["kv"] == kv]["batch"]))]
        options = batches[1:] + ["it never stops splitting", "it never splits"]
        rows = sw[sw["kv"] == kv]
        answer = str(first) if first is not None else ("it never stops splitting" if rows["split"].all() else "it never splits")
        if answer not in options:
            options.insert(0, answer)
        asked.append(guess.choice("decode-switch", f"At KV {kv:,}, from which batch does the flash backend stop splitting the KV?",
                                  options, answer, explained_by=("#decode-split", "the split-KV table")))
    if "small_bound" in f:
        b = f["small_bound"]
        asked.append(guess.choice("decode-small-bound",
                                  f"One attention call at batch {SMALL[0]}, KV {SMALL[1]:,}, called in a loop: what bounds it?",
                                  bound_options(b.words), b.words,
                                  explained_by=("#decode-step", "the decode step")))
    if "step_eager" in f and f["step_eager"].busy_pct is not None:
        e = f["step_eager"]
        asked.append(guess.number("decode-busy", "Eager, what share of a decode step's time is the GPU busy (%)?",
                                  round(e.busy_pct), tolerance=0.2, unit=" %",
                                  explained_by=("#decode-step", "the decode step")))
    if "graph_speedup" in f:
        asked.append(guess.number("decode-graph-speedup",
                                  "How many times faster is a token when the step is replayed as one CUDA graph?",
                                  round(f["graph_speedup"], 1), tolerance=0.25, unit="×",
                                  explained_by=("#decode-step", "the decode step")))
        g = f["step_graph"]
        asked.append(guess.number("decode-graph-launches", "How many launch calls does the CPU make per step under the graph?",
                                  g.kernel_launches + g.graph_launches,
                                  explained_by=("#decode-step", "the decode step")))
    if "trap" in f:
        t = f["trap"]
        options = ["it raises an error", "it runs and gives the right answer", "it runs and gives a wrong answer"]
        answer = options[0] if not t["ran"] else options[2] if wrong_answer(t["error"]) else options[1]
        asked.append(guess.choice("decode-trap", "SDPA with is_causal=True at decode (1 query, many keys), no backend pinned:",
                                  options, answer, explained_by=("#decode-trap", "the is_causal trap")))
    n = d.ncu()
    at = n[(n["batch"] == 1) & (n["kv"] == 32768)]
    if not at.empty:
        # SDPA's own pick where ncu measured it, else the first fused backend measured there
        order = [f.get("picked")] + [b for b in at["backend"] if b in STAGES and get_stage(b).fused]
        backend = next((b for b in order if b in set(at["backend"])), at["backend"].iloc[0])
        row = at[at["backend"] == backend].iloc[0]
        asked.append(guess.number("decode-bytes", f"How many MB does {label(row.backend)} read from DRAM for one call at batch 1, KV 32,768?",
                                  round(row["read_bytes"] / 1e6), tolerance=0.1, unit=" MB",
                                  explained_by=("#decode-bytes", "the bytes per call"), source="Nsight Compute"))
    if "best_big" in f and "roof_gbps" in f:
        gbps = float(f["best_big"]["gbps"].iloc[0])
        asked.append(guess.number("decode-roof", f"At batch {BIG[0]}, KV {BIG[1]:,}, what % of the copy roof does the fastest backend reach?",
                                  round(100 * gbps / f["roof_gbps"]), tolerance=0.15, unit=" %",
                                  explained_by=("#decode-bandwidth", "the bandwidth chart")))
    return guess.Questions(asked)


def bound_options(answer: str) -> list[str]:
    options = [WORDS[k] for k in ("GPU", "CPU", "even")]
    return options if answer in options else options + [answer]


def banner(line: str) -> HTML:
    return HTML(f"<p>{line}</p>")


# --- the page ------------------------------------------------------------------------------------

class DecodePage:
    """The chapter as its notebook shows it: each method one output, None where the set has no
    decode recording (the banner then says so in its one line, and nothing below it shows)."""

    def __init__(self, d: DecodeSet | None, line: str, ceilings: pd.DataFrame | None = None):
        self.d, self.line, self.ceilings = d, line, ceilings
        self._glued: dict | None = None

    @property
    def missing(self) -> bool:
        return self.d is None

    def banner(self) -> HTML:
        return HTML(f'<p class="decode-banner">{self.line}</p>')

    def glue(self) -> dict:
        """Glue the page's sentences and figures (`dec_*`); every one says "not recorded" without a recording."""
        if self._glued is None:
            self._glued = glue_page(self.d, self.ceilings)
            if self.d is not None:
                self._glued |= glue_figures(self.d, self.ceilings)
        return self._glued

    def say(self, key: str):
        """One glued sentence of the page as its paragraph (Markdown); nothing without a recording."""
        if self.d is None:
            return None
        from IPython.display import Markdown
        return Markdown(self.glue()[key])

    def questions(self):
        return None if self.d is None else questions(self.d, self.ceilings)

    def _anchored(self, obj, anchor: str):
        return None if self.d is None else guess.anchored(obj, anchor)

    def kernels_table(self):
        return None if self.d is None else self._anchored(kernels_table(self.d), "decode-kernels")

    def picks_table(self):
        if self.d is None:
            return None
        p = picks(self.d)
        rows = [{"batch": r.batch, "KV": r.kv, "SDPA ran the kernels of": label(r.picked) if r.picked else "none of the pinned",
                 "kernels": ", ".join(r.kernel_names)} for r in p.itertuples()]
        return self._anchored(HTML(html_table(pd.DataFrame(rows))), "decode-pick")

    def split_table(self):
        return None if self.d is None else self._anchored(split_table(self.d), "decode-split")

    def step_table(self):
        return None if self.d is None else self._anchored(step_table(self.d), "decode-step")

    def timelines(self):
        """The eager step's timeline, then the graph replay's (the book's timeline view)."""
        if self.d is None:
            return None
        from IPython.display import display
        for fig in timeline_pair(self.d):
            display(fig)
        return None

    def trap_table(self):
        return None if self.d is None else self._anchored(trap_table(self.d), "decode-trap")

    def ncu_table(self):
        return None if self.d is None or self.d.ncu().empty else self._anchored(ncu_table(self.d, self.ceilings), "decode-bytes")

    def bandwidth_chart(self):
        if self.d is None or self.d.points().empty:
            return None
        return guess.anchored(bandwidth_chart(self.d, self.ceilings), "decode-bandwidth")


def page(d: DecodeSet | None, line: str, ceilings: pd.DataFrame | None = None) -> DecodePage:
    """The decode page of a Session's recording: `decode.page(*s.decode(), recorded_ceilings)`."""
    return DecodePage(d, line, ceilings)


def glue_figures(d: DecodeSet, ceilings: pd.DataFrame | None = None) -> dict:
    """The page's headline figures as numbers (`dec_<name>`), for the prose that quotes them."""
    f = figures(d, ceilings)
    g: dict = {}
    for mode in ("eager", "graph", "compiled"):
        row = f.get(f"step_{mode}")
        if row is not None and row.us_per_token:
            g[f"{mode}_us_per_token"] = round(float(row.us_per_token), 1)
            g[f"{mode}_busy_pct"] = round(float(row.busy_pct))
            g[f"{mode}_kernels"] = int(row.kernels)
    if "graph_speedup" in f:
        g["graph_speedup"] = round(f["graph_speedup"], 2)
    for batch in (1, 8):
        if f"kernels_b{batch}" in f:
            g[f"kernels_b{batch}"] = f[f"kernels_b{batch}"]
    if "best_big" in f:
        g["best_gbps"] = round(float(f["best_big"]["gbps"].iloc[0]))
        if "roof_gbps" in f:
            g["best_roof_pct"] = round(100 * float(f["best_big"]["gbps"].iloc[0]) / f["roof_gbps"])
    for key, value in g.items():
        prose.glue(f"dec_{key}", value)
    return g
