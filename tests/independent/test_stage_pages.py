"""Chapters 01–06c (and 04d, 08): every glued figure, table column and chart series a stage page
shows, recomputed from the raw trace events (`raw.py`), never from `helpers`' own tables.

Units: `*_us`, `µs` columns are µs (the trace's own `dur`, no conversion); `*_mib` is bytes / 2**20
of the provenance's peak less its before-forward memory; counts are counts."""
import math

import pytest

from helpers import charts, prose, profile_stage, tables
from helpers.chapters import claims

from . import raw
from helpers.core.stages import STAGES as REGISTERED  # the stage lists: queries of the registry

STAGES = list(REGISTERED)   # every registered stage
# each chapter's `profiles` (its notebook's profile_stages call) and its own stage
PAGES = {"01_naive": (["naive"], "naive"), "02_inplace": (["naive", "inplace"], "inplace"),
         "03_sdpa_math": (["naive", "inplace", "sdpa_math"], "sdpa_math"),
         "04_sdpa_efficient": (["naive", "inplace", "sdpa_math", "sdpa_efficient"], "sdpa_efficient"),
         "05_sdpa_flash": (["naive", "inplace", "sdpa_math", "sdpa_efficient", "sdpa_flash"], "sdpa_flash"),
         "06_sdpa_cudnn": (["naive", "inplace", "sdpa_math", "sdpa_efficient", "sdpa_flash", "sdpa_cudnn",
                            "sdpa_auto"], "sdpa_cudnn"),
         "06b_naive_compiled": (["naive", "inplace", "naive_compiled"], "naive_compiled"),
         "06c_flex": (["sdpa_flash", "flex", "flex_sliding"], "flex"),
         "04d_hub_flash": (["hub_flash", "sdpa_efficient", "sdpa_flash", "sdpa_cudnn"], "hub_flash")}


@pytest.fixture(scope="session")
def profs():
    return {s: profile_stage(s, mode="replay", quiet=True) for s in STAGES}


def fwd(stage):
    return raw.forward(raw.stage_path(stage))


def prov(stage):
    return raw.provenance(raw.stage_path(stage))


# --- glued figures ------------------------------------------------------------------------------

@pytest.mark.parametrize("stage", STAGES)
def test_glue_summary_is_the_raw_forward(stage, profs):
    """`<stage>_gpu_events`, `_kernels`, `_memcpys`, `_memsets`, `_aten_ops` (counts), `_gpu_us`
    (Σ dur of the last step's GPU events, µs), `_cpu_us` (attn_fwd's dur, µs), `_do_bench_us`
    (the provenance's, µs), `_forward_mib` ((peak − before) / 2**20)."""
    g, f, p = prose.glue_summary(profs[stage]), fwd(stage), prov(stage)
    assert (g["gpu_events"], g["kernels"], g["memcpys"], g["memsets"]) == \
        (f.count(), f.count("kernel"), f.count("memcpy"), f.count("memset"))
    assert g["aten_ops"] == f.aten_ops
    assert g["gpu_us"] == pytest.approx(f.gpu_us, abs=0.051)
    assert g["cpu_us"] == pytest.approx(f.cpu_us, abs=0.051)
    assert g["do_bench_us"] == pytest.approx(p["do_bench_us"], abs=0.051)
    assert g["gpu"] == p["gpu"] and g["torch"] == p["torch"]
    if p.get("peak_memory_bytes") is not None:
        mib = (p["peak_memory_bytes"] - p["memory_before_bytes"]) / raw.MIB
        assert float(g["forward_mib"].replace(",", "")) == pytest.approx(mib, abs=0.5)


@pytest.mark.parametrize("stage", STAGES)
def test_glue_async_is_the_raw_timeline(stage, profs):
    """01's sentence on asynchronous launch, µs from attn_fwd's start: when the CPU finished, when
    the GPU began and finished, when the previous step's GPU work finished, the first queue wait."""
    g, f = prose.glue_async(profs[stage]), fwd(stage)
    t0 = f.root["ts"]
    assert g["async_cpu_done_us"] == pytest.approx(f.root["dur"], abs=0.051)
    assert g["async_gpu_start_us"] == pytest.approx(min(e["ts"] for e in f.gpu) - t0, abs=0.051)
    assert g["async_gpu_done_us"] == pytest.approx(max(e["ts"] + e["dur"] for e in f.gpu) - t0, abs=0.051)
    earlier = [n for n, _, _ in raw.steps(raw.events(raw.stage_path(stage))) if n < f.step]
    if earlier:
        prev = raw.forward(raw.stage_path(stage), earlier[-1])
        assert g["async_prev_gpu_done_us"] == pytest.approx(max(e["ts"] + e["dur"] for e in prev.gpu) - t0, abs=0.051)
    first = f.gpu[0]
    assert g["async_first_queued_us"] == pytest.approx(first["ts"] - first["call"]["ts"], abs=0.051)
    memsets = [e for e in f.gpu if e["kind_cat"] == "memset"]
    if memsets:
        m = memsets[0]
        assert (g["memset_bytes"], g["memset_op"], g["memset_call"]) == (m["args"]["bytes"], m["op"], m["call"]["name"])
    else:
        assert "memset_bytes" not in g


# --- tables -------------------------------------------------------------------------------------

@pytest.mark.parametrize("stage", STAGES)
def test_kernel_table_every_column(stage, profs):
    """kernel: the raw name; launched by: the call of the same correlation id; aten op: top op
    (→ innermost op where they differ); µs: raw dur (µs); regs/thread, shared mem (B): the
    event's args (B); grid, block: its args; rows in GPU start order."""
    t, f = tables.kernel_table(profs[stage]), fwd(stage)
    assert list(t.index) == list(range(1, len(f.gpu) + 1))
    assert list(t["kernel"]) == [e["name"] for e in f.gpu]
    assert list(t["launched by"]) == [e["call"]["name"] for e in f.gpu]
    assert list(t["aten op"]) == [e["top_op"] if e["top_op"] == e["op"] else f"{e['top_op']} → {e['op']}"
                                  for e in f.gpu]
    assert list(t["µs"]) == pytest.approx([e["dur"] for e in f.gpu], abs=0.051)
    def same(column, key, conv=lambda v: v):
        got = [None if v is None or (isinstance(v, float) and math.isnan(v)) or v is getattr(__import__("pandas"), "NA")
               else conv(v) for v in t[column]]
        want = [conv(e["args"][key]) if key in e["args"] else None for e in f.gpu]
        assert got == want, column
    same("regs/thread", "registers per thread", int)
    same("shared mem (B)", "shared memory", int)
    same("grid", "grid", tuple)
    same("block", "block", tuple)
    kinds = list(t["kind"])
    for e, kind in zip(f.gpu, kinds):  # a memcpy and a memset are their own kinds; a kernel is none of them
        assert (kind in ("memcpy", "memset")) == (e["kind_cat"] != "kernel"), (e["name"], kind)


@pytest.mark.parametrize("page", ["04d_hub_flash"])
def test_summary_table_every_column(page, profs):
    stages, _ = PAGES[page]
    t = tables.summary_table([profs[s] for s in stages])
    assert list(t.index) == stages
    for s in stages:
        f, p, row = fwd(s), prov(s), t.loc[s]
        assert (row["GPU events"], row["kernels"], row["memcpy"], row["memset"], row["aten ops"]) == \
            (f.count(), f.count("kernel"), f.count("memcpy"), f.count("memset"), f.aten_ops)
        assert row["GPU µs"] == pytest.approx(f.gpu_us, abs=0.051)
        assert row["CPU µs"] == pytest.approx(f.cpu_us, abs=0.051)
        assert row["do_bench µs"] == pytest.approx(p["do_bench_us"], abs=0.051)


def test_cpu_time_split(profs):
    """06's table: one column per backend (µs), rows that sum to attn_fwd's raw duration; each CUDA
    runtime or driver call's row is the summed raw duration of the calls of that name made on
    attn_fwd's thread inside it. (The host-op rows split the ops' self time by name, after
    taking those calls out: their sum is checked through the total, not row by row.)"""
    names = ("sdpa_efficient", "sdpa_flash", "sdpa_cudnn")
    t = claims.cpu_time_split({k: profs[k] for k in names})
    assert list(t.columns) == [f"{s} µs" for s in names]
    for s in names:
        f = fwd(s)
        root = f.root
        col = t[f"{s} µs"]
        assert col["total: attn_fwd"] == pytest.approx(root["dur"], abs=0.051)
        assert col.drop("total: attn_fwd").sum() == pytest.approx(root["dur"], abs=0.051)
        calls = {}
        for e in raw.events(raw.stage_path(s)):
            if e.get("ph") == "X" and e.get("cat") in raw.CALL_CATS and e["tid"] == root["tid"] \
                    and root["ts"] <= e["ts"] and e["ts"] + e["dur"] <= root["ts"] + root["dur"] + 1e-3:
                calls[e["name"]] = calls.get(e["name"], 0.0) + e["dur"]
        shown = {i.split(": ", 1)[1]: v for i, v in col.items() if ": " in i and i != "total: attn_fwd" and v}
        assert set(shown) <= set(calls)
        for name, us in calls.items():
            if round(us, 1):
                assert shown.get(name) == pytest.approx(us, abs=0.1), name


def test_op_tree_of_hub_flash(profs):
    """04d's op tree: each op, its depth, µs (raw dur) and self µs, in start order."""
    t = tables.op_tree(profs["hub_flash"])
    ops = raw.nested(fwd("hub_flash"))
    assert [n.lstrip("\u2003") for n in t["op"]] == [o["name"] for o in ops]
    assert list(t["depth"]) == [o["depth"] for o in ops]
    assert list(t["µs"]) == pytest.approx([o["dur"] for o in ops], abs=0.051)
    assert list(t["self µs"]) == pytest.approx([o["self"] for o in ops], abs=0.051)


# --- charts: fig.data against the raw events --------------------------------------------------

@pytest.mark.parametrize("page", PAGES)
def test_gpu_events_per_forward_and_gpu_and_cpu_time(page, profs):
    stages, _ = PAGES[page]
    fig = charts.gpu_events_per_forward([profs[s] for s in stages])
    assert list(fig.data[0].x) == stages
    assert list(fig.data[0].y) == [fwd(s).count() for s in stages]
    fig = charts.gpu_and_cpu_time([profs[s] for s in stages])
    by = {t.name: t for t in fig.data}
    assert list(by["GPU time"].x) == list(by["CPU time"].x) == stages
    assert list(by["GPU time"].y) == pytest.approx([fwd(s).gpu_us for s in stages], abs=1e-3)
    assert list(by["CPU time"].y) == pytest.approx([fwd(s).cpu_us for s in stages], abs=1e-3)
    assert "µs" in fig.layout.yaxis.title.text


@pytest.mark.parametrize("stage", STAGES)
def test_kernel_durations_every_step(stage, profs):
    """One series per profiler step, its bars the step's GPU events in start order, y = raw dur (µs)."""
    fig = charts.kernel_durations(profs[stage])
    evs = raw.events(raw.stage_path(stage))
    shown = {t.name: t for t in fig.data}
    for n, _, _ in raw.steps(evs):
        f = raw.forward(raw.stage_path(stage), n)
        if not f.gpu:
            continue
        bars = shown[f"ProfilerStep#{n}"]
        assert list(bars.y) == pytest.approx([e["dur"] for e in f.gpu], abs=1e-3)
    assert fig.layout.yaxis.title.text == "duration (µs)"


@pytest.mark.parametrize("stage", STAGES)
def test_timeline_bars_sit_where_the_events_are(stage, profs):
    """The timeline's x axis is µs since attn_fwd began: each GPU bar starts at ts − attn_fwd's ts
    and lasts dur; each launch link runs from its call's start to its event's start; each CPU bar
    is one host op of the forward."""
    fig = charts.timeline(profs[stage])
    f = fwd(stage)
    t0 = f.root["ts"]
    by = {t.name: t for t in fig.data}
    gpu = by["GPU events"]
    assert list(gpu.base) == pytest.approx([e["ts"] - t0 for e in f.gpu], abs=1e-3)
    assert list(gpu.x) == pytest.approx([e["dur"] for e in f.gpu], abs=1e-3)
    cpu = by["CPU ops"]
    ops = sorted([f.root] + f.ops, key=lambda o: (o["ts"], -o["dur"]))
    got = [v for pair in sorted(zip(cpu.base, cpu.x)) for v in pair]
    want = [v for pair in sorted((o["ts"] - t0, o["dur"]) for o in ops) for v in pair]
    assert got == pytest.approx(want, abs=1e-3)
    launches = by["runtime / driver calls"]
    calls = sorted((e for e in raw.events(raw.stage_path(stage)) if e.get("ph") == "X" and e.get("cat") in raw.CALL_CATS
                    and f.lo <= e["ts"] <= f.hi and e["args"].get("correlation") in {g["call"]["args"]["correlation"] for g in f.gpu}),
                   key=lambda e: e["ts"])
    assert sorted(launches.base) == pytest.approx(sorted(e["ts"] - t0 for e in calls), abs=1e-3)
    assert sorted(launches.x) == pytest.approx(sorted(e["dur"] for e in calls), abs=1e-3)
    links = by["launch → GPU event"]
    xs = [x for x in links.x if x is not None]
    want = []
    for e in sorted(f.gpu, key=lambda e: e["ts"]):
        want += [e["call"]["ts"] - t0, e["ts"] - t0]
    assert sorted(xs) == pytest.approx(sorted(want), abs=1e-3)
    assert fig.layout.xaxis.title.text.startswith("µs since")
