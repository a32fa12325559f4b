"""The tables a reader sees: one forward's kernels, ops and per-stage summaries."""
from __future__ import annotations

import re
from typing import Mapping, Sequence

import pandas as pd

from ..core.measured_on import as_profiles, caption_note, marks, measured_column
from ..core.bound import BUSY_TIMERS, BUSY_TRACE, LINE, NO_TIMER, of_call, words
from ..core.names import decode
from ..core.profile import Profile
from ..core.stages import DEFAULT_SHAPE, STAGES, get_stage
from ..core.article import reference_columns
from .verdicts import Verdict

MEASURED_ON = "measured on"   # the column a table of stages from two GPUs gains (measured_on.measured_column)


def mark_gpus(frame: pd.DataFrame, profiles: Mapping[str, Profile | None] | Sequence[Profile]) -> pd.DataFrame:
    """`frame` with its stages of another GPU marked, where its stages come from two GPUs (live, a
    stage this GPU cannot run is another GPU's recording); unchanged on one GPU. A table of one row
    per stage (indexed by stage, or with a "stage" column) gains a first "measured on" column; a
    table of one column per stage ("sdpa_flash µs", "kernel in naive") has each such column's label
    end in its mark. The caption says which ran where. Every table that sets stages side by side
    goes through here, so a figure of another GPU always says so."""
    given = as_profiles(profiles)
    column = measured_column(given)
    if column is None:
        return frame
    out = frame.copy()
    stages = [str(s) for s in (out["stage"] if "stage" in out.columns else out.index)]
    if any(s in column for s in stages):
        out.insert(0, MEASURED_ON, [column.get(s, "") for s in stages])
    else:
        marked = marks(given)
        out = out.rename(columns=lambda c: next((f"{c} ({m})" for name, m in marked.items()
                                                 if re.search(rf"(?<!\w){re.escape(name)}(?!\w)", str(c))), c))
    out.attrs = dict(frame.attrs)
    note = caption_note(given)
    out.attrs["caption"] = f"{frame.attrs['caption']} {note}" if frame.attrs.get("caption") else note
    return out


def kernel_table(prof: Profile, step: int | None = None, occupancy: bool = False) -> pd.DataFrame:
    """One forward's GPU events in launch order (#): the kernel, what launched it and the aten op
    first (where a reader looks to tell who made a Memcpy), then its time and launch arguments;
    CUPTI's occupancy estimate only with `occupancy=True` (chapter 7 teaches it)."""
    k = prof.kernels(step)
    k.index = pd.RangeIndex(1, len(k) + 1, name="#")
    table = pd.DataFrame({
        "kernel": k["name"],
        "launched by": k["launched_by"],
        "aten op": k["top_aten_op"].where(k["top_aten_op"] == k["aten_op"], k["top_aten_op"] + " → " + k["aten_op"]),
        "kind": k["kind"],
        "reads as": k["summary"],
        "µs": k["dur_us"].round(1),
        "regs/thread": k["registers_per_thread"],
        "shared mem (B)": k["shared_memory_bytes"],
        "grid": k["grid"],
        "block": k["block"],
        "CUPTI occ. %": k["est_occupancy_pct"],
    })
    if not occupancy:
        table = table.drop(columns=["CUPTI occ. %"])
    table.attrs = {"caption": "One forward: the last profiled step."}
    # each row an id, the table too: a guess's reveal links a mismatch to its row (views/guess.py)
    table.attrs["table_id"] = f"{prof.stage}-kernels"
    table.attrs["row_ids"] = [f"{prof.stage}-kernel-{i}" for i in table.index]
    return table


def op_tree(prof: Profile, step: int | None = None, min_us: float = 0.0) -> pd.DataFrame:
    """The aten ops inside attn_fwd, indented by depth, with total and self time."""
    ops = prof.cpu_ops(step)
    ops = ops[ops["dur_us"] >= min_us]
    return pd.DataFrame({
        "op": ["\u2003" * d + n for d, n in zip(ops["depth"], ops["name"])],
        "depth": ops["depth"], "µs": ops["dur_us"].round(1), "self µs": ops["self_us"].round(1),
    }).reset_index(drop=True)


def summary_table(profiles: Sequence[Profile]) -> pd.DataFrame:
    """Per-forward figures of each stage: counts, GPU time, CPU time, the independent timer."""
    rows = []
    for prof in profiles:
        s = prof.summary()
        rows.append({"stage": prof.stage, "GPU events": s["gpu_events"], "kernels": s["kernels"],
                     "memcpy": s["memcpys"], "memset": s["memsets"],
                     "GPU µs": round(s["gpu_time_us"], 1), "CPU µs": round(s["cpu_time_us"], 1),
                     "do_bench µs": None if s["do_bench_us"] is None else round(s["do_bench_us"], 1),
                     "aten ops": s["aten_ops"]})
    return mark_gpus(pd.DataFrame(rows).set_index("stage"), profiles)


def stage_lesson(stage: str, revealed: dict[str, list[Verdict]]) -> Verdict | None:
    """The verdict behind a stage's lesson: the claim its registry entry names (`lesson_claim`),
    looked up in its own verdicts, then in every stage's (sdpa_auto's is judged on cuDNN's page)."""
    claim = get_stage(stage).lesson_claim
    if not claim:
        return None
    own = list(revealed.get(stage, []))
    others = [v for name, vs in revealed.items() if name != stage for v in vs]
    return next((v for v in own + others if v.claim.startswith(claim)), None)


def at_a_glance(profiles: dict, revealed: dict[str, list[Verdict]]) -> pd.DataFrame:
    """The article's closing table rebuilt from these runs: one row per stage, its numbers, the
    lesson its chapter is about (from the stage registry) and the verdict that the trace gives on
    it, every verdict behind it; the article's A100 figures beside them, in labelled columns."""
    rows = []
    for name, prof in profiles.items():
        s = prof.summary()
        verdicts = list(revealed.get(name, []))
        taught = stage_lesson(name, revealed)
        rows.append({"stage": name, "GPU events": s["gpu_events"], "GPU µs": round(s["gpu_time_us"], 1),
                     "CPU µs (profiled)": round(s["cpu_time_us"], 1),
                     "the chapter's lesson": get_stage(name).lesson or "—",
                     "verdict from the trace": (f"{taught.verdict}: {taught.evidence}" if taught
                                        else "no claim of the article to check"),
                     "every verdict": verdicts})
    frame = pd.DataFrame(rows).set_index("stage").join(reference_columns(profiles))
    where = sorted({f"{p.mode} on {p.provenance.gpu} (torch {p.provenance.torch})" for p in profiles.values()})
    # the renderer opens the trace's verdict onto every verdict
    frame.attrs = {"expand": {"verdict from the trace": "every verdict"},
                   "caption": f"Measured: {'; '.join(where)}. GPU and CPU time of one forward (the last "
                              f"profiled step); the CPU time includes the profiler's own overhead."}
    return mark_gpus(frame, profiles)


def decoded_fields(prof: Profile, step: int | None = None) -> pd.DataFrame:
    """Every field the decoder reads from the forward's kernel names, one row per field."""
    rows = []
    for name in prof.gpu_events(step).query("category == 'kernel'")["name"]:
        k = decode(name)
        # the name itself first, whole: every field below is read from it
        fields = {"name": name, "kind": k.kind, "library": k.library, "op": k.op, "dtype": k.dtype, "math": k.math,
                  "arch": k.arch, "tile": k.tile, **k.details}
        for f, v in fields.items():
            if v in (None, "", [], {}):
                continue
            # a nested field (a CUTLASS kernel's template arguments) one row per entry, never a Python repr
            items = v.items() if isinstance(v, dict) else [("", v)]
            rows += [{"kernel": k.summary, "field": f"{f}: {key}" if key else f,
                      "value": ", ".join(map(str, x)) if isinstance(x, (list, tuple)) else str(x)} for key, x in items]
    return pd.DataFrame(rows).set_index(["kernel", "field"])


def timer_agreement(profiles: dict) -> pd.DataFrame:
    """The caller's timer against the GPU's busy time, and the bound `helpers.core.bound` draws
    from them (the glossary's *bound by the CPU / by the GPU*, *about even*): a loop's time per
    call (median of its repeats, and their min–max) over the GPU's busy time per call (measured
    beside the loop where the recording has it, else the profiler's GPU time of one forward).
    do_bench's cold-call time and the profiled CPU time are shown beside them and decide nothing:
    do_bench flushes L2 before each call and hides the launch work; the profiler's CPU time holds
    its own overhead. A recording without the caller's timer gets no verdict."""
    rows = []
    for name, prof in profiles.items():
        s = prof.summary()
        b = of_call(s)
        gpu, cpu, bench = float(s["gpu_time_us"]), float(s["cpu_time_us"]), s["do_bench_us"]
        rows.append({"stage": name, "profiler GPU µs": round(gpu, 1),
                     "GPU busy µs (beside the loop)": None if b is None or b.busy_from != BUSY_TIMERS
                     else round(b.busy_us, 1),
                     "loop µs per call": None if b is None else round(b.wall_us, 1),
                     "loop spread µs": "—" if b is None else f"{b.spread[0]:,.1f}–{b.spread[1]:,.1f}",
                     "loop / busy": None if b is None else round(b.wall_us / b.busy_us, 3),
                     "GPU busy % of a call": None if b is None else round(b.busy_pct, 1),
                     "do_bench µs": None if bench is None else round(float(bench), 1),
                     "CPU µs (profiled)": round(cpu, 1),
                     "bound": words(b)})
    frame = pd.DataFrame(rows).set_index("stage")
    untimed = [n for n, r in zip(frame.index, rows) if r["loop µs per call"] is None]
    caption = (f"One forward: the last profiled step. The caller's loop: back-to-back calls between two CUDA "
               f"events, no profiler, no flush; its median per call over "
               f"its repeats, and their min–max. Bound by the GPU when the loop is at most {LINE:.0%} longer than the "
               f"GPU's busy time per call ({BUSY_TIMERS} where recorded, else {BUSY_TRACE}), else by the CPU; "
               f"about even when that line falls inside the loop's min–max (glossary: bound by the CPU / by the GPU). "
               f"do_bench: one call at a time after a 256 MB L2 flush, its launch hidden; shown, it decides nothing.")
    if untimed and len(untimed) == len(rows):
        caption += f" {NO_TIMER[0].upper() + NO_TIMER[1:]}."
    elif untimed:   # the stages it names only where some others were timed
        caption += (f" No verdict for {', '.join(untimed)}: the caller's timer did not time "
                    f"{'it' if len(untimed) == 1 else 'them'}; do_bench's figure decides nothing.")
    frame.attrs = {"caption": caption}
    return mark_gpus(frame, profiles)
