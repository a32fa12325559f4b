"""Chapter 9's figures recomputed from the raw recordings (ncu's CSV pages, the calibration
matmuls, ceilings.json, the traces' copies) in plain code that does not import helpers, then
compared with what the roofline helper computes for the page. Units: GFLOP = FLOP / 1e9,
DRAM MB = bytes / 1e6, ncu µs = ns / 1e3, TFLOP/s = FLOP / s / 1e12."""
from __future__ import annotations

import pytest

from . import _raw
from helpers.core.stages import stages_where  # the stage lists: queries of the registry

STAGES = list(stages_where(has_ncu=True, variant_of=None, dispatched=False))   # 09's stages
KEY = "b8_h16_s1024_d64_bfloat16_causal"
MODEL = 4 * 8 * 16 * 1024**2 * 64 / 2      # 4·B·H·S²·D, halved for the causal mask


@pytest.fixture(scope="module")
def raw():
    return {"cal": _raw.calibration(), "copy": _raw.copy_tbps(),
            "k": {s: _raw.kernels(_raw.H200 / "ncu" / f"{s}__{KEY}.csv") for s in STAGES}}


@pytest.fixture(scope="module")
def page():
    from helpers import Session, counters, roofline
    s = Session(mode="replay")
    c = s.counters(STAGES)
    roof = roofline.load_ceilings(c, *s.ceilings(), quiet=True)
    times = roofline.timings(s.timed(c, quiet=True))
    pts = roofline.points(c, roof, times, shapes=[c.default_shape])
    return {"c": c, "roof": roof, "pts": pts.set_index("stage"), "work": counters.work(c),
            "kernels": roofline.kernel_points(c, roof), "glue": roofline.glue_ceilings(roof),
            "cal": counters.glue_calibration(c), "roofline": roofline, "times": times}


def _copies(stage):
    import sys
    sys.path.insert(0, str(_raw.ROOT / "tests"))
    from conftest import raw_last_step
    events, _, _ = raw_last_step(_raw.H200 / f"{stage}__{KEY}.json.gz")
    moved = us = 0.0
    for e, _holders in events:
        if e["cat"] in ("gpu_memcpy", "gpu_memset"):
            n = e["args"].get("bytes", 0)
            moved += n * (2 if e["cat"] == "gpu_memcpy" and "DtoD" in e["name"] else 1)
            us += e["dur"]
    return moved, us


def test_the_roofs_are_the_calibrations_and_the_copy(raw, page):
    roof, g = page["roof"], page["glue"]
    assert roof["matmul TFLOP/s"] == pytest.approx(raw["cal"]["bf16_tflops"], rel=1e-9)
    assert roof["fp32 TFLOP/s"] == pytest.approx(raw["cal"]["fp32_tflops"], rel=1e-9)
    assert g["matmul_tflops"] == f"{raw['cal']['bf16_tflops']:.0f}" == "780"
    assert g["fp32_tflops"] == f"{raw['cal']['fp32_tflops']:.1f}" == "50.3"
    assert g["ridge"] == f"{raw['cal']['bf16_tflops'] / raw['copy']:.0f}" == "184"
    assert g["fp32_ridge"] == f"{raw['cal']['fp32_tflops'] / raw['copy']:.1f}"


def test_executed_flops_split_by_pipe_explain_naives_ratio(raw, page):
    """The tensor pipe does the full square (2.000× the causal model) and the softmax's fp32
    instructions the rest: FFMAs (two FLOPs each) and FADDs and FMULs (one each)."""
    w = page["work"]
    for stage, ks in raw["k"].items():
        tensor = sum(k["tensor"] for k in ks) * raw["cal"]["per_tensor"]
        ffma = sum(k["ffma"] for k in ks) * raw["cal"]["per_ffma"]
        addmul = sum(k["addmul"] for k in ks)
        assert w.loc[stage, "executed GFLOP"] == round((tensor + ffma + addmul) / 1e9, 2)
        assert w.loc[stage, "of which tensor pipe"] == round(tensor / 1e9, 2)
        assert w.loc[stage, "of which FFMA"] == round(ffma / 1e9, 2)
        assert w.loc[stage, "of which FADD + FMUL"] == round(addmul / 1e9, 2)
        assert w.loc[stage, "executed / model"] == round((tensor + ffma + addmul) / MODEL, 3)
        assert w.loc[stage, "tensor / model"] == round(tensor / MODEL, 3)
        assert w.loc[stage, "FFMA / model"] == round(ffma / MODEL, 3)
    naive = raw["k"]["naive"]
    whole = sum(k["tensor"] * raw["cal"]["per_tensor"] + k["ffma"] * raw["cal"]["per_ffma"] + k["addmul"]
                for k in naive)
    assert page["cal"]["naive_ratio"] == f"{whole / MODEL:.3f}" and page["cal"]["naive_tensor_ratio"] == "2.000"
    assert page["cal"]["naive_ffma_ratio"] == f"{w.loc['naive', 'FFMA / model']:.3f}" == "0.141"
    assert page["cal"]["naive_addmul_ratio"] == f"{sum(k['addmul'] for k in naive) / MODEL:.3f}"
    # the scaling kernel (q·kᵀ × scale) does one FMUL per score: B·H·S² of them, no "no FLOPs"
    scale = next(k for k in naive if k["addmul"] and not k["ffma"] and not k["tensor"])
    assert scale["addmul"] == 8 * 16 * 1024 * 1024


def test_each_point_sits_under_the_roof_of_its_pipe(raw, page):
    pts, copy = page["pts"], raw["copy"]
    for stage, ks in raw["k"].items():
        tensor = sum(k["tensor"] for k in ks) * raw["cal"]["per_tensor"]
        ffma = sum(k["ffma"] * raw["cal"]["per_ffma"] + k["addmul"] for k in ks)   # the fp32 side
        flops = tensor + ffma
        cb, cus = _copies(stage)
        moved = sum(k["dram"] for k in ks) + cb
        seconds = sum(k["ns"] for k in ks) / 1e9 + cus / 1e6
        compute = raw["cal"]["fp32_tflops"] if ffma > tensor else raw["cal"]["bf16_tflops"]
        p = pts.loc[stage]
        assert p["pipe"] == ("fp32 FFMA" if ffma > tensor else "bf16 tensor")
        assert p["GFLOP"] == pytest.approx(flops / 1e9, rel=1e-9)
        assert p["DRAM MB"] == pytest.approx(moved / 1e6, rel=1e-9)
        assert p["ncu µs"] == pytest.approx(seconds * 1e6, rel=1e-9)
        assert p["TFLOP/s"] == pytest.approx(flops / seconds / 1e12, rel=1e-9)
        roof_here = min(compute, flops / moved * copy)
        assert p["% of roof"] == pytest.approx(100 * flops / seconds / 1e12 / roof_here, rel=1e-9)
        assert p["roof"] == ("memory" if flops / moved < compute / copy else "compute")
    assert pts.loc["sdpa_math", "pipe"] == "fp32 FFMA"
    # the ledger's two byte counts: chapter 9 adds the copies (14.1 for naive), chapter 11 does not (17.8)
    naive = raw["k"]["naive"]
    kernel_only = sum(_raw.flops(k, raw["cal"]) for k in naive) / sum(k["dram"] for k in naive)
    cb, _ = _copies("naive")
    forward = sum(_raw.flops(k, raw["cal"]) for k in naive) / (sum(k["dram"] for k in naive) + cb)
    assert pts.loc["naive", "FLOP/B"] == pytest.approx(forward, rel=1e-9) and kernel_only > forward


def test_each_kernel_is_judged_against_its_pipe(raw, page):
    k = page["kernels"]
    for stage, ks in raw["k"].items():
        rows = k[k["stage"] == stage].sort_values("#")
        assert len(rows) == len(ks)
        for r, raw_k in zip(rows.to_dict("records"), ks):
            t = raw_k["tensor"] * raw["cal"]["per_tensor"]
            f = raw_k["ffma"] * raw["cal"]["per_ffma"] + raw_k["addmul"]   # the fp32 FMA pipe
            pipe = "—" if t + f == 0 else "bf16 tensor" if t >= f else "fp32 FFMA"
            assert r["pipe"] == pipe
            s = raw_k["ns"] / 1e9
            compute = raw["cal"]["fp32_tflops"] if pipe == "fp32 FFMA" else raw["cal"]["bf16_tflops"]
            of_c, of_m = (t + f) / s / 1e12 / compute, raw_k["dram"] / s / 1e12 / raw["copy"]
            bound = "compute" if of_c >= 0.6 and of_c >= of_m else "memory" if of_m >= 0.6 else "neither roof"
            assert r["bound by"] == bound, (stage, r["#"])
            assert r["ncu µs"] == pytest.approx(raw_k["ns"] / 1e3, rel=1e-12)
    fused = k[k["stage"].isin(["sdpa_efficient", "sdpa_flash", "sdpa_cudnn"])]
    assert set(fused["bound by"]) == {"neither roof"}


def test_the_chart_draws_the_fp32_roof_at_the_calibration(raw, page):
    fig = page["roofline"].chart(page["pts"].reset_index(), page["roof"])
    fp32 = next(t for t in fig.data if (t.name or "").startswith("fp32 roof"))
    assert max(fp32.y) == pytest.approx(raw["cal"]["fp32_tflops"], rel=1e-9)
    tensor = next(t for t in fig.data if (t.name or "").startswith("roof measured"))
    assert max(tensor.y) == pytest.approx(raw["cal"]["bf16_tflops"], rel=1e-9)
    import math
    notes = {a.text: a.y for a in fig.layout.annotations}
    assert notes["measured fp32 roof (FFMA, no tensor cores)"] == pytest.approx(math.log10(raw["cal"]["fp32_tflops"]))


def test_right_of_the_ridge_is_not_bound_by_compute(raw, page):
    """The stages right of the tensor ridge, and the share of the compute roof they reach (raw)."""
    from helpers import roofline
    times = page["times"]
    pts = roofline.points(page["c"], page["roof"], times, shapes=[page["c"].default_shape])
    g = roofline.glue_roofline(pts, page["roof"])
    ridge = raw["cal"]["bf16_tflops"] / raw["copy"]
    shares = {}
    for stage, ks in raw["k"].items():
        fl = sum(_raw.flops(k, raw["cal"]) for k in ks)
        cb, cus = _copies(stage)
        by = sum(k["dram"] for k in ks) + cb
        s = sum(k["ns"] for k in ks) / 1e9 + cus / 1e6
        tensor = sum(k["tensor"] for k in ks) >= sum(k["ffma"] * raw["cal"]["per_ffma"] + k["addmul"] for k in ks)
        if tensor and fl / by >= ridge:
            shares[stage] = 100 * fl / s / 1e12 / raw["cal"]["bf16_tflops"]
    assert g["compute"].replace(" and ", ", ") == ", ".join(shares)
    assert g["compute_pct_min"] == f"{min(shares.values()):.0f}" and g["compute_pct_max"] == f"{max(shares.values()):.0f}"
    assert max(shares.values()) < 60
    # the sentence the page prints names the same stages and the same range (several stages here)
    names = list(shares)
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    assert g["compute_sentence"].startswith(f"Under the compute roof, right of the ridge: {listed}. ")
    assert f"reach {min(shares.values()):.0f}–{max(shares.values()):.0f}% of it" in g["compute_sentence"]
