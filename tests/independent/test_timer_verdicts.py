"""Every "bound by" verdict on chapter 8's timer table and in its glued sentence, recomputed from
timers.json's raw numbers and the raw trace events, in plain code (no `helpers.core.bound`).

The book's rule, written out: a call's wall time is the caller's loop per call, the median of its
repeats (`loop_us`); its busy time is timers.json's `busy_us` (measured beside the loop). The line
is 1.10 × busy. About even when the line lies within [min, max] of the repeats; else bound by the
GPU when the median is at most the line; else bound by the CPU. A forward timers.json has no
record of, or a set without timers.json, gets no verdict, and the page says so.

Run on a fake timers.json (tests/timer_fakes.py: the real set linked into a temporary folder),
and on each real set that has a timers.json (recorded on a GPU by tools/record_timers.py)."""
from __future__ import annotations

import gzip
import json
import math
import sys
from pathlib import Path

import pytest

from helpers import Session, prose, tables

from . import raw

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from timer_fakes import TRACES, fake_timers, linked_set  # noqa: E402

NO_TIMER = "this recording has no caller's timer; do_bench's figure (one cold call) is shown but decides nothing"
REAL = [p.parent.name for p in sorted(TRACES.glob("*/timers.json"))]


def median(xs):
    v = sorted(xs)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def expected(rec: dict | None) -> str:
    if not rec or not rec.get("loop_us"):
        return "no caller's timer recorded"
    line = 1.1 * rec["busy_us"]
    if min(rec["loop_us"]) <= line <= max(rec["loop_us"]):
        return "about even"
    return "bound by the GPU" if median(rec["loop_us"]) <= line else "bound by the CPU"


@pytest.fixture(scope="module", params=["fake"] + REAL)
def recording(request, tmp_path_factory):
    """(the set's folder, its timers.json document): a fake one over the H200's traces, or a real set."""
    if request.param == "fake":
        root = tmp_path_factory.mktemp("fake_timers")
        folder = linked_set(TRACES / "h200", root, fake_timers(TRACES / "h200"))
    else:
        folder = TRACES / request.param
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ATTN_PROFILED_REPLAY_DIR", str(folder.parent))
        mp.setenv("ATTN_PROFILED_REPLAY_GPU", folder.name)
        mp.setenv("ATTN_PROFILED_MODE", "replay")
        s = Session(mode="replay")
        profiles = s.stages(s.closing_stages())
        yield folder, json.loads((folder / "timers.json").read_text()), profiles


def test_the_timer_table_is_the_raw_loop_against_the_raw_busy_time(recording):
    folder, doc, profiles = recording
    t = tables.timer_agreement(profiles)
    verdicts = set()
    for stage in profiles:
        path = folder / f"{stage}__{raw.DEFAULT}.json.gz"
        rec = doc["forwards"].get(f"{stage}__{raw.DEFAULT}")
        row = t.loc[stage]
        with gzip.open(path, "rt") as f:
            bench = json.load(f)["provenance"]["do_bench_us"]
        assert row["profiler GPU µs"] == pytest.approx(raw.forward(path).gpu_us, abs=0.051)
        assert row["do_bench µs"] == pytest.approx(bench, abs=0.051)
        want = expected(rec)
        assert row["bound"] == want, stage
        verdicts.add(want)
        if rec is None:
            assert row["loop µs per call"] is None or math.isnan(row["loop µs per call"])
            assert row["loop spread µs"] == "—"
            continue
        loop = rec["loop_us"]
        assert row["loop µs per call"] == pytest.approx(median(loop), abs=0.051)
        assert row["loop spread µs"] == f"{min(loop):,.1f}–{max(loop):,.1f}"
        assert row["GPU busy µs (beside the loop)"] == pytest.approx(rec["busy_us"], abs=0.051)
        assert row["loop / busy"] == pytest.approx(median(loop) / rec["busy_us"], abs=0.0006)
    if folder.parent.name.startswith("fake"):   # the fake exercises every verdict
        assert verdicts == {"bound by the GPU", "bound by the CPU", "about even", "no caller's timer recorded"}


def names(xs):
    return xs[0] if len(xs) == 1 else ", ".join(xs[:-1]) + " and " + xs[-1]


def test_the_glued_sentence_names_the_stages_the_raw_rule_names(recording):
    folder, doc, profiles = recording
    g = prose.glue_timer(profiles)
    recs = {s: doc["forwards"].get(f"{s}__{raw.DEFAULT}") for s in profiles}
    by = {s: expected(r) for s, r in recs.items()}
    cpu = [s for s in profiles if by[s] == "bound by the CPU"]
    even = [s for s in profiles if by[s] == "about even"]
    gpu = [s for s in profiles if by[s] == "bound by the GPU"]
    untimed = [s for s in profiles if by[s] == "no caller's timer recorded"]
    parts = [f"bound by the CPU: {names(cpu)}" if cpu else "no stage is bound by the CPU"]
    if even:
        parts.append("about even, the line inside the loop's own spread: " + names(
            [f"{s} (line {1.1 * recs[s]['busy_us']:,.1f} µs, loop {min(recs[s]['loop_us']):,.1f}–"
             f"{max(recs[s]['loop_us']):,.1f} µs)" for s in even]))
    parts.append(f"bound by the GPU: {names(gpu)}" if gpu else "no stage is bound by the GPU")
    sentence = "; ".join(parts)
    want = sentence[0].upper() + sentence[1:] + "."
    if untimed:
        want += (f" No verdict for {names(untimed)}: the caller's timer did not time "
                 f"{'it' if len(untimed) == 1 else 'them'}; do_bench's figure decides nothing.")
    assert g["verdicts"] == want
    assert g["cpu_bound_count"] == len(cpu)
    n, timed = len(profiles), len(profiles) - len(untimed)
    assert g["timed"] == (f"every one of the {n} stages" if timed == n else f"no stage of the {n}" if not timed
                          else f"{timed} of the {n} stages")
    # the overhead example: the GPU-bound stage whose profiled CPU time most exceeds the loop's call
    over = {s: raw.forward(folder / f"{s}__{raw.DEFAULT}.json.gz").cpu_us / median(recs[s]["loop_us"]) for s in gpu}
    over = {s: r for s, r in over.items() if r > 1}
    if over:
        name = max(over, key=over.get)
        assert g["example_stage"] == name
        assert g["example_loop_us"] == pytest.approx(median(recs[name]["loop_us"]), abs=0.051)
        assert g["example_gpu_us"] == pytest.approx(recs[name]["busy_us"], abs=0.051)
        assert f"{g['example_cpu_us']:,.1f} µs on the CPU" in g["overhead"]
    else:
        assert g["example_stage"] == "not measured" and "no stage" in g["overhead"]
    for value in g.values():
        assert "nan" not in str(value).lower() and "none" not in str(value).lower()


def test_a_set_without_timers_draws_no_verdict_and_says_so_once(tmp_path, monkeypatch):
    folder = linked_set(TRACES / "h200", tmp_path, None)
    monkeypatch.setenv("ATTN_PROFILED_REPLAY_DIR", str(folder.parent))
    monkeypatch.setenv("ATTN_PROFILED_REPLAY_GPU", folder.name)
    s = Session(mode="replay")
    profiles = s.stages(s.closing_stages())
    t = tables.timer_agreement(profiles)
    assert set(t["bound"]) == {"no caller's timer recorded"}
    assert t.attrs["caption"].count(NO_TIMER[0].upper() + NO_TIMER[1:]) == 1
    g = prose.glue_timer(profiles)
    assert g["verdicts"].startswith(NO_TIMER[0].upper() + NO_TIMER[1:])
    assert "bound by the CPU" not in g["verdicts"] and "bound by the GPU" not in g["verdicts"]
    for value in g.values():
        assert "nan" not in str(value).lower()


def test_the_training_step_table_is_the_raw_loop_against_the_raw_busy_time(recording):
    """Chapter 11's step timer table: each training step's loop (median, min–max) and bound from
    timers.json's training_steps, read raw."""
    from helpers.core.stages import stages_where
    from helpers.training import chapter as training
    from helpers.training.sources_modes import load_step
    folder, doc, _ = recording
    steps = {s: load_step(s) for s in stages_where(has_training=True)
             if (folder / "training" / f"{s}__{raw.DEFAULT}.json.gz").exists()}
    t = training.timer_table(steps).set_index("stage")
    for stage in steps:
        rec = doc["training_steps"].get(f"{stage}__{raw.DEFAULT}")
        row = t.loc[stage]
        assert row["bound"] == expected(rec), stage
        if rec is None:
            assert row["loop spread µs"] == "—"
            continue
        assert row["step loop µs"] == pytest.approx(median(rec["loop_us"]), abs=0.051)
        assert row["loop spread µs"] == f"{min(rec['loop_us']):,.1f}–{max(rec['loop_us']):,.1f}"
        assert row["GPU busy µs (beside the loop)"] == pytest.approx(rec["busy_us"], abs=0.051)


def test_the_roofline_and_flex_verdicts_are_the_raw_rule(recording):
    """Chapter 9's bound column (every recorded shape) and 06c's call gap, from timers.json read raw."""
    from helpers import flex, roofline, stages_where
    folder, doc, profiles = recording
    s = Session(mode="replay")
    stages = stages_where(has_ncu=True, variant_of=None, dispatched=False)
    c = s.counters(stages, sweep=s.ncu_shapes("sdpa_flash"), sweep_stages=roofline.SWEEP_STAGES)
    roof = roofline.load_ceilings(c, *s.ceilings())
    pts = roofline.points(c, roof, roofline.timings(s.timed(c, quiet=True)))
    shown = roofline.table(pts[pts["shape"] == raw.DEFAULT])
    for p in pts.to_dict("records"):
        rec = doc["forwards"].get(f"{p['stage']}__{p['shape']}")
        want = expected(rec)
        assert p["bound"] == want, (p["stage"], p["shape"])
        assert p["bound by the CPU"] == {"bound by the CPU": True, "bound by the GPU": False}.get(want)
        if rec:
            assert p["loop µs"] == pytest.approx(median(rec["loop_us"]))
        if p["shape"] == raw.DEFAULT:
            cell = shown.loc[p["stage"], "bound by the CPU"]
            assert cell == {"bound by the CPU": "yes", "bound by the GPU": "no", "about even": "about even"}.get(want, "—")
    gap = flex.call_gap({n: profiles[n] for n in ("sdpa_flash", "flex", "flex_sliding") if n in profiles})
    for stage, row in gap.iterrows():
        rec = doc["forwards"].get(f"{stage}__{raw.DEFAULT}")
        assert row["bound"] == expected(rec), stage
        if rec:
            wall = median(rec["loop_us"])
            assert row["gap µs"] == pytest.approx(wall - rec["busy_us"], abs=0.051)
            assert row["GPU busy %"] == pytest.approx(min(100.0, 100 * rec["busy_us"] / wall), abs=0.051)
    # the sweep's widest gap: the seq where a loop's flex call over its busy time is largest
    sweep = flex.gap_sweep(s.grid(flex.GAP_STAGES, flex.gap_shapes(), known=profiles))
    ratios = {}
    for seq in sorted(set(sweep["seq"])):
        rec = doc["forwards"].get(f"flex__b8_h16_s{seq}_d64_bfloat16_causal")
        if rec:
            ratios[seq] = round(median(rec["loop_us"]) / rec["busy_us"], 2)
    if ratios:
        assert flex.widest_gap(sweep) == max(ratios, key=ratios.get)


def test_one_calls_bound_sentence_is_the_raw_rule(recording):
    """prose.glue_bound: the sentence a page ends a paragraph with, from timers.json read raw."""
    folder, doc, profiles = recording
    for stage, prof in profiles.items():
        rec = doc["forwards"].get(f"{stage}__{raw.DEFAULT}")
        text = prose.glue_bound(prof)["call_bound"]
        if expected(rec) == "no caller's timer recorded":
            assert text.startswith(NO_TIMER)
            continue
        assert text.endswith(": " + expected(rec)), stage
        assert f"pays {median(rec['loop_us']):,.1f} µs per call" in text and f"busy {rec['busy_us']:,.1f} µs" in text


def test_the_pinned_context_sentence_is_the_raw_loops_difference(recording):
    """08's sentence on entering sdpa_kernel(...) per call: the dispatched stage against the pinned
    stage whose raw GPU events carry the very same names, their loops' medians and spreads from
    timers.json read raw, and which of the five forms applies."""
    from helpers.core.stages import STAGES
    folder, doc, profiles = recording
    text = prose.glue_pinned_cost(profiles)["pinned"]

    def gpu_names(stage):
        return [e["name"] for e in raw.forward(folder / f"{stage}__{raw.DEFAULT}.json.gz").gpu]

    auto = [s for s in profiles if STAGES[s].dispatched]
    twins = [s for s in STAGES if STAGES[s].sdpa_backend and s in profiles and auto
             and gpu_names(s) == gpu_names(auto[0])]
    if not auto or not twins:
        assert text.startswith("Here no pinned stage runs the very kernels")
        return
    recs = {s: doc["forwards"].get(f"{s}__{raw.DEFAULT}") for s in (auto[0], twins[0])}
    if any(not r or not r.get("loop_us") for r in recs.values()):
        assert text.startswith("Without the caller's timer")
        return
    a, t = recs[auto[0]]["loop_us"], recs[twins[0]]["loop_us"]
    assert f"{auto[0]} launches the same kernels as {twins[0]}" in text
    assert f"its loop pays {median(a):,.1f} µs per call ({min(a):,.1f}–{max(a):,.1f} µs" in text
    assert f"{twins[0]}'s {median(t):,.1f} µs ({min(t):,.1f}–{max(t):,.1f} µs" in text
    if min(t) <= max(a) and min(a) <= max(t):
        assert "costs nothing this timer can see" in text
    elif median(t) > median(a):
        assert f"about {median(t) - median(a):,.1f} µs per call on this host" in text
    else:
        assert f"the pinned loop is the cheaper by {median(a) - median(t):,.1f} µs per call" in text
    assert "nan" not in text.lower() and "none" not in text.lower()
