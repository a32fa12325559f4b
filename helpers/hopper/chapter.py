"""Chapter 7b, what Hopper adds: which kernels issue warpgroup MMAs (wgmma), load with the tensor
memory accelerator (TMA) and reallocate registers between warpgroups (setmaxnreg), handed the
Hopper recording (helpers.hopper.sources.Recording) and, for the ties to chapters 7 and 9, the
roofline's per-kernel points. Every sentence's numbers are glued from here."""
from __future__ import annotations

import pandas as pd
from IPython.display import Markdown

from ..core.names import decode, layout_against_launch
from ..core.ncu_tables import short_version
from ..core.stages import STAGES, get_stage, stages_where
from ..core.wording import names as join_words
from ..views.guess import anchored, choice, number
from ..views.prose import glue
from . import core
from .views import families_chart

# every stage with counters, once (no variant of another stage, no backend picked at run time): 09's
STAGES_SHOWN = stages_where(has_ncu=True, variant_of=None, dispatched=False)
TENSOR_OPTIONS = ("wgmma (HGMMA, a warpgroup's)", "mma.sync (HMMA, one warp's)", "neither: CUDA cores")
TENSOR_WORDS = dict(zip(("wgmma", "mma.sync", "none"), TENSOR_OPTIONS))
LOAD_OPTIONS = ("TMA (UTMALDG)", "cp.async (LDGSTS)", "plain loads")
LOAD_WORDS = dict(zip(("TMA", "cp.async", "plain loads"), LOAD_OPTIONS))
SHOWN_PATH = {"wgmma": "wgmma", "mma.sync": "mma.sync", "none": "neither"}   # the table's words
NEEDS_OPCODES = "This question needs the per-opcode recording this set lacks (the line at the top says so)."
NO_LISTING = "This set has no SASS listing, so the registers setmaxnreg moves are not shown here."


def has_opcodes(table: pd.DataFrame) -> bool:
    """Whether the table holds per-opcode counts (a hopper/ recording), not only the tensor pipes."""
    return not table.empty and "UTMALDG" in table.columns and table["UTMALDG"].notna().any()


def main_kernels(table: pd.DataFrame, stages=STAGES_SHOWN, direction: str = "forward") -> pd.DataFrame:
    """Each stage's longest kernel of one forward (or backward), in the registry's order, with the
    verdicts (tensor path, loads, warp specialised) and a short label from the name decoder."""
    if table.empty:
        return table
    t = table[(table["direction"] == direction) & table["stage"].isin(stages)]
    main = core.main_kernels(t)
    order = {s: i for i, s in enumerate(STAGES)}
    main = main.sort_values("stage", key=lambda s: s.map(order)).reset_index(drop=True)
    main["label"] = [decode(k).summary for k in main["kernel"]]
    main["tensor path"] = [core.tensor_path(r) for r in main.to_dict("records")]
    if has_opcodes(table):
        main["loads"] = [core.load_path(r) for r in main.to_dict("records")]
        main["warp specialised"] = [core.warp_specialised(r) for r in main.to_dict("records")]
    return main


def with_roofline(main: pd.DataFrame, kernel_points: pd.DataFrame | None) -> pd.DataFrame:
    """The main kernels with chapter 9's '% of roof' and 'pipe' of the same kernel (same stage,
    same name), where the roofline has it."""
    out = main.copy()
    out["% of roof"] = float("nan")
    out["pipe"] = None
    if kernel_points is None or kernel_points.empty:
        return out
    for i, r in out.iterrows():
        hit = kernel_points[(kernel_points["stage"] == r["stage"]) & (kernel_points["kernel"] == r["kernel"])]
        if len(hit):
            best = hit.loc[hit["ncu µs"].idxmax()]
            out.at[i, "% of roof"] = best["% of roof"]
            out.at[i, "pipe"] = best["pipe"]
    return out


def _count(v) -> str:
    return "—" if v is None or pd.isna(v) else f"{v:,.0f}"


def families_table(main: pd.DataFrame) -> pd.DataFrame:
    """What a reader reads, one row per stage's main kernel: the decoded kernel, its tensor path
    and loads (the verdicts), the registers at launch and after setmaxnreg, the roofline's % of
    roof, and the wgmma, mma.sync and TMA-load counts."""
    full = has_opcodes(main)
    rows = []
    for r in main.to_dict("records"):
        row = {"stage": r["stage"], "kernel": r["kernel"], "tensor path": SHOWN_PATH[r["tensor path"]]}
        if full:
            row["loads"] = r["loads"]
            row["registers (launch → consumer)"] = (f"{r['registers']} → {r['consumer_registers']:.0f}"
                                                    if pd.notna(r.get("consumer_registers")) else f"{r['registers']}")
        if "% of roof" in r:
            row["% of roof (09)"] = round(r["% of roof"], 1) if pd.notna(r["% of roof"]) else None
        row["HGMMA"] = _count(r.get("HGMMA"))
        row["HMMA"] = _count(r.get("HMMA"))
        if full:
            row["UTMALDG"] = _count(r.get("UTMALDG"))
        rows.append(row)
    out = pd.DataFrame(rows).set_index("stage")
    counted = ("warp instructions executed, per opcode (ncu's sass__inst_executed_per_opcode)" if full else
               "the tensor pipe's counters (HGMMA: the gmma counter; HMMA: the hmma counter less it)")
    out.attrs = {"caption": (f"One forward; each stage's main kernel (the most tensor-core instructions, else the most "
                             f"FFMA, else the longest). Counts: {counted}. tensor path: wgmma "
                             "where it executed any HGMMA, else mma.sync where any HMMA, else neither"
                             + ("; loads: TMA where any UTMALDG, else cp.async where any LDGSTS, else plain "
                                "loads; registers: per thread at launch, and what a consumer warp asks "
                                "for with setmaxnreg (the largest USETMAXREG of its SASS)" if full else "")
                             + "; % of roof: chapter 9's, of the pipe that did the kernel's FLOPs.")}
    return out


def chart(main: pd.DataFrame, gpu: str):
    full = has_opcodes(main)
    return families_chart(main, f"one forward on the {gpu} · " + (
        "warp instructions per opcode (ncu)" if full else "the tensor pipe's counters only") + " · hover for the kernel")


# --- the guesses -----------------------------------------------------------------------------

def _row(main: pd.DataFrame, stage: str):
    rows = main[main["stage"] == stage]
    return rows.iloc[0] if len(rows) else None


def _tensor_path_guess(main: pd.DataFrame, stage: str, absent: str, question: str):
    """The question 'which tensor-core instructions does `stage`'s main kernel issue?', or one line
    saying the set has no such forward (`absent`)."""
    r = _row(main, stage)
    if r is None:
        return Markdown(f"This set has no {absent} forward: the question about it is left out.")
    return choice(f"hopper-{stage.removeprefix('sdpa_')}-path", question, list(TENSOR_OPTIONS),
                  TENSOR_WORDS[r["tensor path"]],
                  explained_by=("hopper-families", "the families table"), source="Nsight Compute")


def guess_flash_path(main: pd.DataFrame):
    return _tensor_path_guess(main, "sdpa_flash", "flash",
                              "FlashAttention-2 (sdpa_flash) runs here on a Hopper GPU. Which tensor-core "
                              "instructions does its kernel issue?")


def guess_wgmma_count(main: pd.DataFrame):
    n = int((main["tensor path"] == "wgmma").sum())
    return number("hopper-wgmma-count",
                  f"Of these {len(main)} stages ({join_words(list(main['stage']))}), how many have a main kernel "
                  "that issues warpgroup MMAs (wgmma)?", n, unit=" stages",
                  explained_by=("hopper-families", "the families table"), source="Nsight Compute")


def guess_math_path(main: pd.DataFrame):
    return _tensor_path_guess(main, "sdpa_math", "math-backend",
                              "SDPA's math backend (sdpa_math): which tensor-core instructions does its main "
                              "kernel issue?")


def guess_cudnn_loads(main: pd.DataFrame, missing: str | None):
    r = _row(main, "sdpa_cudnn")
    if "loads" not in main:
        return Markdown(NEEDS_OPCODES)
    if r is None:
        return Markdown("This set has no cuDNN forward: the question is left out.")
    return choice("hopper-cudnn-loads", "How does cuDNN's kernel bring its tiles of K and V into shared memory?",
                  list(LOAD_OPTIONS), LOAD_WORDS[r["loads"]],
                  explained_by=("hopper-families", "the families table"), source="Nsight Compute")


def guess_flex_path(main: pd.DataFrame):
    return _tensor_path_guess(main, "flex", "FlexAttention",
                              "FlexAttention's kernel is written in Triton, whose `tl.dot` may become either "
                              "instruction. Which does it issue here?")


def guess_consumer_registers(main: pd.DataFrame, missing: str | None):
    r = _row(main, "sdpa_cudnn")
    if r is None or "consumer_registers" not in main or pd.isna(r["consumer_registers"]):
        return Markdown(NEEDS_OPCODES if not has_opcodes(main) else
                        "This recording's cuDNN kernel is missing or holds no setmaxnreg: the question is left out.")
    return number("hopper-consumer-registers",
                  f"cuDNN's kernel launches with {r['registers']} registers per thread, {r['threads']} threads a "
                  "block. How many registers per thread does a warp of its consumer warpgroups hold while it "
                  "computes?", float(r["consumer_registers"]), unit=" registers",
                  explained_by=("hopper-registers", "the register split"), source="the kernel's SASS")


# --- registers: launch against setmaxnreg ------------------------------------------------------------

def register_split(main: pd.DataFrame) -> pd.DataFrame:
    """The warp-specialised main kernels (setmaxnreg in their SASS): the launch's registers per
    thread, what the producer gives back and what a consumer takes, and the block's register
    total both ways (the producer one warpgroup, the others consumers)."""
    rows = []
    for r in main.to_dict("records"):
        # a producer and consumers: setmaxnreg both ways, in a block of two warpgroups or more
        if pd.isna(r.get("consumer_registers")) or pd.isna(r.get("producer_registers")) or (r.get("warpgroups") or 0) < 2:
            continue
        wg, threads = int(r["warpgroups"]), 128
        producer = r["producer_registers"]
        after = producer * threads + r["consumer_registers"] * threads * (wg - 1)
        rows.append({"stage": r["stage"], "warpgroups": wg, "registers at launch": r["registers"],
                     "producer gives back to": int(producer),
                     "consumer takes": int(r["consumer_registers"]),
                     "block's registers at launch": int(r["registers"] * r["threads"]),
                     "block's registers after": int(after)})
    out = pd.DataFrame(rows)
    if not out.empty:
        out = out.set_index("stage")
    out.attrs = {"caption": ("Per thread. setmaxnreg's counts are the kernel's USETMAXREG instructions (its SASS); "
                             "after: one producer warpgroup and the rest consumers, 128 threads each.")}
    return out


def register_table(main: pd.DataFrame):
    """`register_split` as the page shows it, anchored for the registers question's reveal; None
    (nothing shown) where no main kernel reallocates or the set has no SASS listing: the glued
    sentence below it says which."""
    if not has_opcodes(main):
        return None
    split = register_split(main)
    return None if split.empty else anchored(split, "hopper-registers")


def banner(rec) -> Markdown:
    """One line: what the page replays (the per-opcode recording, or the ncu tables standing in),
    the GPU, date, ncu and torch it was recorded with, and what this recording lacks."""
    p = rec.provenance or {}
    what = "per-opcode instruction counts" if p.get("parts") else "tensor-pipe counters"
    when = str(p.get("date", ""))[:10] or "an unrecorded date"
    sm = f"sm {p['capability']}, " if p.get("capability") else ""
    line = (f"Replaying the {what} recorded on {p.get('gpu', rec.gpu)} ({sm}set {rec.gpu}) on {when} with "
            f"{short_version(str(p.get('ncu', '')))} and torch {p.get('torch', 'unknown')}: {rec.source}.")
    if rec.missing:
        line += f" {rec.missing}"
    return Markdown(line)


# --- glue --------------------------------------------------------------------------------------

def glue_hopper(main: pd.DataFrame, rec, prefix: str = "hop") -> dict:
    """Glue what the page says, as `<prefix>_<name>`; every value a number or words that read in
    any recording (a missing stage leaves its sentence to the line that says so)."""
    values: dict = {"gpu": rec.provenance.get("gpu") or rec.gpu, "stages": len(main)}
    by = {p: list(main.loc[main["tensor path"] == p, "stage"]) for p in ("wgmma", "mma.sync", "none")}
    values |= {"wgmma_n": len(by["wgmma"]), "mma_sync_n": len(by["mma.sync"]), "none_n": len(by["none"])}
    values["paths_sentence"] = paths_sentence(by)
    for stage in main["stage"]:
        r = _row(main, stage)
        key = get_stage(stage).short
        values[f"{key}_path"] = _words(r["tensor path"])
        values[f"{key}_registers"] = int(r["registers"])
        values[f"{key}_threads"] = int(r["threads"])
        values[f"{key}_hgmma"] = _count(r.get("HGMMA"))
        values[f"{key}_hmma"] = _count(r.get("HMMA"))
        if "% of roof" in r and pd.notna(r["% of roof"]):
            values[f"{key}_roof_pct"] = f"{r['% of roof']:.0f}"
    cu = _row(main, "sdpa_cudnn")
    if cu is not None:
        check = layout_against_launch(cu["kernel"], int(cu["threads"]))
        if check:
            values |= {"cudnn_layout": check["layout"], "cudnn_layout_product": check["product"],
                       "cudnn_block_warps": check["block_warps"], "cudnn_warpgroups": check["warpgroups"] or "no whole"}
    try:   # the SM's register file, from the book's GPU table (chapter 7's)
        from ..occupancy.gpus import gpu_spec
        per_sm = gpu_spec(str(values["gpu"])).registers_per_sm
    except (KeyError, ValueError, LookupError):
        per_sm = None
    for key, value in sentences(main, register_split(main), per_sm).items():
        values[f"{key}_sentence"] = value
    for key, value in values.items():
        glue(f"{prefix}_{key}", Markdown(value) if key.endswith("sentence") else value)
    return values


def _words(path: str) -> str:
    return {"wgmma": "warpgroup MMAs (wgmma)", "mma.sync": "per-warp `mma.sync`",
            "none": "no tensor-core instruction"}[path]


def sentences(main: pd.DataFrame, split: pd.DataFrame, registers_per_sm: int | None = None) -> dict[str, str]:
    """The page's sentences about particular kernels, each with a form for a recording that lacks
    the kernel or the figure (so none renders empty, 'nan' or a stage compared with itself)."""
    out = {}
    fl, cu = _row(main, "sdpa_flash"), _row(main, "sdpa_cudnn")
    if fl is not None and cu is not None:
        text = (f"FlashAttention-2's kernel issues {_words(fl['tensor path'])}, cuDNN's {_words(cu['tensor path'])}.")
        if pd.notna(fl.get("% of roof", float("nan"))) and pd.notna(cu.get("% of roof", float("nan"))):
            text += (f" On chapter 9's roofline the first reaches {fl['% of roof']:.0f}% of its pipe's roof, "
                     f"the second {cu['% of roof']:.0f}%.")
        out["flash_cudnn"] = text
    else:
        present = [x for x, r in (("sdpa_flash", fl), ("sdpa_cudnn", cu)) if r is not None]
        out["flash_cudnn"] = (f"This recording has {present[0]}'s forward but not the other one's: the two are not compared here."
                              if present else "This recording has neither the flash nor the cuDNN forward: they are not compared here.")
    if not has_opcodes(main):
        out["registers"] = NO_LISTING
    elif split.empty:
        out["registers"] = ("No main kernel of this recording reallocates registers between its warpgroups: "
                            "each warp keeps the registers it was launched with.")
    else:
        parts = []
        # kernels that split their registers alike (cuBLAS's gemm in several stages) in one clause
        keys = ["warpgroups", "registers at launch", "producer gives back to", "consumer takes",
                "block's registers at launch", "block's registers after"]
        for values, rows in split.groupby(keys, sort=False):
            r = dict(zip(keys, values))
            stages = list(rows.index)
            before, after = r["block's registers at launch"], r["block's registers after"]
            same = after == before
            who = (f"{stages[0]}'s kernel launches" if len(stages) == 1 else
                   f"The kernels of {join_words(stages)} each launch")
            parts.append(
                f"{who} {r['warpgroups']} warpgroups with {r['registers at launch']} registers a "
                f"thread, {before:,} for the block; its producer warpgroup then gives "
                f"back to {r['producer gives back to']} and each consumer warpgroup takes {r['consumer takes']}: "
                f"{after:,} in all, "
                + ("the same total, split otherwise." if same else "a different total from the launch's."))
        if registers_per_sm:
            parts.append(f"The SM's register file holds {registers_per_sm:,}.")
        kept = all(split["block's registers after"] == split["block's registers at launch"])
        parts.append("So the registers per thread at launch, the figure chapter 7's calculator divides the register "
                     "file by, are what these warps hold only until setmaxnreg runs; "
                     + ("the block's total, and so its occupancy, stays as launched: what changes is how the "
                        "registers are shared out, and a consumer warp keeps more of its accumulator tile in registers "
                        "than the launch suggests." if kept else
                        "the block's total changes too, so its occupancy is not the launch's."))
        out["registers"] = " ".join(parts)
    out["why"] = why_sentence(fl, cu, has_opcodes(main))
    out["why"] = why_sentence(fl, cu, has_opcodes(main))
    if cu is not None:
        check = layout_against_launch(cu["kernel"], int(cu["threads"]))
        if check and check["one_warpgroup"]:
            out["layout"] = (f"cuDNN's name carries `{check['layout']}`. Its product, {check['product']}, is not the "
                             f"block's warp count: the launch is {check['threads']} threads, {check['block_warps']} "
                             f"warps, {check['warpgroups']} warpgroups. The product is one warpgroup, the four warps a "
                             "wgmma runs on, so the decoder reads the field as one warpgroup's layout over the tile.")
        elif check:
            out["layout"] = (f"cuDNN's name carries `{check['layout']}`, whose product is {check['product']}; the launch "
                             f"is {check['threads']} threads, {check['block_warps']} warps.")
    if "layout" not in out:
        out["layout"] = "This recording's cuDNN kernel name carries no layout field to hold to its launch."
    return out


def why_sentence(fl, cu, full: bool) -> str:
    """Why the two fused kernels stand apart on the roofline, in the form the recording supports:
    FlashAttention-2 on mma.sync (and cp.async, where the loads were counted) against cuDNN on wgmma
    (and TMA); any other outcome is said as it is."""
    if fl is None or cu is None:
        return "Without both fused kernels in this recording, the page does not set them side by side."
    if fl["tensor path"] == "mma.sync" and cu["tensor path"] == "wgmma":
        flash_loads = " each warp loading its tiles with `cp.async` and" if full and fl.get("loads") == "cp.async" else ""
        cudnn_loads = " while the next tile arrives by TMA" if full and cu.get("loads") == "TMA" else ""
        return ("This is why the two fused attention kernels stand apart there. "
                "FlashAttention-2 was written for Ampere: on Hopper it still works warp by warp,"
                f"{flash_loads} waiting on its own `mma.sync`. Hopper runs those instructions, but its tensor cores' "
                "full rate needs wgmma, which keeps a warpgroup's four warps feeding them together"
                f"{cudnn_loads}. cuDNN generates its kernel for the GPU it runs on, and on this GPU that kernel "
                "is written for Hopper.")
    return (f"Here FlashAttention-2's kernel issues {_words(fl['tensor path'])} and cuDNN's "
            f"{_words(cu['tensor path'])}: the tensor-core path alone does not set them apart in this recording.")


def paths_sentence(by: dict[str, list[str]]) -> str:
    """One sentence naming the stages on each tensor path; a path no stage took is left out."""
    parts = []
    if by["wgmma"]:
        parts.append(f"{join_words(by['wgmma'])} issue{'s' if len(by['wgmma']) == 1 else ''} Hopper's warpgroup MMA")
    if by["mma.sync"]:
        parts.append(f"{join_words(by['mma.sync'])} issue{'s' if len(by['mma.sync']) == 1 else ''} Ampere's per-warp "
                     "`mma.sync`")
    if by["none"]:
        parts.append(f"{join_words(by['none'])} use{'s' if len(by['none']) == 1 else ''} no tensor cores in "
                     f"{'its' if len(by['none']) == 1 else 'their'} main kernel")
    return "; ".join(parts) + "."


__all__ = ["STAGES_SHOWN", "register_table", "banner", "NEEDS_OPCODES", "NO_LISTING", "main_kernels", "with_roofline", "families_table", "chart", "register_split",
           "glue_hopper", "guess_flash_path", "guess_wgmma_count", "guess_math_path", "guess_cudnn_loads",
           "guess_flex_path", "guess_consumer_registers", "anchored", "has_opcodes"]
