"""The book's one definition of "bound by the GPU / by the CPU" (helpers.core.bound): on
hand-built inputs on both sides of its line, and against the recorded traces, with expectations
computed from the raw events (do_bench from the provenance, GPU time and gaps from the events)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import raw_document
from timer_fakes import median, timer_record

from helpers.core import bound as b
from helpers.core.profile import Profile

TRACES = Path(__file__).resolve().parents[1] / "notebooks" / "traces" / "h200"
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


# --- hand-built: each side of each line -------------------------------------------------------

def test_within_the_line_is_bound_by_the_gpu():
    assert b.bound(110.0, 100.0).by == b.GPU            # exactly 10% longer: still the GPU
    assert b.bound(100.0, 100.0).by == b.GPU
    assert b.bound(98.0, 100.0).by == b.GPU             # two timers: the loop may read a hair shorter


def test_past_the_line_is_bound_by_the_cpu():
    r = b.bound(110.5, 100.0)
    assert r.by == b.CPU and r.host_wait_us == pytest.approx(10.5) and r.cpu_bound
    assert r.words == "bound by the CPU" and "10.5 µs" in r.sentence()


def test_a_step_splits_its_wait_by_cause():
    # the same line on a step's span; past it, the larger wait names the bound
    assert b.bound(109.0, 100.0, host_wait_us=9.0, other_wait_us=0.0, timed_by=b.STEP_SPAN).by == b.GPU
    assert b.bound(200.0, 100.0, host_wait_us=60.0, other_wait_us=40.0, timed_by=b.STEP_SPAN).by == b.CPU
    assert b.bound(200.0, 100.0, host_wait_us=40.0, other_wait_us=60.0, timed_by=b.STEP_SPAN).by == b.OTHER


def test_a_half_busy_step_is_not_bound_by_the_gpu():
    # chapter 10's forward: the GPU busy half the span is waiting the other half
    r = b.bound(300.0, 150.0, host_wait_us=125.0, other_wait_us=25.0, timed_by=b.STEP_SPAN)
    assert r.by == b.CPU and round(r.busy_pct) == 50 and "the step's GPU span" in r.sentence()


def test_the_sentence_states_the_numbers_it_was_drawn_from():
    r = b.bound(61.2, 57.6, spread=(60.0, 62.5))
    assert r.by == b.GPU
    assert "57.6 µs of 61.2 µs" in r.sentence() and "the caller's loop" in r.sentence()
    assert "60.0–62.5 µs over its repeats" in r.sentence()


# --- about even: the line inside the timer's own spread ----------------------------------------

@pytest.mark.parametrize("spread, want", [
    ((105.0, 112.0), b.EVEN),     # the line, 110, inside
    ((110.0, 115.0), b.EVEN),     # on the spread's lower end: still inside
    ((101.0, 110.01), b.EVEN),    # just over its upper end
    ((101.0, 109.9), b.GPU),      # every repeat under the line
    ((110.1, 130.0), b.CPU),      # every repeat over it
])
def test_about_even_when_the_line_falls_inside_the_loops_spread(spread, want):
    wall = (spread[0] + spread[1]) / 2
    r = b.bound(wall, 100.0, spread=spread)
    assert r.by == want
    assert r.line_us == pytest.approx(110.0)
    if want == b.EVEN:
        assert r.words == "about even" and not r.cpu_bound
        assert "110.0 µs" in r.sentence() and f"{spread[0]:,.1f}–{spread[1]:,.1f}" in r.sentence()


def test_of_call_takes_the_median_repeat_and_the_busy_time_beside_the_loop():
    loop = [120.0, 100.0, 104.0, 140.0, 102.0, 103.0, 101.0]     # median 103, min 100, max 140
    r = b.of_call({"loop_us": loop, "loop_busy_us": 80.0, "gpu_time_us": 99.0})
    assert r.wall_us == 103.0 and r.spread == (100.0, 140.0) and r.busy_us == 80.0
    assert r.busy_from == b.BUSY_TIMERS and r.by == b.CPU          # 88 < 100: every repeat over the line
    # no busy time beside the loop (live): the trace's GPU time of one forward
    r = b.of_call({"loop_us": loop, "loop_busy_us": None, "gpu_time_us": 99.0})
    assert r.busy_us == 99.0 and r.busy_from == b.BUSY_TRACE and r.by == b.EVEN   # 108.9 in [100, 140]
    # an even count of repeats: the mean of the middle two
    assert b.of_call({"loop_us": [1.0, 2.0, 4.0, 9.0], "gpu_time_us": 5.0}).wall_us == 3.0


def test_no_caller_timer_no_verdict():
    assert b.of_call({"loop_us": None, "gpu_time_us": 10.0, "do_bench_us": 30.0}) is None
    assert b.of_call({"loop_us": [], "gpu_time_us": 10.0}) is None
    assert b.words(None) == b.NO_TIMER_WORDS
    assert "decides nothing" in b.NO_TIMER and "nan" not in b.NO_TIMER


# --- against the recorded traces ---------------------------------------------------------------

def raw_last_step_gpu(path: Path) -> tuple[float, dict]:
    """(GPU time of the last profiled step's events, the provenance) from the raw JSON."""
    doc = raw_document(path)
    events = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    steps = [e for e in events if re.fullmatch(r"ProfilerStep#\d+", e.get("name", ""))]
    last = max(steps, key=lambda e: e["ts"])
    lo, hi = last["ts"], last["ts"] + last["dur"]
    calls = {e["args"]["correlation"] for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")
             and lo <= e["ts"] <= hi and "correlation" in e.get("args", {})}
    gpu = sum(e["dur"] for e in events if e.get("cat") in GPU_CATS and e["args"].get("correlation") in calls)
    return gpu, doc["provenance"]


STAGE_TRACES = sorted(TRACES.glob("*__*.json.gz"))


def raw_expected(rec: dict | None, trace_gpu: float, trace_loop) -> tuple | None:
    """(wall, busy, verdict) by the book's rule in plain code: the loop's median against the busy
    time beside it (timers.json), else the trace's own loop against its GPU time; None: no loop."""
    loop, busy = (rec["loop_us"], rec["busy_us"]) if rec else (trace_loop, trace_gpu)
    if not loop:
        return None
    wall, line = median(loop), 1.1 * busy
    verdict = b.EVEN if min(loop) <= line <= max(loop) else (b.GPU if wall <= line else b.CPU)
    return wall, busy, verdict


@pytest.mark.parametrize("path", STAGE_TRACES, ids=lambda p: p.name)
def test_recorded_stage_bound_is_the_loop_against_the_busy_time(path):
    gpu, provenance = raw_last_step_gpu(path)
    want = raw_expected(timer_record(path), gpu, provenance.get("loop_us"))
    got = b.of_call(Profile.load(path).summary())
    if want is None:
        assert got is None   # no caller's timer in this set: no verdict
        return
    assert got.wall_us == pytest.approx(want[0]) and got.busy_us == pytest.approx(want[1], abs=1e-3)
    assert got.by == want[2]


def test_the_recorded_set_exercises_the_line_where_it_has_a_timer():
    # the line is exercised by the replay set itself, once it has the caller's timer
    sides = set()
    for path in STAGE_TRACES:
        gpu, provenance = raw_last_step_gpu(path)
        want = raw_expected(timer_record(path), gpu, provenance.get("loop_us"))
        if want is not None:
            sides.add(want[2])
    assert sides == set() or len(sides) >= 2, sides


def raw_step_breakdown(path: Path) -> dict[int, tuple[float, float, float, float]]:
    """Per step, from the raw JSON: (span, busy, host wait, other wait) of the GPU events whose
    launch lies in the step; a gap is the host's when the next event's launch began after it."""
    events = [e for e in raw_document(path)["traceEvents"] if e.get("ph") == "X"]
    steps = {int(e["name"].split("#")[1]): (e["ts"], e["ts"] + e["dur"]) for e in events
             if re.fullmatch(r"ProfilerStep#\d+", e.get("name", ""))}
    launch = {}
    for e in events:
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {}):
            launch[e["args"]["correlation"]] = e["ts"]
    out = {}
    for step, (lo, hi) in steps.items():
        gpu = sorted(((e["ts"], e["ts"] + e["dur"], launch[e["args"]["correlation"]]) for e in events
                      if e.get("cat") in GPU_CATS and lo <= launch.get(e["args"].get("correlation"), -1) <= hi),
                     key=lambda t: (t[0], t[2]))
        if not gpu:
            continue
        busy = host = other = 0.0
        cur_s, cur_e = gpu[0][0], gpu[0][1]
        for s, e, at in gpu[1:]:
            if s > cur_e:                       # a gap, ended by this event
                busy += cur_e - cur_s
                if at > cur_e:
                    host += s - cur_e
                else:
                    other += s - cur_e
                cur_s, cur_e = s, e
            else:
                cur_e = max(cur_e, e)
        busy += cur_e - cur_s
        out[step] = max(t[1] for t in gpu) - gpu[0][0], busy, host, other
    return out


OWN = sorted((TRACES / "own_model").glob("*.json.gz"))


@pytest.mark.parametrize("path", OWN, ids=lambda p: p.name)
def test_recorded_step_bound_follows_the_raw_gaps(path):
    from helpers.breakdown import views as breakdown
    from helpers.sources.anytrace import load_trace
    prof = load_trace(path)
    raw = raw_step_breakdown(path)
    for step in prof.steps:
        if step not in raw:
            continue
        span, busy, host, other = raw[step]
        expected = b.GPU if span <= 1.1 * busy else (b.CPU if host >= other else b.OTHER)
        got = breakdown.step_bound(prof, step)
        assert got.wall_us == pytest.approx(span, abs=0.01) and got.busy_us == pytest.approx(busy, abs=0.01)
        assert got.by == expected, (step, span, busy, host, other)
        assert breakdown.verdict(prof, step).startswith(b.WORDS[expected])


def test_two_later_calls_are_timed_alike():
    # figures set against each other come from one timer: the loop only where every one has it
    looped = {"loop_us": [3.0, 1.0, 2.0], "do_bench_us": 10.0}
    other = {"loop_us": [5.0, 4.0, 6.0], "do_bench_us": 20.0}
    untimed = {"loop_us": None, "do_bench_us": 20.0}
    assert b.later_calls(looped, other) == ([2.0, 5.0], b.LATER_BY_LOOP)
    assert b.later_calls(looped, untimed) == ([10.0, 20.0], b.LATER_BY_BENCH)
    assert b.later_calls({"loop_us": None, "do_bench_us": None}) == ([None], b.LATER_BY_BENCH)
