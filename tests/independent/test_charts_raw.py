"""The plotted data of the charts no other independent test reads, recomputed from the raw
recordings (issue 38): chapter 9's roofline (one point per stage, one per kernel) and its sweep
across sequence lengths, from ncu's raw CSV pages, the calibration matmuls and the traces' copies;
chapter 11's forward and backward bars, from the raw events of each training trace.

Each chart is made by the function the page calls, with the page's inputs; its x and y values are
then compared with plain sums over the raw files (`_raw`, `conftest.raw_last_step`), never with
the helpers' own tables. Units: FLOP/B = FLOPs / DRAM bytes (kernels' read + write, plus what the
forward's Memcpy/Memset events move), TFLOP/s = FLOPs / s / 1e12, training bars in µs (raw `dur`).
"""
from __future__ import annotations

import html as htmllib
import re

import pytest

from conftest import raw_last_step

from . import _raw
from helpers.core.stages import stages_where  # the stage lists: queries of the registry

STAGES = list(stages_where(has_ncu=True, variant_of=None, dispatched=False))   # 09's stages
KEY = "b8_h16_s{seq}_d64_bfloat16_causal"


def raw_point(stage: str, seq: int = 1024) -> tuple[float, float]:
    """(FLOP/B, TFLOP/s) of one forward, from ncu's rows and the trace's copies at that shape."""
    key = KEY.format(seq=seq)
    cal = _raw.calibration()
    ks = _raw.kernels(_raw.H200 / "ncu" / f"{stage}__{key}.csv")
    flops = sum(_raw.flops(k, cal) for k in ks)
    moved, us = 0.0, 0.0
    events, _, _ = raw_last_step(_raw.H200 / f"{stage}__{key}.json.gz")
    for e, _ in events:
        if e["cat"] in ("gpu_memcpy", "gpu_memset"):
            n = e["args"].get("bytes", 0)
            moved += n * (2 if e["cat"] == "gpu_memcpy" and "DtoD" in e["name"] else 1)   # read and written
            us += e["dur"]
    moved += sum(k["dram"] for k in ks)
    seconds = sum(k["ns"] for k in ks) / 1e9 + us / 1e6
    return flops / moved, flops / seconds / 1e12


@pytest.fixture(scope="module")
def chapter9():
    from helpers import Session, roofline
    s = Session(mode="replay")
    c = s.counters(STAGES, sweep=s.ncu_shapes("sdpa_flash"), sweep_stages=roofline.SWEEP_STAGES)
    roof = roofline.load_ceilings(c, *s.ceilings(), quiet=True)
    times = roofline.timings(s.timed(c, quiet=True))
    return {"roofline": roofline, "c": c, "roof": roof,
            "pts": roofline.points(c, roof, times, shapes=[c.default_shape]), "sweep": roofline.points(c, roof, times)}


def test_the_rooflines_stage_points_are_the_raw_counters(chapter9):
    fig = chapter9["roofline"].chart(chapter9["pts"], chapter9["roof"])
    points = {t.name: t for t in fig.data if t.mode == "markers" and t.name in STAGES}
    assert set(points) == set(STAGES)
    for stage, t in points.items():
        ai, tflops = raw_point(stage)
        assert list(t.x) == pytest.approx([ai], rel=1e-9), stage
        assert list(t.y) == pytest.approx([tflops], rel=1e-9), stage


def test_the_rooflines_kernel_points_are_ncus_rows(chapter9):
    r = chapter9["roofline"]
    fig = r.chart(chapter9["pts"], chapter9["roof"], r.kernel_points(chapter9["c"], chapter9["roof"]))
    (each,) = [t for t in fig.data if (t.name or "").startswith("each kernel")]
    cal, want = _raw.calibration(), []
    for stage in STAGES:
        for k in _raw.kernels(_raw.H200 / "ncu" / f"{stage}__{KEY.format(seq=1024)}.csv"):
            flops = _raw.flops(k, cal)
            if flops > 0 and k["dram"] > 0:
                want.append((stage, flops / k["dram"], flops / (k["ns"] / 1e9) / 1e12))
    got = sorted(zip((c[0] for c in each.customdata), each.x, each.y))
    want.sort()
    assert [g[0] for g in got] == [w[0] for w in want]
    assert [g[1] for g in got] == pytest.approx([w[1] for w in want], rel=1e-9)
    assert [g[2] for g in got] == pytest.approx([w[2] for w in want], rel=1e-9)


def test_the_sweep_charts_lines_are_the_raw_counters_at_each_seq(chapter9):
    fig = chapter9["roofline"].sweep_chart(chapter9["sweep"], chapter9["roof"])
    lines = {t.name: t for t in fig.data if t.mode == "lines+markers"}
    swept = {}
    for path in (_raw.H200 / "ncu").glob("*__b8_h16_s*_d64_bfloat16_causal.csv"):
        stage, key = path.name.split("__")
        if stage in lines or stage in STAGES:
            swept.setdefault(stage, []).append(int(re.search(r"_s(\d+)_", key).group(1)))
    swept = {s: sorted(q) for s, q in swept.items() if len(q) > 1 and s in STAGES}
    assert set(lines) == set(swept) and len(lines) >= 2
    for stage, seqs in swept.items():
        want = [raw_point(stage, q) for q in seqs]
        assert list(lines[stage].x) == pytest.approx([w[0] for w in want], rel=1e-9), stage
        assert list(lines[stage].y) == pytest.approx([w[1] for w in want], rel=1e-9), stage


# --- chapter 11: one training step, forward and backward -----------------------------------------

def raw_phases(stage: str) -> dict[str, float]:
    """The last step's GPU time (µs) by phase: an event is the forward's where the call that
    launched it lies inside attn_fwd, the backward's where it lies inside attn_bwd."""
    events, (lo, hi), every = raw_last_step(_raw.H200 / "training" / f"{stage}__{KEY.format(seq=1024)}.json.gz")
    regions = [e for e in every if e.get("ph") == "X" and e.get("cat") == "user_annotation"
               and e["name"] in ("attn_fwd", "attn_bwd") and lo <= e["ts"] <= hi]
    calls = {e["args"]["correlation"]: e for e in every if e.get("ph") == "X"
             and e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    out = {"fwd": 0.0, "bwd": 0.0}
    for e, _ in events:
        call = calls[e["args"]["correlation"]]
        for r in regions:
            if r["ts"] <= call["ts"] <= r["ts"] + r["dur"]:
                out["fwd" if r["name"] == "attn_fwd" else "bwd"] += e["dur"]
    return out


def test_chapter_11s_bars_are_each_phases_raw_gpu_time():
    from helpers import profile_trainings, training
    profiles = profile_trainings(training.STAGES)
    fig = training.kind_chart(profiles)
    labels = [f"{s} {p}" for s in profiles for p in ("fwd", "bwd")]
    totals = dict.fromkeys(labels, 0.0)
    for t in fig.data:
        assert list(t.y) == labels
        for label, x in zip(t.y, t.x):
            totals[label] += x
    for stage in profiles:
        want = raw_phases(stage)
        for phase in ("fwd", "bwd"):
            assert totals[f"{stage} {phase}"] == pytest.approx(want[phase], rel=1e-9, abs=1e-6), (stage, phase)


# --- the built pages: the figures as a reader's browser receives them ------------------------------

def built(book_build, page: str) -> str:
    return (book_build / "html" / "notebooks" / f"{page}.html").read_text(encoding="utf-8")


TYPED = {"f8": "d", "f4": "f", "i4": "i", "i2": "h", "i1": "b", "u1": "B", "u2": "H", "u4": "I"}


def values(v) -> list:
    """A trace's x or y as plotly.py writes it into a page: a list, or a typed array (base64)."""
    import base64
    import struct
    if isinstance(v, dict) and "bdata" in v:
        raw_bytes = base64.b64decode(v["bdata"])
        code = TYPED[v["dtype"]]
        return list(struct.unpack(f"<{len(raw_bytes) // struct.calcsize(code)}{code}", raw_bytes))
    return list(v)


def figures(html: str) -> list[list[dict]]:
    """The traces of every Plotly.newPlot call of a built page, in page order."""
    import json
    decoder = json.JSONDecoder()
    return [decoder.raw_decode(html, m.end())[0] for m in re.finditer(r"Plotly\.newPlot\(\s*\"[^\"]+\",\s*", html)]


def test_the_built_roofline_pages_points_are_the_raw_counters(book_build):
    roof, sweep = figures(built(book_build, "09_roofline"))[:2]
    points = {t["name"]: t for t in roof if t.get("mode") == "markers" and t.get("name") in STAGES}
    assert set(points) == set(STAGES)
    for stage, t in points.items():
        ai, tflops = raw_point(stage)
        assert values(t["x"]) == pytest.approx([ai], rel=1e-9) and values(t["y"]) == pytest.approx([tflops], rel=1e-9), stage
    lines = {t["name"]: t for t in sweep if t.get("mode") == "lines+markers"}
    assert len(lines) >= 2
    for stage, t in lines.items():
        seqs = sorted(int(re.search(r"_s(\d+)_", p.name).group(1))
                      for p in (_raw.H200 / "ncu").glob(f"{stage}__b8_h16_s*_d64_bfloat16_causal.csv"))
        want = [raw_point(stage, q) for q in seqs]
        assert values(t["x"]) == pytest.approx([w[0] for w in want], rel=1e-9), stage
        assert values(t["y"]) == pytest.approx([w[1] for w in want], rel=1e-9), stage


def test_the_built_training_pages_bars_are_each_phases_raw_gpu_time(book_build):
    (bars,) = [f for f in figures(built(book_build, "11_training")) if f and str(values(f[0].get("y", []))[:1]).endswith(" fwd']")]
    totals: dict[str, float] = {}
    for t in bars:
        for label, x in zip(values(t["y"]), values(t["x"])):
            totals[label] = totals.get(label, 0.0) + x
    stages = sorted({label.rsplit(" ", 1)[0] for label in totals})
    assert len(stages) >= 5
    for stage in stages:
        want = raw_phases(stage)
        for phase in ("fwd", "bwd"):
            assert totals[f"{stage} {phase}"] == pytest.approx(want[phase], rel=1e-9, abs=1e-6), (stage, phase)


# --- 01-06c: each bar of the kernel-duration chart is the raw event it says it is ---------------

@pytest.mark.parametrize("stage", list(stages_where(swept=True)))
def test_kernel_duration_bars_are_the_raw_events_in_launch_order(stage):
    """Each step's bars, numbered 1..n in launch order: bar i's hover names the i-th GPU event the
    step launched (raw name) and its height is that event's raw dur (µs)."""
    from helpers import charts, profile_stage
    from . import raw
    fig = charts.kernel_durations(profile_stage(stage, mode="replay", quiet=True))
    shown = {t.name: t for t in fig.data}
    evs = raw.events(raw.stage_path(stage))
    for n, _, _ in raw.steps(evs):
        f = raw.forward(raw.stage_path(stage), n)
        bars = shown[f"ProfilerStep#{n}"]
        order = sorted(f.gpu, key=lambda e: (e["call"]["ts"], e["ts"]))   # launch order
        assert [x.split(".")[0] for x in bars.x] == [str(i + 1) for i in range(len(order))]
        assert [htmllib.unescape(c[0]) for c in bars.customdata] == [e["name"] for e in order]   # hover text is escaped
        assert list(bars.y) == pytest.approx([e["dur"] for e in order], abs=1e-3)
