"""The book's one definition of "bound by the GPU / by the CPU" (helpers.core.bound): on
hand-built inputs on both sides of its line, and against the recorded traces, with expectations
computed from the raw events (do_bench from the provenance, GPU time and gaps from the events)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import raw_document

from helpers.core import bound as b
from helpers.core.profile import Profile

TRACES = Path(__file__).resolve().parents[1] / "notebooks" / "traces" / "h200"
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


# --- hand-built: each side of each line -------------------------------------------------------

def test_do_bench_within_the_line_is_bound_by_the_gpu():
    assert b.bound(110.0, 100.0).by == b.GPU            # exactly 10% longer: still the GPU
    assert b.bound(100.0, 100.0).by == b.GPU
    assert b.bound(98.0, 100.0).by == b.GPU             # two timers: do_bench may read a hair shorter


def test_do_bench_past_the_line_is_bound_by_the_cpu():
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
    r = b.bound(61.2, 57.6)
    assert r.by == b.GPU
    assert "57.6 µs of 61.2 µs" in r.sentence() and "do_bench" in r.sentence()


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


@pytest.mark.parametrize("path", STAGE_TRACES, ids=lambda p: p.name)
def test_recorded_stage_bound_is_do_bench_against_the_raw_gpu_time(path):
    gpu, provenance = raw_last_step_gpu(path)
    bench = provenance.get("do_bench_us")
    got = b.of_call(Profile.load(path).summary())
    if bench is None:
        assert got is None
        return
    assert got.wall_us == pytest.approx(bench) and got.busy_us == pytest.approx(gpu, abs=1e-3)
    assert got.by == (b.GPU if bench <= 1.1 * gpu else b.CPU)


def test_the_recorded_set_has_stages_on_both_sides_of_the_line():
    # the line is exercised by the replay set itself, not only by hand-built numbers
    sides = set()
    for path in STAGE_TRACES:
        gpu, provenance = raw_last_step_gpu(path)
        if provenance.get("do_bench_us") is not None:
            sides.add(provenance["do_bench_us"] <= 1.1 * gpu)
    assert sides == {True, False}


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
