"""Chapters 06b (naive_compiled) and 06c (flex): every glued figure and table column, recomputed
from the raw trace events and the provenance the recording wrote beside them.

Units: `_us`/`µs` µs (raw `dur`); `_s` seconds and `_ms` milliseconds of the provenance's
`first_call_seconds` / `setup_seconds` (seconds); `(MiB)` bytes / 2**20; ratios are a / b as named."""
import numpy as np
import pandas as pd
import pytest

from helpers import Shape, compiled, flex, profile_stage

from . import raw
from timer_fakes import NO_TIMER_WORDS, later_calls_raw, raw_call  # plain code, no helpers

SHAPE = raw.DEFAULT


@pytest.fixture(scope="module")
def profs():
    return {s: profile_stage(s, mode="replay", quiet=True)
            for s in ("naive", "inplace", "naive_compiled", "sdpa_flash", "flex", "flex_sliding")}


def fwd(stage, shape=SHAPE):
    return raw.forward(raw.stage_path(stage, shape))


def prov(stage, shape=SHAPE):
    return raw.provenance(raw.stage_path(stage, shape))


def is_gemm(e):
    return e["kind_cat"] == "kernel" and e["op"] in ("aten::bmm", "aten::mm")


def between_gemms(f):
    at = [i for i, e in enumerate(f.gpu) if is_gemm(e)]
    return f.gpu[at[0] + 1:at[-1]] if len(at) >= 2 else []


def triton(f):
    """The forward's Triton kernel (Inductor names them triton_…), the longest if several."""
    return max((e for e in f.gpu if e["name"].startswith("triton_")), key=lambda e: e["dur"])


def prod(v):
    out = 1
    for x in v:
        out *= x
    return out


def scores_bytes(shape):
    return shape["batch"] * shape["heads"] * shape["seq"] * shape["seq"] * {"bfloat16": 2, "float16": 2, "float32": 4}[shape["dtype"]]


# --- 06b -----------------------------------------------------------------------------------------

def test_compiled_glue_page(profs):
    g = compiled.glue_page(profs["naive_compiled"], profs["naive"])
    f, n = fwd("naive_compiled"), fwd("naive")
    k = triton(f)
    shape = prov("naive_compiled")["shape"]
    assert g["compiled_fused_name"] == k["name"]
    assert g["compiled_fused_us"] == pytest.approx(k["dur"], abs=0.051)
    assert g["compiled_fused_grid"] == prod(k["args"]["grid"])
    assert g["compiled_fused_threads"] == prod(k["args"]["block"])
    assert g["compiled_rows"] == shape["batch"] * shape["heads"] * shape["seq"]
    assert g["compiled_gemms"] == sum(map(is_gemm, f.gpu))
    assert g["naive_unfused_events"] == len(between_gemms(n))
    assert g["naive_unfused_us"] == pytest.approx(sum(e["dur"] for e in between_gemms(n)), abs=0.051)
    # the fused kernel's name lists the ops it fused after "fused_", up to its index
    ops = k["name"].split("fused_", 1)[1].rsplit("_", 1)[0]
    assert g["compiled_fused_ops"] >= 2 and g["compiled_fused_ops"] <= ops.count("_") + 1
    for stage in ("naive", "naive_compiled"):
        p = prov(stage)
        need = (p["peak_memory_bytes"] - p["memory_before_bytes"]) / scores_bytes(p["shape"])
        assert float(g[f"{stage}_memory_scores"]) == pytest.approx(need, abs=0.006)


def test_compiled_forward_memory_table(profs):
    names = ("naive", "inplace", "naive_compiled")
    t = compiled.forward_memory({s: profs[s] for s in names})
    assert list(t.index) == list(names)
    for s in names:
        p = prov(s)
        assert t.loc[s, "allocated before (MiB)"] == pytest.approx(p["memory_before_bytes"] / raw.MIB, abs=0.051)
        assert t.loc[s, "peak during the forward (MiB)"] == pytest.approx(p["peak_memory_bytes"] / raw.MIB, abs=0.051)
        assert t.loc[s, "the forward needed (MiB)"] == pytest.approx(
            (p["peak_memory_bytes"] - p["memory_before_bytes"]) / raw.MIB, abs=0.051)


def test_compiled_cpu_compare(profs):
    names = ("naive", "inplace", "naive_compiled")
    t = compiled.cpu_compare({s: profs[s] for s in names})
    for s in names:
        f = fwd(s)
        assert t.loc[s, "CPU ops under attn_fwd"] == len(f.ops)
        assert t.loc[s, "aten ops"] == f.aten_ops
        assert t.loc[s, "attn_fwd CPU µs"] == pytest.approx(f.cpu_us, abs=0.051)
        assert t.loc[s, "GPU µs"] == pytest.approx(f.gpu_us, abs=0.051)
        assert t.loc[s, "do_bench µs per call"] == pytest.approx(prov(s)["do_bench_us"], abs=0.051)
        call = raw_call(raw.stage_path(s), f.gpu_us)
        if call is None:
            assert pd.isna(t.loc[s, "loop µs per call"])
        else:
            assert t.loc[s, "loop µs per call"] == pytest.approx(call["wall"], abs=0.051)


def test_compiled_cpu_layers(profs):
    t = compiled.cpu_layers(profs["naive_compiled"])
    ops = raw.nested(fwd("naive_compiled"))
    assert [o.lstrip("\u2003") for o in t["op"]] == [o["name"] for o in ops]
    assert list(t["µs"]) == pytest.approx([o["dur"] for o in ops], abs=0.051)
    assert list(t["self µs"]) == pytest.approx([o["self"] for o in ops], abs=0.051)


def test_compiled_first_call(profs):
    """first call (s): the provenance's seconds; a later call: the caller's loop (median) where both
    have it, else do_bench µs; their ratio s·1e6/µs; the payoff: ⌈(first_c − first_n)·1e6 / (call_n −
    call_c)⌉ calls."""
    c, n = prov("naive_compiled"), prov("naive")
    (later_n, later_c), by = later_calls_raw([raw.stage_path("naive"), raw.stage_path("naive_compiled")])
    n, c = n | {"later": later_n}, c | {"later": later_c}
    g = compiled.glue_first_call(profs["naive_compiled"], profs["naive"])
    assert float(g["compiled_first_call_s"]) == pytest.approx(c["first_call_seconds"], abs=0.006)
    assert float(g["naive_first_call_ms"]) == pytest.approx(n["first_call_seconds"] * 1e3, abs=0.051)
    assert float(g["compiled_first_over_call"].replace(",", "")) == pytest.approx(
        c["first_call_seconds"] * 1e6 / c["later"], abs=0.51)
    saved = n["later"] - c["later"]
    assert saved > 0
    assert int(g["compiled_payoff_calls"].replace(",", "")) == int(np.ceil(
        (c["first_call_seconds"] - n["first_call_seconds"]) * 1e6 / saved))
    t = compiled.first_call(profs["naive_compiled"], profs["naive"])
    assert list(t.index) == ["naive", "naive_compiled"]
    for s, p in (("naive", n), ("naive_compiled", c)):
        assert t.loc[s, "first call (s)"] == pytest.approx(p["first_call_seconds"], abs=0.006)
        assert t.loc[s, "a later call (µs)"] == pytest.approx(p["later"], abs=0.051)
        assert t.loc[s, "timed by"] == by
        assert t.loc[s, "first call / later call"] == pytest.approx(p["first_call_seconds"] * 1e6 / p["later"], abs=0.51)


# --- 06c -----------------------------------------------------------------------------------------

def blocks(seq, block, sliding):
    """(visited, partial, total) blocks of the causal (or causal sliding-window, 256 tokens) mask,
    at `block` × `block`: a block is visited where any (q, kv) in it is kept, partial where some
    but not all are."""
    q = np.arange(seq)[:, None]
    kv = np.arange(seq)[None, :]
    keep = q >= kv
    if sliding:
        keep &= (q - kv) < 256
    n = seq // block
    per = keep.reshape(n, block, n, block).sum(axis=(1, 3))
    visited = int((per > 0).sum())
    partial = int(((per > 0) & (per < block * block)).sum())
    return visited, partial, n * n


def test_flex_glue_page(profs):
    g = flex.glue_page(profs["flex"], profs["sdpa_flash"], profs["flex_sliding"])
    f, fl, sl = fwd("flex"), fwd("sdpa_flash"), fwd("flex_sliding")
    k, p = triton(f), prov("flex")
    assert g["flex_kernel_name"] == k["name"]
    assert g["flex_kernel_us"] == pytest.approx(k["dur"], abs=0.051)
    assert g["flex_grid"] == str(tuple(k["args"]["grid"]))
    assert g["flex_threads"] == prod(k["args"]["block"])
    assert g["flex_registers"] == k["args"]["registers per thread"]
    assert g["flex_smem"] == k["args"]["shared memory"]
    assert float(g["flex_over_flash_gpu"]) == pytest.approx(f.gpu_us / fl.gpu_us, abs=0.006)
    call = raw_call(raw.stage_path("flex"), f.gpu_us)
    if call is None:
        assert g["flex_gap_us"] == g["flex_busy_pct"] == "not recorded"
        assert g["flex_gap"].startswith("This recording has no caller's timer")
    else:
        assert g["flex_gap_us"] == pytest.approx(call["wall"] - call["busy"], abs=0.051)
        assert g["flex_busy_pct"] == pytest.approx(min(100, 100 * call["busy"] / call["wall"]), abs=0.051)
        assert f"({call['verdict']})" in g["flex_gap"]
    seq = p["shape"]["seq"]
    block = seq // k["args"]["grid"][0]  # one program per query block: grid x
    assert (g["flex_block_q"], g["flex_query_blocks"]) == (block, k["args"]["grid"][0])
    visited, partial, total = blocks(seq, block, False)
    assert (g["flex_visited"], g["flex_partial"], g["flex_blocks"]) == (visited, partial, total)
    sv, sp, _ = blocks(seq, block, True)
    assert (g["sliding_visited"], g["sliding_partial"]) == (sv, sp)
    assert float(g["sliding_visited_ratio"]) == pytest.approx(sv / visited, abs=0.006)
    assert float(g["sliding_time_ratio"]) == pytest.approx(sl.gpu_us / f.gpu_us, abs=0.006)
    assert g["sliding_gpu_us"] == pytest.approx(sl.gpu_us, abs=0.051)
    assert float(g["flex_setup_ms"]) == pytest.approx(p["setup_seconds"] * 1e3, abs=0.051)
    assert float(g["flex_first_call_s"]) == pytest.approx(p["first_call_seconds"], abs=0.006)
    (later, _), _by = later_calls_raw([raw.stage_path("flex"), raw.stage_path("sdpa_flash")])
    assert float(g["flex_first_over_call"].replace(",", "")) == pytest.approx(
        p["first_call_seconds"] * 1e6 / later, abs=0.51)
    assert float(g["sliding_first_call_s"]) == pytest.approx(prov("flex_sliding")["first_call_seconds"], abs=0.006)


def test_flex_block_table():
    t = flex.block_table(["flex", "flex_sliding"])
    for stage, sliding in (("flex", False), ("flex_sliding", True)):
        visited, partial, total = blocks(1024, 128, sliding)
        row = t.loc[stage]
        assert (row["partial blocks"], row["full blocks"], row["skipped blocks"]) == (partial, visited - partial, total - visited)
        assert row["visited %"] == pytest.approx(100 * visited / total, abs=0.051)


def test_flex_call_gap(profs):
    names = ("sdpa_flash", "flex", "flex_sliding")
    t = flex.call_gap({s: profs[s] for s in names})
    for s in names:
        f, p = fwd(s), prov(s)
        row = t.loc[s]
        assert row["GPU µs per forward (profiler)"] == pytest.approx(f.gpu_us, abs=0.051)
        assert row["do_bench µs (cold call)"] == pytest.approx(p["do_bench_us"], abs=0.051)
        assert row["attn_fwd CPU µs (profiled)"] == pytest.approx(f.cpu_us, abs=0.051)
        call = raw_call(raw.stage_path(s), f.gpu_us)
        if call is None:
            assert row["bound"] == NO_TIMER_WORDS and pd.isna(row["gap µs"]) and pd.isna(row["loop µs per call"])
            continue
        assert row["loop µs per call"] == pytest.approx(call["wall"], abs=0.051)
        assert row["gap µs"] == pytest.approx(call["wall"] - call["busy"], abs=0.051)
        assert row["GPU busy %"] == pytest.approx(min(100, 100 * call["busy"] / call["wall"]), abs=0.051)
        assert row["bound"] == call["verdict"]


SEQS = (512, 1024, 2048, 4096)
SWEPT = ("sdpa_flash", "flex", "flex_sliding")


@pytest.fixture(scope="module")
def sweep(profs):
    from helpers import Session
    runs = Session(mode="replay").grid(flex.GAP_STAGES, flex.gap_shapes(), known=profs)
    return flex.gap_sweep(runs), runs


def shape_of(seq):
    return f"b8_h16_s{seq}_d64_bfloat16_causal"


def test_flex_gap_sweep_rows_glue_and_chart(sweep):
    table, runs = sweep
    want = {}
    for seq in SEQS:
        for s in SWEPT:
            f, p = fwd(s, shape_of(seq)), prov(s, shape_of(seq))
            want[(s, seq)] = (f.gpu_us, p["do_bench_us"], p.get("setup_seconds"),
                              raw_call(raw.stage_path(s, shape_of(seq)), f.gpu_us))
    assert sorted(zip(table["stage"], table["seq"])) == sorted(want)
    for _, row in table.iterrows():
        gpu, bench, setup, call = want[(row["stage"], row["seq"])]
        assert row["GPU µs"] == pytest.approx(gpu, abs=0.051)
        assert row["do_bench µs"] == pytest.approx(bench, abs=0.051)
        if call is None:
            assert pd.isna(row["loop / busy"]) and row["bound"] == NO_TIMER_WORDS
        else:
            assert row["loop µs"] == pytest.approx(call["wall"], abs=0.051)
            assert row["loop / busy"] == pytest.approx(call["wall"] / call["busy"], abs=0.006)
            assert row["bound"] == call["verdict"]
        if row["stage"] == "sdpa_flash":
            assert pd.isna(row["blocks visited"]) and pd.isna(row["mask set-up ms"])
        else:
            assert row["blocks visited"] == blocks(row["seq"], 128, row["stage"] == "flex_sliding")[0]
            assert row["mask set-up ms"] == pytest.approx(setup * 1e3, abs=0.051)
    shown = flex.sweep_table(table)  # the same rows, by seq
    assert list(shown.index.get_level_values("seq")) == sorted(shown.index.get_level_values("seq"))
    for (seq, stage), row in shown.iterrows():
        assert row["GPU µs"] == pytest.approx(want[(stage, seq)][0], abs=0.051)
    g = flex.glue_sweep(table)
    for s in SWEPT:
        calls = [want[(s, q)][3] for q in SEQS]
        assert (g[s]["seq_lo"], g[s]["seq_hi"]) == (SEQS[0], SEQS[-1])
        assert g[s]["gpu_lo"] == pytest.approx(want[(s, SEQS[0])][0], abs=0.051)
        assert g[s]["gpu_hi"] == pytest.approx(want[(s, SEQS[-1])][0], abs=0.051)
        assert g[s]["bench_lo"] == pytest.approx(want[(s, SEQS[0])][1], abs=0.051)
        assert g[s]["bench_hi"] == pytest.approx(want[(s, SEQS[-1])][1], abs=0.051)
        if all(c is None for c in calls):
            assert g[s]["ratio_lo"] == g[s]["ratio_hi"] == "not measured"
            assert g[s]["closes_at"] == "not judged: no caller's timer recorded"
            assert g[s]["summary"].startswith("this recording has no caller's timer")
        else:
            assert float(g[s]["ratio_lo"]) == pytest.approx(calls[0]["wall"] / calls[0]["busy"], abs=0.006)
            assert float(g[s]["ratio_hi"]) == pytest.approx(calls[-1]["wall"] / calls[-1]["busy"], abs=0.006)
            timed = [(q, c) for q, c in zip(SEQS, calls) if c is not None]
            close = [c["verdict"] == "bound by the GPU" for _, c in timed]
            at = next((q for i, (q, _) in enumerate(timed) if all(close[i:])), None)
            assert g[s]["closes_at"] == (f"from seq {at} on" if at else "at no seq of the sweep")
        if s != "sdpa_flash":
            setups = [want[(s, q)][2] * 1e3 for q in SEQS]
            assert float(g[s]["setup_min"]) == pytest.approx(min(setups), abs=0.051)
            assert float(g[s]["setup_max"]) == pytest.approx(max(setups), abs=0.051)
    fig = flex.gap_chart(table)
    for trace in fig.data:
        stage, what = trace.name.rsplit(": ", 1) if ": " in trace.name else (trace.name, "")
        if stage not in SWEPT:
            continue
        assert list(trace.x) == list(SEQS)
        timed = all(want[(stage, q)][3] is not None for q in SEQS)
        dotted = [want[(stage, q)][3]["wall"] if timed else want[(stage, q)][1] for q in SEQS]
        assert list(trace.y) == pytest.approx([want[(stage, q)][0] for q in SEQS] if what == "GPU" else dotted,
                                              abs=0.051), trace.name
    # the widest gap: the seq where a loop's flex call over its busy time is largest (the smallest
    # seq without the caller's timer), and its CPU lane
    flex_calls = {q: want[("flex", q)][3] for q in SEQS if want[("flex", q)][3] is not None}
    wide = max(flex_calls, key=lambda q: flex_calls[q]["wall"] / flex_calls[q]["busy"]) if flex_calls else SEQS[0]
    assert flex.widest_gap(table) == wide
    gw = flex.glue_widest(runs[("flex", Shape.from_key(shape_of(wide)))])
    f = fwd("flex", shape_of(wide))
    assert gw["wide_seq"] == wide
    assert gw["wide_gpu_us"] == pytest.approx(f.gpu_us, abs=0.051)
    assert gw["wide_bench_us"] == pytest.approx(prov("flex", shape_of(wide))["do_bench_us"], abs=0.051)
    if wide in flex_calls:
        assert gw["wide_loop_us"] == pytest.approx(flex_calls[wide]["wall"], abs=0.051)
        assert gw["wide_call"].endswith(flex_calls[wide]["verdict"])
    else:
        assert gw["wide_loop_us"] == "not recorded" and "no caller's timer" in gw["wide_call"]
    assert gw["wide_cpu_us"] == pytest.approx(f.cpu_us, abs=0.051)
    assert gw["wide_guards_us"] == pytest.approx(
        sum(o["dur"] for o in f.ops if o["name"] == "TorchDynamo Cache Lookup"), abs=0.051)


def block_grid(seq, block, sliding):
    """[query block][key block]: 0 skipped, 1 partial, 2 full (every (q, kv) of the block kept)."""
    q = np.arange(seq)[:, None]
    kv = np.arange(seq)[None, :]
    keep = q >= kv
    if sliding:
        keep &= (q - kv) < 256
    n = seq // block
    per = keep.reshape(n, block, n, block).sum(axis=(1, 3))
    return np.where(per == 0, 0, np.where(per == block * block, 2, 1))


def test_block_mask_chart_is_the_mask():
    fig = flex.block_mask_chart(["flex", "flex_sliding"])
    maps = [t for t in fig.data if t.type == "heatmap"]  # the scatters are the legend's swatches
    assert len(maps) == 2
    for trace, sliding in zip(maps, (False, True)):
        assert np.array_equal(np.asarray(trace.z), block_grid(1024, 128, sliding))


def test_timeline_of_an_own_model_step():
    """Chapter 10's timeline of the encoder's forward: each GPU bar at its raw start since the
    step's first op, lasting its raw dur."""
    from helpers import Session, charts
    name = "encoder_forward"
    f = raw.forward(raw.TRACES / "own_model" / f"{name}.json.gz", None, name)
    fig = charts.timeline(Session(mode="replay").own_model(name))
    gpu = next(t for t in fig.data if t.name == "GPU events")
    assert list(gpu.base) == pytest.approx([e["ts"] - f.root["ts"] for e in f.gpu], abs=1e-3)
    assert list(gpu.x) == pytest.approx([e["dur"] for e in f.gpu], abs=1e-3)
