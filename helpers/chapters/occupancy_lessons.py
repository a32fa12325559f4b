"""The logic of "7. Occupancy math": every number the page shows is worked out here, from the
stage traces and helpers.occupancy, never typed in. The notebook only calls these functions.

* ``STAGES``: the stages whose profiles the page is handed (a Session's ``load_stages(STAGES)``:
  live on a GPU, else the replay set, with a fallback to the recording for a stage this GPU
  cannot run);
* ``arithmetic``: the occupancy arithmetic of one kernel, step by step, checked against
  ``occupancy()``;
* ``granularity``: why 40 registers a thread gives 48 warps and not 51;
* ``low_occupancy``: what the flash kernel does with its few warps, and how fast it is;
* ``cupti_zero`` and ``smem_cliff``: why CUPTI's ``est. achieved occupancy %`` reads 0 for the
  cuDNN and nvjet kernels (the 48 KiB default cap Kineto applies, not the launch path);
* ``ask`` / ``verdict``: the guess-first form of each question.
"""
from __future__ import annotations

import math

import pandas as pd

from ..core.bound import ABOUT_THE_SAME, SLOWER, speed_words
from ..views.tables import mark_gpus
from ..views.prose import glue
from ..core.profile import Profile
from ..core import quantities as q
from ..core.stages import ARTICLE_STAGES, PINNED_BACKENDS, stages_where  # noqa: F401
from ..occupancy.calculator import UNLIMITED, Occupancy, kineto_estimated_occupancy_pct, occupancy
from ..occupancy.charts import limiter_label, spec_of
from ..occupancy.drawing import draw_result
from ..occupancy.drawing import to_html as sm_html
from ..occupancy.gpus import KiB, GPUSpec, gpu_spec
from ..counters.chapter import Counters


# the stages whose kernels this page reads, in the book's order
STAGES = stages_where(variant_of=None)   # every stage but the variants (flex_sliding, hub_flash)
# the article's reading of its cuDNN kernel on an A100, the only figures on this page that do not
# come from a trace of ours; shown only as "the article's A100"
ARTICLE_A100 = {"gpu": "A100", "registers": 240, "threads": 256}


def _plural(n, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _and(items) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _glue_all(prefix: str, values: dict) -> dict:
    """Glue each value as ``<prefix>_<key>``, as plain Python (myst-nb reads its text/plain)."""
    clean = {}
    for key, value in values.items():
        if hasattr(value, "item"):   # a numpy scalar would read "np.int64(5)" in the prose
            value = value.item()
        clean[key] = value
        glue(f"{prefix}_{key}", value)
    return clean


# ------------------------------------------------------------------------------------ loading

def main_kernel(prof: Profile) -> pd.Series:
    """The stage's longest kernel of one forward (for sdpa_flash and sdpa_cudnn: the attention
    kernel itself)."""
    k = prof.kernels()
    k = k[k["category"] == "kernel"]
    return k.loc[k["dur_us"].idxmax()]


def configured_smem(prof: Profile, k: pd.Series, counters: Counters | None) -> int | None:
    """The per-SM shared memory the driver configured for this kernel's launch, as Nsight Compute
    recorded it (``launch__shared_mem_config_size``): from `counters` read on the trace's GPU at
    its shape, the kernel matched on block size, registers and grid; None where not recorded."""
    if counters is None or counters.gpu != prof.provenance.gpu:
        return None
    if (prof.stage, prof.shape.key) not in counters.kernels:
        return None
    rows = counters.stage(prof.stage, prof.shape)
    same = rows[(rows["threads"] == int(k["threads_per_block"]))
                & (rows["registers"] == int(k["registers_per_thread"]))
                & (rows["grid_blocks"] == int(k["grid_blocks"]))]
    sizes = {int(round(v)) for v in same["shared_memory_config"]}
    return sizes.pop() if len(sizes) == 1 else None


def config(prof: Profile, kernel: pd.Series | None = None, counters: Counters | None = None) -> dict:
    """The launch values of one traced kernel, and the GPU they ran on; with `counters` (a
    Session's ``counters(STAGES)``), the shared memory the driver configured for it."""
    k = main_kernel(prof) if kernel is None else kernel
    spec = spec_of(prof)
    return {"spec": spec, "name": k["name"], "threads": int(k["threads_per_block"]),
            "registers": int(k["registers_per_thread"]), "smem": int(k["shared_memory_bytes"]),
            "grid_blocks": int(k["grid_blocks"]), "block": k["block"], "grid": k["grid"],
            "cupti_pct": None if pd.isna(k["est_occupancy_pct"]) else int(k["est_occupancy_pct"]),
            "launched_by": k["launched_by"], "dur_us": float(k["dur_us"]),
            "sm_count": int(prof.provenance.sm_count), "summary": k["summary"],
            "smem_config": configured_smem(prof, k, counters)}


def result_of(prof: Profile, counters: Counters | None = None, **kwargs) -> Occupancy:
    c = config(prof, counters=counters)
    return occupancy(c["spec"], c["threads"], c["registers"], c["smem"],
                     shared_memory_config=c["smem_config"], **kwargs)


# --------------------------------------------------------------------------------- arithmetic

def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def steps(spec: GPUSpec, threads: int, registers: int, smem: int,
          smem_config: int | None = None) -> dict:
    """The calculator's arithmetic spelled out, each step a number; checked against occupancy().
    `smem_config`: the shared memory the driver configured per SM (ncu), else the model's."""
    wpb = -(-threads // spec.warp_size)
    regs_warp_raw = registers * spec.warp_size
    regs_warp = _round_up(regs_warp_raw, spec.register_allocation_unit)
    per_sub = spec.registers_per_sm // spec.sm_subpartitions
    warps_per_sub = per_sub // regs_warp if regs_warp else None
    warps_by_regs = None if warps_per_sub is None else warps_per_sub * spec.sm_subpartitions
    smem_alloc = _round_up(smem + spec.reserved_shared_memory_per_block,
                           spec.shared_memory_allocation_unit)
    r = occupancy(spec, threads, registers, smem, shared_memory_config=smem_config)
    blocks_by = {k: (None if v == UNLIMITED else v) for k, v in r.block_limits.items()}
    others = min(v for k, v in r.block_limits.items() if k != "shared_memory")
    out = {
        "gpu": spec.name, "threads": threads, "registers": registers, "smem": smem,
        "warp_size": spec.warp_size, "warps_per_block": wpb,
        "regs_per_warp_raw": regs_warp_raw, "alloc_unit": spec.register_allocation_unit,
        "regs_per_warp": regs_warp, "regs_per_sm": spec.registers_per_sm,
        "subpartitions": spec.sm_subpartitions, "regs_per_subpartition": per_sub,
        "warps_per_subpartition": warps_per_sub, "warps_by_registers": warps_by_regs,
        "blocks_by_registers": blocks_by["registers"], "max_warps": spec.max_warps_per_sm,
        "blocks_by_warps": blocks_by["warps"], "reserve": spec.reserved_shared_memory_per_block,
        "smem_alloc_unit": spec.shared_memory_allocation_unit, "smem_per_block_alloc": smem_alloc,
        "smem_per_sm": r.shared_memory_per_sm, "blocks_by_smem": blocks_by["shared_memory"],
        "smem_source": r.shared_memory_source, "smem_largest": spec.shared_memory_per_sm,
        "blocks_by_others": others,
        "blocks_by_largest": (spec.shared_memory_per_sm // smem_alloc) if smem_alloc else None,
        "block_slots": spec.max_blocks_per_sm, "active_blocks": r.active_blocks,
        "active_warps": r.active_warps, "occupancy_pct": r.occupancy_pct,
        "limiter": limiter_label(r), "limiters": set(r.limiters),
        "regs_in_use": r.active_blocks * r.registers_per_block,
        "regs_in_use_pct": 100 * r.utilization["registers"],
        "smem_in_use_pct": 100 * r.utilization["shared_memory"]}
    # the spelled-out steps must land where the calculator lands
    if warps_by_regs is not None and blocks_by["registers"] not in (0, None):
        assert warps_by_regs // wpb == blocks_by["registers"], (out, r)
    assert smem_alloc == r.shared_memory_allocated_per_block, (out, r)
    assert r.active_warps == r.active_blocks * wpb
    return out


def pool_words(s: dict) -> str:
    """Where the SM's shared memory for this kernel comes from, in words (the arithmetic column)."""
    if s["smem_source"] == "configured":
        return "what the driver configured for this launch (ncu's launch__shared_mem_config_size)"
    return (f"the smallest size the SM supports holding the {_plural(s['blocks_by_others'], 'block')} "
            f"the other limits allow (the driver's pick, modelled: no ncu record of this launch)")


def arithmetic(prof: Profile, counters: Counters | None = None) -> pd.DataFrame:
    """The occupancy of the stage's main kernel, worked out one line at a time; the shared memory
    per SM is what the driver configured where `counters` recorded it."""
    c = config(prof, counters=counters)
    s = steps(c["spec"], c["threads"], c["registers"], c["smem"], c["smem_config"])
    rows = [
        ("threads per block (the trace's block " + " × ".join(map(str, c["block"])) + ")",
         "", s["threads"]),
        ("warps per block", f"⌈{s['threads']} / {s['warp_size']}⌉", s["warps_per_block"]),
        ("registers per thread (the trace)", "", s["registers"]),
        ("registers per warp", f"{s['registers']} × {s['warp_size']} = {s['regs_per_warp_raw']:,}, "
         f"rounded up to a multiple of {s['alloc_unit']}", s["regs_per_warp"]),
        ("registers per sub-partition", f"{s['regs_per_sm']:,} / {s['subpartitions']}",
         s["regs_per_subpartition"]),
        ("warps per sub-partition", f"⌊{s['regs_per_subpartition']:,} / {s['regs_per_warp']:,}⌋",
         s["warps_per_subpartition"]),
        ("warps the register file holds", f"{s['warps_per_subpartition']} × {s['subpartitions']}",
         s["warps_by_registers"]),
        ("→ blocks the registers allow", f"⌊{s['warps_by_registers']} / {s['warps_per_block']}⌋",
         s["blocks_by_registers"]),
        ("→ blocks the warp slots allow", f"⌊{s['max_warps']} / {s['warps_per_block']}⌋",
         s["blocks_by_warps"]),
        ("shared memory per block (the trace)", "", s["smem"]),
        ("shared memory a block is given", f"{s['smem']:,} + {s['reserve']:,} reserved, rounded up "
         f"to {s['smem_alloc_unit']}", s["smem_per_block_alloc"]),
        ("shared memory the SM is set up with for it", pool_words(s), s["smem_per_sm"]),
        ("→ blocks the shared memory allows", f"⌊{s['smem_per_sm']:,} / "
         f"{s['smem_per_block_alloc']:,}⌋", s["blocks_by_smem"]),
        ("→ blocks the block slots allow", "", s["block_slots"]),
        ("active blocks", "the smallest of the four", s["active_blocks"]),
        ("active warps", f"{s['active_blocks']} × {s['warps_per_block']}", s["active_warps"]),
        ("occupancy", f"{s['active_warps']} / {s['max_warps']} warps",
         f"{s['occupancy_pct']:.1f}%"),
        ("limited by", "", s["limiter"]),
    ]
    return pd.DataFrame(rows, columns=["step", "arithmetic", c["spec"].name]).set_index("step")


def decides(s: dict) -> str:
    """Which limit decides, as a clause: "the registers decide", "the registers and the shared
    memory tie", from the limiter set of the steps."""
    names = {"warps": "the warp slots", "registers": "the registers",
             "shared_memory": "the shared memory", "blocks": "the block slots"}
    r = s["limiters"]
    words = [names[k] for k in ("warps", "registers", "shared_memory", "blocks") if k in r]
    return f"{words[0]} decide" if len(words) == 1 else f"{_and(words)} tie"


def smem_clause(s: dict) -> str:
    """The shared memory the SM is set up with for the kernel, against the SM's largest, in words
    (the clause after "the driver picks how much shared memory to set the SM up with:")."""
    source = ("the configured size recorded for this launch" if s["smem_source"] == "configured"
              else "modelled as the smallest size holding the blocks the other limits allow: no "
                   "recorded configuration of this launch")
    fits = ("no limit" if s["blocks_by_smem"] is None
            else f"room for {_plural(s['blocks_by_smem'], 'block')} of {s['smem_per_block_alloc']:,} B")
    if s["smem_per_sm"] >= s["smem_largest"]:
        return f"the SM's largest, {s['smem_per_sm']:,} B ({source}), {fits}"
    largest = ("" if s["blocks_by_largest"] is None
               else f", where the largest would hold {_plural(s['blocks_by_largest'], 'block')}")
    return (f"{s['smem_per_sm']:,} B ({source}), not the SM's largest {s['smem_largest']:,} B: "
            f"{fits}{largest}")


def glue_kernel(prefix: str, prof: Profile, counters: Counters | None = None) -> dict:
    """Glue one stage kernel's figures as ``<prefix>_<name>`` for the prose; with `counters`, the
    shared memory per SM is what the driver configured for the launch (ncu)."""
    c = config(prof, counters=counters)
    s = steps(c["spec"], c["threads"], c["registers"], c["smem"], c["smem_config"])
    shape = prof.shape
    tflops = q.model_tflops(shape, c["dur_us"])   # the ledger's model TFLOP/s
    values = {
        "gpu": c["spec"].name, "threads": s["threads"], "registers": s["registers"],
        "smem": f"{s['smem']:,}", "smem_kib": f"{s['smem'] / KiB:g}",
        "warps_per_block": s["warps_per_block"], "regs_per_warp": f"{s['regs_per_warp']:,}",
        "warps_per_sub": s["warps_per_subpartition"], "warps_by_regs": s["warps_by_registers"],
        "blocks_by_regs": s["blocks_by_registers"], "blocks_by_smem": s["blocks_by_smem"],
        "blocks_by_regs_text": _plural(s["blocks_by_registers"], "block"),
        "blocks_by_smem_text": "no limit" if s["blocks_by_smem"] is None
        else _plural(s["blocks_by_smem"], "block"),
        "blocks_by_warps": s["blocks_by_warps"], "active_blocks": s["active_blocks"],
        "active_warps": s["active_warps"], "max_warps": s["max_warps"],
        "occupancy_pct": f"{s['occupancy_pct']:.1f}", "limiter": s["limiter"],
        "regs_in_use": f"{s['regs_in_use']:,}", "regs_in_use_pct": f"{s['regs_in_use_pct']:.0f}",
        "smem_in_use_pct": f"{s['smem_in_use_pct']:.0f}", "cupti_pct": c["cupti_pct"],
        "launched_by": c["launched_by"], "dur_us": f"{c['dur_us']:.1f}",
        "tflops": f"{tflops:.0f}", "regs_per_sm": f"{s['regs_per_sm']:,}",
        "regs_per_sub": f"{s['regs_per_subpartition']:,}", "subpartitions": s["subpartitions"],
        "alloc_unit": s["alloc_unit"], "reserve": f"{s['reserve']:,}",
        "smem_per_sm": f"{s['smem_per_sm']:,}", "block_slots": s["block_slots"],
        "smem_largest": f"{s['smem_largest']:,}", "decides": decides(s),
        "smem_pool_source": "the configured size recorded for this launch"
        if s["smem_source"] == "configured" else "modelled: no recorded configuration of this launch",
        "smem_clause": smem_clause(s),
        "blocks_by_largest_text": "no limit" if s["blocks_by_largest"] is None
        else _plural(s["blocks_by_largest"], "block"),
    }
    return _glue_all(prefix, values)


def article_a100() -> pd.DataFrame:
    """The article's A100 reading of its cuDNN kernel, worked out the same way: a reference, not
    a trace of ours (the article gives registers and threads; shared memory cannot lower one
    block, so it is left at 0)."""
    a = ARTICLE_A100
    s = steps(gpu_spec(a["gpu"]), a["threads"], a["registers"], 0)
    rows = [("registers per warp", f"{a['registers']} × 32 → {s['regs_per_warp']:,}"),
            ("warps per sub-partition", f"⌊{s['regs_per_subpartition']:,} / {s['regs_per_warp']:,}⌋"
             f" = {s['warps_per_subpartition']}"),
            ("warps the register file holds", s["warps_by_registers"]),
            ("warps per block", s["warps_per_block"]),
            ("active blocks", s["active_blocks"]),
            ("occupancy", f"{s['active_warps']} / {s['max_warps']} warps = "
             f"{s['occupancy_pct']:.1f}%")]
    label = f"the article's A100 ({a['registers']} registers × {a['threads']} threads)"
    return pd.DataFrame(rows, columns=[label, "value"]).set_index(label)


def glue_article() -> dict:
    """The article's A100 figures, glued for the one labelled reference that uses them."""
    a = ARTICLE_A100
    s = steps(gpu_spec(a["gpu"]), a["threads"], a["registers"], 0)
    return _glue_all("article", {"gpu": a["gpu"], "registers": a["registers"],
                                 "threads": a["threads"], "warps": s["active_warps"],
                                 "max_warps": s["max_warps"],
                                 "occupancy_pct": f"{s['occupancy_pct']:.1f}"})


def impact_args(prof: Profile) -> dict:
    """The main kernel's values, as ``occupancy_charts.impact_curves`` takes them."""
    c = config(prof)
    return {"gpu": c["spec"], "threads": c["threads"], "registers": c["registers"],
            "shared_memory": c["smem"]}


# -------------------------------------------------------------------------------- granularity

GRANULARITY_REGISTERS = (32, 40, 64, 100, 128, 168, 255)


def granularity(gpu, registers=GRANULARITY_REGISTERS, threads: int = 128) -> pd.DataFrame:
    """Warps per SM from the register file, three ways: dividing, rounding each warp's registers
    to the allocation unit, and counting per sub-partition (what the hardware does)."""
    spec = gpu_spec(gpu)
    rows = []
    for r in registers:
        raw = r * spec.warp_size
        rounded = _round_up(raw, spec.register_allocation_unit)
        per_sub = spec.registers_per_sm // spec.sm_subpartitions
        res = occupancy(spec, threads, r, 0)
        rows.append({
            "registers per thread": r,
            "registers per warp": raw,
            f"rounded to {spec.register_allocation_unit}": rounded,
            "naive: file / warp": f"{spec.registers_per_sm / raw:.1f}",
            "warps: ⌊file / warp⌋": spec.registers_per_sm // raw,
            "⌊file / rounded warp⌋": spec.registers_per_sm // rounded,
            f"{spec.sm_subpartitions} × ⌊sub-partition / rounded warp⌋":
                spec.sm_subpartitions * (per_sub // rounded),
            f"calculator ({threads}-thread blocks)": res.active_warps,
        })
    return pd.DataFrame(rows).set_index("registers per thread")


def glue_granularity(gpu, registers: int = 40, threads: int = 128) -> dict:
    spec = gpu_spec(gpu)
    raw = registers * spec.warp_size
    rounded = _round_up(raw, spec.register_allocation_unit)
    per_sub = spec.registers_per_sm // spec.sm_subpartitions
    values = {"regs": registers, "raw": f"{raw:,}", "rounded": f"{rounded:,}",
              "exact": f"{spec.registers_per_sm / raw:.1f}", "naive": spec.registers_per_sm // raw,
              "per_sub": per_sub // rounded, "per_sub_regs": f"{per_sub:,}",
              "left_over": f"{per_sub - (per_sub // rounded) * rounded:,}",
              "warps": spec.sm_subpartitions * (per_sub // rounded),
              "calc": occupancy(spec, threads, registers, 0).active_warps,
              "subpartitions": spec.sm_subpartitions, "gpu": spec.name,
              "unit": spec.register_allocation_unit, "warp_size": spec.warp_size}
    assert values["calc"] == min(values["warps"], spec.max_warps_per_sm)
    return _glue_all("gran", values)


# ------------------------------------------------------------------------------ low occupancy

LOW_OPTIONS = ["naive (high occupancy)", "sdpa_flash (low occupancy)"]

def low_occupancy(profiles: dict[str, Profile], stages=stages_where(ncu_swept=True)) -> pd.DataFrame:
    """Per stage (by default the stages whose counters cover the sweep, one per kernel family): GPU time of one forward, model TFLOP/s (the ledger's), and the theoretical occupancy,
    register-file and shared-memory use of its longest kernel."""
    rows = []
    for stage in stages:
        if stage not in profiles:
            continue
        prof = profiles[stage]
        c = config(prof)
        s = steps(c["spec"], c["threads"], c["registers"], c["smem"])
        gpu_us = float(prof.summary()["gpu_time_us"])
        rows.append({
            # the count the time beside it sums: every GPU event (kernels, memcpy, memset)
            "stage": stage, "GPU events": int(prof.summary()["gpu_events"]),
            "GPU µs per forward": round(gpu_us, 1),
            "model TFLOP/s": round(q.model_tflops(prof.shape, gpu_us), 1),
            "longest kernel": c["summary"], "its occupancy %": round(s["occupancy_pct"], 1),
            "its warps per SM": s["active_warps"], "register file in use %":
                round(s["regs_in_use_pct"], 1), "shared memory in use %":
                round(s["smem_in_use_pct"], 1), "regs/thread": s["registers"]})
    return mark_gpus(pd.DataFrame(rows).set_index("stage"), {r["stage"]: profiles[r["stage"]] for r in rows})


def _low_comparison(naive_us: float, flash_us: float) -> str:
    """Naive's forward against flash's, in the book's one speed definition (`bound.speed_words`:
    within 10% is about the same): "11.0× as long", "about as long as sdpa_flash's (within 10%)",
    "2.5× faster than sdpa_flash"."""
    said = speed_words(naive_us, flash_us)
    if said == ABOUT_THE_SAME:
        return f"about as long as sdpa_flash's ({said.removeprefix('about the same ')})"
    return f"{naive_us / flash_us:.1f}× as long" if said == SLOWER else f"{flash_us / naive_us:.1f}× faster than sdpa_flash"


def glue_low_occupancy(profiles: dict[str, Profile]) -> dict:
    flash, naive = profiles["sdpa_flash"], profiles["naive"]
    fl = float(flash.summary()["gpu_time_us"])
    nv = float(naive.summary()["gpu_time_us"])
    naive_occ = [steps(spec_of(naive), int(k.threads_per_block), int(k.registers_per_thread),
                       int(k.shared_memory_bytes))["occupancy_pct"]
                 for k in naive.kernels().itertuples() if k.category == "kernel"]
    values = {"flash_gpu_us": f"{fl:.1f}", "naive_gpu_us": f"{nv:.1f}",
              "speedup": f"{nv / fl:.1f}", "naive_max_occ": f"{max(naive_occ):.0f}",
              "naive_kernels": len(naive_occ), "naive_gpu_events": int(naive.summary()["gpu_events"]),
              "faster": LOW_OPTIONS[1] if fl < nv else LOW_OPTIONS[0],
              "comparison": _low_comparison(nv, fl)}
    # a tie (within the one 10% of speed_words): either answer of the guess is right
    tied = list(LOW_OPTIONS) if speed_words(nv, fl) == ABOUT_THE_SAME else [values["faster"]]
    return {**_glue_all("low", values), "faster_tied": tied}


# ------------------------------------------------------------------------------- CUPTI's zero

def zero_options(spec: GPUSpec) -> list[str]:
    """The answers offered for "why does CUPTI report 0%?"."""
    return ["they are launched with cuLaunchKernelEx",
            f"their blocks ask for more than {spec.shared_memory_per_block_default // KiB} KiB "
            "of shared memory", "their grids are smaller than the GPU"]


def _launch_path(call) -> str:
    return "cuLaunchKernelEx path" if isinstance(call, str) and "Ex" in call else "cuLaunchKernel path"


def cupti_zero(profiles: dict[str, Profile]) -> pd.DataFrame:
    """Every kernel of the stage traces: launch call, shared memory, CUPTI's figure, Kineto's
    formula recomputed (no opt-in), the same with the opt-in, and the true occupancy."""
    rows, seen = [], set()
    for stage, prof in profiles.items():
        spec = spec_of(prof)
        cap = spec.shared_memory_per_block_default
        k = prof.kernels()
        for r in k[k["category"] == "kernel"].itertuples():
            key = (r.name, r.registers_per_thread, r.threads_per_block, r.shared_memory_bytes,
                   r.grid_blocks, r.launched_by)
            if key in seen:
                continue
            seen.add(key)
            threads, regs = int(r.threads_per_block), int(r.registers_per_thread)
            smem, grid = int(r.shared_memory_bytes), int(r.grid_blocks)
            sms = int(prof.provenance.sm_count)
            kineto = kineto_estimated_occupancy_pct(spec, threads, regs, smem, grid, sms)
            default = occupancy(spec, threads, regs, smem, shared_memory_limit="default")
            true = occupancy(spec, threads, regs, smem)
            per_sm = grid / sms
            opted = int(0.5 + min(true.active_blocks, per_sm) * threads / spec.max_threads_per_sm * 100)
            if r.est_occupancy_pct == 0 and default.active_blocks == 0:
                why = f"block above the {cap // KiB} KiB default cap: Kineto's calculator fits 0"
            elif r.est_occupancy_pct == 0:
                why = f"grid of {grid} blocks on {sms} SMs: {per_sm:.3f} blocks per SM"
            else:
                why = ""
            rows.append({
                "stage": stage, "kernel": r.summary, "launched by": r.launched_by,
                "launch path": _launch_path(r.launched_by), "shared mem (B)": smem,
                f"> {cap // KiB} KiB": smem > cap, "grid blocks": grid,
                "CUPTI est. %": None if pd.isna(r.est_occupancy_pct) else int(r.est_occupancy_pct),
                "Kineto recomputed %": kineto, "same, with the opt-in %": opted,
                "true occupancy %": round(true.occupancy_pct, 1),
                "true warps/SM": f"{true.active_warps} of {true.max_warps}", "why 0": why})
    return pd.DataFrame(rows)


def cupti_zero_crosstab(table: pd.DataFrame) -> pd.DataFrame:
    """Launch path x shared memory above the default cap: kernels, and how many read 0."""
    cap_col = next(c for c in table.columns if c.startswith("> "))
    rows = []
    for (path, above), g in table.groupby(["launch path", cap_col]):
        zero_smem = int(((g["CUPTI est. %"] == 0) & (g["why 0"].str.startswith("block above"))).sum())
        zero_grid = int(((g["CUPTI est. %"] == 0) & (g["why 0"].str.startswith("grid"))).sum())
        rows.append({"launch path": path, f"block asks {cap_col}": "yes" if above else "no",
                     "kernels": len(g), "CUPTI reads 0": int((g["CUPTI est. %"] == 0).sum()),
                     "of which: a tiny grid": zero_grid, "of which: the smem cap": zero_smem,
                     "stages": ", ".join(dict.fromkeys(g["stage"]))})
    return pd.DataFrame(rows).set_index(["launch path", f"block asks {cap_col}"])


def glue_cupti_zero(table: pd.DataFrame, spec: GPUSpec) -> dict:
    cap_col = next(c for c in table.columns if c.startswith("> "))
    above, below = table[table[cap_col]], table[~table[cap_col]]
    ex_below = below[below["launch path"] == "cuLaunchKernelEx path"]
    plain_above = above[above["launch path"] == "cuLaunchKernel path"]
    zeros = table[table["CUPTI est. %"] == 0]
    # which answer the traces support: every 0 is a block over the cap or a tiny grid, and no
    # small-smem launch through the Ex path reads 0 -> the cap; every 0 on the Ex path and every
    # Ex launch 0 -> the launch path
    by_cap = zeros["why 0"].str.startswith("block above") | zeros["why 0"].str.startswith("grid")
    ex_all = table[table["launch path"] == "cuLaunchKernelEx path"]
    cap_explains = bool(by_cap.all()) and int((ex_below["CUPTI est. %"] == 0).sum()) == 0
    ex_explains = (bool((zeros["launch path"] == "cuLaunchKernelEx path").all())
                   and bool((ex_all["CUPTI est. %"] == 0).all()))
    options = zero_options(spec)
    cause = options[1] if cap_explains and not ex_explains else (
        options[0] if ex_explains and not cap_explains else "not one of these alone")
    values = {
        "cause": cause, "kernels": len(table), "above": len(above), "above_zero": int((above["CUPTI est. %"] == 0).sum()),
        "below": len(below), "below_nonzero": int((below["CUPTI est. %"] > 0).sum()),
        "below_zero_grid": int((below["CUPTI est. %"] == 0).sum()),
        "ex_below": len(ex_below), "ex_below_nonzero": int((ex_below["CUPTI est. %"] > 0).sum()),
        "plain_above": len(plain_above),
        "plain_above_zero": int((plain_above["CUPTI est. %"] == 0).sum()),
        "recomputed_match": int((table["CUPTI est. %"] == table["Kineto recomputed %"]).sum()),
        "cap": f"{spec.shared_memory_per_block_default:,}",
        "cap_kib": spec.shared_memory_per_block_default // KiB,
        "reserve_kib": spec.reserved_shared_memory_per_block // KiB,
        "optin": f"{spec.shared_memory_per_block_optin:,}",
        "plain_above_sentence": _plain_above_sentence(plain_above),
        "ex_below_sentence": _ex_below_sentence(ex_below),
    }
    return _glue_all("zero", values)


def _plain_above_sentence(plain_above: pd.DataFrame) -> str:
    """The kernels over the cap launched without *Ex*, in a sentence with a form for none."""
    if plain_above.empty:
        return "No kernel over the cap went through a call without Ex in its name in these traces."
    n, zero = len(plain_above), int((plain_above["CUPTI est. %"] == 0).sum())
    read = (("it still read zero" if zero else "it did not read zero") if n == 1
            else f"{zero} of the {n} still read zero")
    return (f"{n} of those kernels ({_and(list(dict.fromkeys(plain_above['stage'])))}) went through "
            f"{_and(list(dict.fromkeys(plain_above['launched by'])))}, a call with no Ex in its name, "
            f"and {read}.")


def _ex_below_sentence(ex_below: pd.DataFrame) -> str:
    """The kernels under the cap launched through an *Ex* call, and what CUPTI read for them, in a
    sentence with a form for none and one that never says "not zero" of a zero."""
    if ex_below.empty:
        return "No kernel under the cap went through a call with Ex in its name in these traces."
    n = len(ex_below)
    pcts = sorted(set(int(v) for v in ex_below["CUPTI est. %"].dropna()))
    nonzero = int((ex_below["CUPTI est. %"] > 0).sum())
    read = _and([f"{v}%" for v in pcts])
    tail = ", not zero" if nonzero == n else f": {nonzero} of the {n} read above zero"
    return (f"Conversely, {n} {'kernel' if n == 1 else 'kernels'} went through "
            f"{_and(list(dict.fromkeys(ex_below['launched by'])))} with less shared memory "
            f"({_and(list(dict.fromkeys(ex_below['stage'])))}), and {'it' if n == 1 else 'they'} read {read}{tail}.")


def true_vs_cupti(table: pd.DataFrame) -> pd.DataFrame:
    """The true occupancy beside CUPTI's, for the kernels CUPTI reads as 0 or as another number."""
    cols = ["stage", "kernel", "launched by", "shared mem (B)", "CUPTI est. %",
            "true occupancy %", "true warps/SM", "why 0"]
    return table[cols].set_index(["stage", "kernel"])


# --------------------------------------------------------------------- the shared-memory cliff

def smem_cliff(events: list[dict], provenance: dict) -> pd.DataFrame:
    """One row per launch of the experiment: the range, the launch call, the kernel's values,
    CUPTI's figure (every repeat), Kineto's recomputed and the true occupancy."""
    from ..smem_cliff.occupancy import summarize_smem_cliff
    calls = {(e.get("args") or {}).get("correlation"): e["name"] for e in events
             if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver")}
    rows = summarize_smem_cliff(events, provenance["capability"], provenance["sm_count"])
    # summarize_smem_cliff keeps the trace's order; pair each row with its kernel event (by
    # name, duration and shared memory, in order) to find the call that launched it
    by_order: dict[tuple, list] = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "kernel":
            args = e.get("args") or {}
            by_order.setdefault((e.get("name"), e.get("dur"), args.get("shared memory")),
                                []).append(calls.get(args.get("correlation")))
    table = []
    for r in rows:
        launch = by_order[(r["kernel"], r["dur_us"], r["shared_memory"])].pop(0)
        table.append({"range": r["range"], "launched by": launch,
                      "shared mem (B)": r["shared_memory"], "registers": r["registers"],
                      "threads": math.prod(r["block"]), "grid blocks": math.prod(r["grid"]),
                      "CUPTI est. %": r["est_occupancy_pct"],
                      "Kineto recomputed %": r["kineto_recomputed_pct"],
                      "true occupancy %": round(r["theoretical_optin_pct"], 1)})
    df = pd.DataFrame(table)
    grouped = df.groupby(["range", "launched by", "shared mem (B)", "registers", "threads",
                          "grid blocks"], sort=False).agg(
        launches=("CUPTI est. %", "size"),
        **{"CUPTI est. %": ("CUPTI est. %", lambda s: ", ".join(map(str, sorted(set(s))))),
           "Kineto recomputed %": ("Kineto recomputed %",
                                   lambda s: ", ".join(map(str, sorted(set(s))))),
           "true occupancy %": ("true occupancy %", "first")})
    return grouped.reset_index().set_index("range")


def glue_smem_cliff(table: pd.DataFrame) -> dict:
    at, over = table.iloc[0], table.iloc[1]
    ex = table[table["launched by"].fillna("").str.contains("Ex")]
    values = {"at_smem": f"{int(at['shared mem (B)']):,}", "at_pct": at["CUPTI est. %"],
              "over_smem": f"{int(over['shared mem (B)']):,}", "over_pct": over["CUPTI est. %"],
              "at_true": f"{at['true occupancy %']:.1f}", "over_true": f"{over['true occupancy %']:.1f}",
              "at_call": at["launched by"], "over_call": over["launched by"],
              "ex_call": ex["launched by"].iloc[0] if len(ex) else "not run here",
              "ex_smem": f"{int(ex['shared mem (B)'].iloc[0]):,}" if len(ex) else "not run here",
              "ex_pct": ex["CUPTI est. %"].iloc[0] if len(ex) else "not run here",
              # the sentence 07 reads, with its form for a recording without the Ex launch
              "ex_sentence": (f"The small-shared-memory launch through {ex['launched by'].iloc[0]} reads "
                              f"{ex['CUPTI est. %'].iloc[0]}%." if len(ex) else
                              "The small-shared-memory launch through cuLaunchKernelEx did not run here, so "
                              "this recording cannot set it beside the others."),
              "threads": int(at["threads"]), "grid": int(at["grid blocks"])}
    cliff = str(at["CUPTI est. %"]) != "0" and str(over["CUPTI est. %"]) == "0"
    ex_reads = None if not len(ex) else str(ex["CUPTI est. %"].iloc[0]) != "0"
    if cliff and ex_reads:
        values["conclusion"] = ("The launch path is not the cause; the shared-memory opt-in "
                                "that Kineto leaves out is.")
    elif cliff and ex_reads is None:
        values["conclusion"] = ("The shared-memory opt-in that Kineto leaves out is the cause; "
                                "the cuLaunchKernelEx control could not run here.")
    else:
        values["conclusion"] = ("On this GPU the experiment does not show that cliff: read the "
                                "table above for what it does show.")
    return _glue_all("cliff", values)


# ------------------------------------------------------------------------------- the SM drawn

def draw_kernel_sm(prof: Profile, what: str, counters: Counters | None = None):
    """The SM of the trace's GPU holding the resident blocks of the stage's main kernel: vector
    panels (SVG) under a caption in words (``sm_figure`` gives the matplotlib Figure). The
    shared memory is what the driver configured for the launch where `counters` recorded it."""
    c = config(prof, counters=counters)
    r = occupancy(c["spec"], c["threads"], c["registers"], c["smem"],
                  shared_memory_config=c["smem_config"])
    return sm_html(r, title=f"{what} on one SM of {c['spec'].name}: {c['threads']} threads × "
                            f"{c['registers']} registers, {c['smem']:,} B shared memory a block "
                            f"(from the trace)")


def sm_figure(prof: Profile, what: str, counters: Counters | None = None):
    c = config(prof, counters=counters)
    r = occupancy(c["spec"], c["threads"], c["registers"], c["smem"],
                  shared_memory_config=c["smem_config"])
    return draw_result(r, title=f"{what} on one SM of {c['spec'].name}: {c['threads']} threads × "
                                f"{c['registers']} registers, {c['smem']:,} B shared memory a block "
                                f"(from the trace)")
