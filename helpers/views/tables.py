"""The tables a reader sees: one forward's kernels, ops and per-stage summaries."""
from __future__ import annotations

from typing import Sequence

import pandas as pd

from ..core.bound import LINE, of_call
from ..core.names import decode
from ..core.profile import Profile
from ..core.stages import DEFAULT_SHAPE, STAGES, get_stage
from ..core.article import reference_columns
from .verdicts import Verdict



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
    return pd.DataFrame(rows).set_index("stage")


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
    return frame


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
    """The profiler's GPU time per forward against do_bench's time per call, and the bound that
    `helpers.core.bound` draws from them (the glossary's *bound by the CPU / by the GPU*).
    The profiled CPU time is shown beside them for what it is: the profiler's own overhead
    included, longer than the same call's CPU time unprofiled."""
    rows = []
    for name, prof in profiles.items():
        s = prof.summary()
        b = of_call(s)
        gpu, cpu = float(s["gpu_time_us"]), float(s["cpu_time_us"])
        rows.append({"stage": name, "profiler GPU µs": round(gpu, 1),
                     "do_bench µs": None if b is None else round(b.wall_us, 1),
                     "do_bench / profiler": None if b is None else round(b.wall_us / gpu, 3),
                     "GPU busy % of a call": None if b is None else round(b.busy_pct, 1),
                     "CPU µs (profiled)": round(cpu, 1),
                     "bound": "no independent timing recorded" if b is None else b.words})
    frame = pd.DataFrame(rows).set_index("stage")
    frame.attrs = {"caption": (f"One forward: the last profiled step; do_bench: its median per call, no profiler. "
                               f"Bound by the GPU when do_bench is at most {LINE:.0%} longer than the GPU "
                               f"time, else by the CPU (glossary: bound by the CPU / by the GPU).")}
    return frame
