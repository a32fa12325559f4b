"""Chapter 11's figures recomputed from the raw recordings (ncu's CSV of the backwards, the
calibration matmuls, ceilings.json, the memory ladder, the stage traces' provenance) in plain code
that does not import helpers, then compared with what the chapter's helper computes. Units are
named: GB = bytes / 1e9, µs = ns / 1e3, TFLOP/s = FLOP / s / 1e12, MiB = bytes / 2**20."""
from __future__ import annotations

import numpy as np
import pytest

from . import _raw
from helpers.core.stages import stages_where  # the stage lists: queries of the registry

FUSED = stages_where(fused=True, in_article=True)   # the article's fused backends


@pytest.fixture(scope="module")
def raw():
    cal = _raw.calibration()
    return {"cal": cal, "seg": _raw.backward_segments(), "copy": _raw.copy_tbps()}


@pytest.fixture(scope="module")
def chapter():
    from helpers import training, training_counters
    rec = training_counters()
    work = training.ncu_work(rec)
    limits = training.backward_limits(rec)
    return {"work": work, "limits": limits, "glue": training.glue_work(work, limits), "training": training}


def test_the_roofs_are_the_calibration_matmuls_under_ncu(raw, chapter):
    roof = chapter["work"].attrs["roof"]
    assert roof["matmul TFLOP/s"] == pytest.approx(raw["cal"]["bf16_tflops"], rel=1e-9)
    assert roof["fp32 TFLOP/s"] == pytest.approx(raw["cal"]["fp32_tflops"], rel=1e-9)
    assert chapter["glue"]["tr_ridge"] == round(raw["cal"]["bf16_tflops"] / raw["copy"])
    assert chapter["glue"]["tr_fp32_roof"] == f"{raw['cal']['fp32_tflops']:.1f}"


def test_the_backward_table_columns_are_the_raw_sums_in_their_units(raw, chapter):
    w = chapter["work"].set_index("stage")
    for stage, ks in raw["seg"].items():
        fl = sum(_raw.flops(k, raw["cal"]) for k in ks)
        by = sum(k["dram"] for k in ks)
        ns = sum(k["ns"] for k in ks)
        assert w.loc[stage, "backward kernels (ncu)"] == len(ks)
        assert w.loc[stage, "backward GFLOP (ncu)"] == round(fl / 1e9, 1)
        assert w.loc[stage, "backward GB (ncu)"] == round(by / 1e9, 2)
        assert w.loc[stage, "backward FLOP/byte"] == round(fl / by, 1)
        assert w.loc[stage, "backward ncu µs"] == round(ns / 1e3, 1)


def test_sdpa_math_backward_is_bound_by_the_fp32_pipe(raw, chapter):
    ks = raw["seg"]["sdpa_math"]
    gemms = [k for k in ks if k["ffma"] * raw["cal"]["per_ffma"] > 1e9 and "gemm" in k["name"]]
    tflops = [k["ffma"] * raw["cal"]["per_ffma"] / k["ns"] / 1e3 for k in gemms]
    tbps = [k["dram"] / k["ns"] / 1e3 for k in gemms]
    share = 100 * sum(k["ns"] for k in gemms) / sum(k["ns"] for k in ks)
    g = chapter["glue"]
    assert g["tr_math_gemms"] == len(gemms) == 4
    assert g["tr_math_gemm_tflops_min"] == f"{min(tflops):.0f}" and g["tr_math_gemm_tflops_max"] == f"{max(tflops):.0f}"
    assert g["tr_math_gemm_tbps_min"] == f"{min(tbps):.1f}" and g["tr_math_gemm_tbps_max"] == f"{max(tbps):.1f}"
    # each gemm reaches at least 60% of the fp32 roof: bound by it; they are the fp32-bound time
    assert min(tflops) / raw["cal"]["fp32_tflops"] >= 0.6
    assert g["tr_math_fp32_share"] == f"{share:.0f}"
    # and the chapter's per-kernel table says compute on the fp32 FFMA pipe for exactly those
    lim = chapter["limits"]
    math = lim[lim["stage"] == "sdpa_math"]
    bound = math[(math["bound by"] == "compute")]
    assert len(bound) == 4 and set(bound["pipe"]) == {"fp32 FFMA"}


def test_the_fused_backwards_reach_neither_roof(raw, chapter):
    g = chapter["glue"]
    ridge = raw["cal"]["bf16_tflops"] / raw["copy"]
    left, comp, copy = [], [], []
    for stage in FUSED:
        ks = raw["seg"][stage]
        fl, by, s = (sum(_raw.flops(k, raw["cal"]) for k in ks), sum(k["dram"] for k in ks),
                     sum(k["ns"] for k in ks) / 1e9)
        c, m = 100 * fl / s / 1e12 / raw["cal"]["bf16_tflops"], 100 * by / s / 1e12 / raw["copy"]
        comp.append(c)
        copy.append(m)
        assert g[f"tr_{stage}_bwd_pct_compute"] == f"{c:.0f}" and g[f"tr_{stage}_bwd_pct_copy"] == f"{m:.0f}"
        assert c < 60 and m < 60
        if fl / by <= ridge:
            left.append(stage)
        main = max(ks, key=lambda k: k["tensor"])
        assert g[f"tr_{stage}_bwd_mma"] == ("wgmma" if main["gmma"] > 0 else "mma.sync")
        assert g[f"tr_{stage}_bwd_occ"] == f"{main['occ']:.0f}"
    assert left == ["sdpa_efficient", "sdpa_flash"]
    # the ridge sentence places each left of it ("just" within 10% of the ridge), cuDNN's right of it
    sentence = g["tr_ridge_sentence"]
    assert "sdpa_efficient (" in sentence and "sdpa_flash (" in sentence
    assert sentence.rindex("left of it") > max(sentence.index("sdpa_efficient ("), sentence.index("sdpa_flash ("))
    assert sentence.index("sdpa_cudnn (") < sentence.index("right of it") < sentence.index("sdpa_flash (")
    assert g["tr_fused_pct_compute_min"] == f"{min(comp):.0f}" and g["tr_fused_pct_copy_max"] == f"{max(copy):.0f}"
    assert g["tr_sdpa_flash_bwd_mma"] == "mma.sync" and g["tr_sdpa_cudnn_bwd_mma"] == "wgmma"


# --- memory ------------------------------------------------------------------------------------

def _fits(memory):
    out = {}
    for stage in dict.fromkeys(r["stage"] for r in memory["ladder"] if "seq" in r):
        ok = [r for r in memory["ladder"] if r.get("stage") == stage and r.get("status") == "ok"]
        s = np.array([r["seq"] for r in ok], float)
        bh, d = ok[0]["batch"] * ok[0]["heads"], ok[0]["head_dim"]
        y = np.array([r["peak_bytes"] for r in ok], float)
        a, b = np.linalg.lstsq(np.stack([bh * s**2, bh * s * d], 1), y, rcond=None)[0]
        if a < 0:       # linear alone (a fused stage)
            a, b = 0.0, float((bh * s * d) @ y / ((bh * s * d) @ (bh * s * d)))
        out[stage] = (a, b, bh, d, ok)
    return out


def test_the_memory_wall_counts_q_k_v_and_do():
    memory = _raw.memory()
    total = memory["provenance"]["total_memory_bytes"]
    expected = {}
    for stage, (a, b, bh, d, _) in _fits(memory).items():
        A, B = a * bh, (b + 8) * bh * d            # + q, k, v, dO: 4 bf16 tensors, 8 bytes per element of q
        expected[stage] = (-B + np.sqrt(B * B + 4 * A * total)) / (2 * A) if A > 1e-6 else total / B
    from helpers import training
    g = training.memory_facts(memory)
    for stage in stages_where(has_training=True, fused=True, dispatched=False):
        assert g[f"tr_{stage}_wall_m"] == f"{expected[stage] / 1e6:.2f}"
    past = [s for s in stages_where(has_training=True, fused=True) if expected[s] > 1e6]
    assert past == ["flex"] and g["tr_wall_million"] == "only flex stays past a million tokens"
    assert round(expected["sdpa_flash"] / 1e4) == 76 and round(expected["sdpa_cudnn"] / 1e4) == 91
    table = training.max_seq_table(memory).set_index("stage")
    assert table.loc["sdpa_flash", "model with q, k, v, dO: full at seq"] == round(expected["sdpa_flash"], -1)


def test_what_sets_the_peak_is_not_only_what_is_kept():
    memory = _raw.memory()
    fits = _fits(memory)
    from helpers import training
    g = training.memory_facts(memory)
    assert g["tr_naive_peak_per_score"] == f"{fits['naive'][0]:.0f}" == "8"
    assert g["tr_naive_compiled_peak_per_score"] == f"{fits['naive_compiled'][0]:.0f}" == "4"
    row = next(r for r in memory["ladder"] if r.get("stage") == "naive" and r.get("seq") == 1024)
    kept = row["saved_new_bytes"] / (row["batch"] * row["heads"] * 1024**2)
    assert g["tr_naive_kept_per_score"] == f"{kept:.0f}" == "2"
    lse = 8 * 16 * 1024 * 4
    shares = [100 * lse / r["peak_bytes"] for r in memory["ladder"] if r.get("seq") == 1024 and r.get("status") == "ok"
              and r["stage"] in stages_where(has_training=True, fused=True)]
    assert g["tr_lse_pct_min"] == f"{min(shares):.1f}" and g["tr_lse_pct_max"] == f"{max(shares):.1f}"


def test_the_no_grad_forward_already_needs_the_score_matrix():
    from helpers import profile_stage, training
    forwards = {s: profile_stage(s, mode="replay", quiet=True) for s in ("naive", "sdpa_flash")}
    g = training.memory_facts(_raw.memory(), forwards)
    for stage in forwards:
        p = _raw.trace_provenance(stage)
        assert g[f"tr_{stage}_nograd_mib"] == f"{(p['peak_memory_bytes'] - p['memory_before_bytes']) / 2**20:,.1f}"
    assert g["tr_naive_nograd_mib"] == "528.0" and g["tr_sdpa_flash_nograd_mib"] == "16.5"


def test_growth_is_the_ratio_of_the_recorded_peaks_at_each_doubling():
    """Calls growth() (the chapter's) and recomputes every ratio from the ladder."""
    from helpers.training import core_backward as bw
    memory = _raw.memory()
    g = bw.growth(bw.ladder(memory))
    expected = []
    for stage, (_, _, _, _, ok) in _fits(memory).items():
        ok = sorted(ok, key=lambda r: r["seq"])
        for prev, cur in zip(ok, ok[1:]):
            if cur["seq"] == 2 * prev["seq"]:
                expected.append((stage, cur["seq"], cur["peak_bytes"] / prev["peak_bytes"]))
    got = sorted((r.stage, int(r.seq), float(r.ratio)) for r in g.itertuples())
    expected = sorted(expected)
    assert [(s, q) for s, q, _ in got] == [(s, q) for s, q, _ in expected]
    assert [r for _, _, r in got] == pytest.approx([r for _, _, r in expected], rel=1e-12)
    last = {s: r for s, _, r in expected}
    assert 3.9 < last["naive"] < 4.1 and 1.9 < last["sdpa_flash"] < 2.1


def test_naives_flop_ratio_is_the_tensor_pipes_two_plus_the_softmaxs_ffma(raw, chapter):
    """Item 13: naive's backward/forward ratio under 2 comes from the forward softmax's FFMAs."""
    fwd = _raw.kernels(_raw.H200 / "ncu" / "naive__b8_h16_s1024_d64_bfloat16_causal.csv")
    bwd = raw["seg"]["naive"]
    t = sum(k["tensor"] for k in bwd) / sum(k["tensor"] for k in fwd)
    ff, fb = (sum(k["ffma"] for k in ks) * raw["cal"]["per_ffma"] for ks in (fwd, bwd))
    g = chapter["glue"]
    assert g["tr_naive_tensor_ratio"] == round(t, 2) == 2.0
    assert g["tr_naive_fwd_ffma_gflop"] == round(ff / 1e9, 2) and g["tr_naive_bwd_ffma_gflop"] == round(fb / 1e9, 2)
    total = (sum(_raw.flops(k, raw["cal"]) for k in bwd) / sum(_raw.flops(k, raw["cal"]) for k in fwd))
    assert g["tr_naive_flops_ratio"] == round(total, 2) == 1.88


def test_the_steps_at_the_searchs_cap_took_what_the_ladder_says():
    memory = _raw.memory()
    from helpers import training
    g = training.memory_facts(memory)
    capped = [r["step_seconds"] for r in memory["ladder"] if r.get("stopped") == "cap" and r.get("status") == "ok"]
    assert g["tr_cap_step_min"] == f"{min(capped):.1f}" and g["tr_cap_step_max"] == f"{max(capped):.1f}"
