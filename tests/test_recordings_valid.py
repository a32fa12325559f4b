"""Every recorded trace of every replay set passes tools/validate_recordings.py (issue 38).

The validator reads the raw events with gzip and json (it imports nothing of helpers): no zero or
absurd timestamps, no GPU event before the call that launched it, the same GPU work in every
profiled step, and the helpers' per-step tables (Profile.per_step, its GPU events of every step)
within 1 % of the raw sums. Each check is also shown to fire on a corrupted copy of a real trace,
and the recorders are held to call the validator where they save a trace.
"""
from __future__ import annotations

import copy
import gzip
import json
import re
import sys
from pathlib import Path

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import validate_recordings as v  # noqa: E402

SETS = ("h200", "h100-80gb-hbm3")
TRACES = [p for s in SETS for p in sorted((v.TRACES / s).rglob("*.json.gz"))]
SAMPLE = v.TRACES / "h200" / "naive__b8_h16_s1024_d64_bfloat16_causal.json.gz"


def test_both_sets_and_every_kind_of_trace_are_checked():
    kinds = {(p.relative_to(v.TRACES).parts[0], p.parent.name) for p in TRACES}
    for s in SETS:
        assert {(s, s), (s, "training"), (s, "own_model"), (s, "experiments")} <= kinds, s
    assert len(TRACES) >= 120


def load(path: Path):
    """The helpers' Profile of a recorded trace, as the pages load it."""
    from helpers.core.profile import Profile
    from helpers.sources.anytrace import load_trace
    with gzip.open(path, "rt") as f:
        provenance = json.load(f)["provenance"]
    return Profile.load(path) if "stage" in provenance else load_trace(path)


@pytest.mark.parametrize("path", TRACES, ids=[str(p.relative_to(v.TRACES)) for p in TRACES])
def test_every_recording_passes_the_validator(path):
    report = v.validate(path, v.profile_tables(load(path)))
    assert report.ok, "\n".join(report.problems)
    assert report.steps and all(s["gpu_events"] > 0 for s in report.steps.values())


# --- each check fires on a corrupted copy of a real trace ------------------------------------------

@pytest.fixture(scope="module")
def sample() -> list[dict]:
    return v.read(SAMPLE)


def kernels_of(events: list[dict]) -> list[dict]:
    return [e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"]


def launch_of(events: list[dict], gpu: dict) -> dict:
    return next(e for e in events if e.get("ph") == "X" and e.get("cat") in v.CALL_CATS
                and e.get("args", {}).get("correlation") == gpu["args"]["correlation"])


def step_of(events, gpu) -> int:
    t = launch_of(events, gpu)["ts"]
    return next(int(e["name"].split("#")[1]) for e in events if re.fullmatch(r"ProfilerStep#\d+", e.get("name", ""))
                and e["ts"] <= t <= e["ts"] + e["dur"])


def attributed(events) -> list[dict]:
    calls = {e["args"]["correlation"] for e in events if e.get("cat") in v.CALL_CATS and "correlation" in e.get("args", {})}
    return [e for e in kernels_of(events) if e["args"].get("correlation") in calls]


def test_the_sample_passes(sample):
    assert v.check_events(sample).ok


def corrupt(sample, how) -> list[str]:
    events = copy.deepcopy(sample)
    how(events)
    return v.check_events(events).problems


def test_a_zeroed_first_kernel_record_is_refused(sample):
    def zero(evs):
        attributed(evs)[0]["ts"] = 0   # CUPTI before CUDA 13.1 (pytorch issue 192021)
    assert any("ts 0" in p for p in corrupt(sample, zero))


def test_a_kernel_far_outside_the_session_is_refused(sample):
    def far(evs):
        attributed(evs)[0]["ts"] += 3e9   # an hour later: another clock
    problems = corrupt(sample, far)
    assert any("outside the host's span" in p for p in problems), problems


def test_a_negative_or_huge_duration_is_refused(sample):
    def negative(evs):
        attributed(evs)[1]["dur"] = -5.0
    assert any("negative duration" in p for p in corrupt(sample, negative))

    def huge(evs):
        attributed(evs)[1]["dur"] = 4e9
    assert any("outside the host's span" in p for p in corrupt(sample, huge))


def test_a_kernel_before_its_launch_is_refused(sample):
    def early(evs):
        k = attributed(evs)[2]
        k["ts"] = launch_of(evs, k)["ts"] - 3.0
    problems = corrupt(sample, early)
    assert any("before its launch call" in p for p in problems), problems


def test_a_step_with_other_kernels_is_refused(sample):
    def renamed(evs):
        k = attributed(evs)[-1]   # the last step's last kernel
        k["name"] = "void some_other_kernel<128>()"
    problems = corrupt(sample, renamed)
    assert any("other GPU work than step" in p and "some_other_kernel" in p for p in problems), problems


def test_steps_follow_the_launch_not_the_kernels_time(sample):
    """A kernel that runs after its step's CPU span still counts for the step that launched it:
    moving the kernel's time (not its launch) changes no step's work."""
    events = copy.deepcopy(sample)
    ks = attributed(events)
    last = max(ks, key=lambda k: k["ts"])
    before = step_of(events, last)
    last["ts"] += 50.0   # later on the GPU, same launch
    report = v.check_events(events)
    assert report.ok, report.problems
    assert step_of(events, last) == before


def test_a_table_off_by_two_percent_is_refused(sample):
    from helpers.core.profile import Profile
    prof = Profile.load(SAMPLE)
    report = v.check_events(sample)
    assert v.check_tables(report, v.profile_tables(prof)) == []
    table = prof.per_step.copy()
    table.loc[table.index[-1], "gpu_time_us"] *= 1.02
    problems = v.check_tables(report, {"per_step": table})
    assert any("gpu_time_us" in p and "+2.0 %" in p for p in problems), problems
    events = prof.gpu_events("all").copy()
    events = events[events["category"] != "memcpy"]   # a kernel table that lost the Memcpy
    assert any("gpu_events" in p for p in v.check_tables(report, {"events": events}))


# --- the recorders refuse a trace that fails ----------------------------------------------------------

def test_refuse_invalid_moves_the_trace_aside_with_a_clear_message(sample, tmp_path):
    good = tmp_path / "naive__x.json.gz"
    events = copy.deepcopy(sample)
    with gzip.open(good, "wt") as f:
        json.dump({"traceEvents": events}, f)
    assert v.refuse_invalid(good) == good and good.exists()
    attributed(events)[0]["ts"] = 0
    bad = tmp_path / "sdpa__x.json.gz"
    with gzip.open(bad, "wt") as f:
        json.dump({"traceEvents": events}, f)
    with pytest.raises(v.InvalidRecording) as err:
        v.refuse_invalid(bad)
    message = str(err.value)
    assert "refused sdpa__x.json.gz" in message and "ts 0" in message and "192021" in message
    assert not bad.exists() and (tmp_path / "sdpa__x.json.gz.rejected").exists()


def trace_saves(source: str) -> int:
    """How many places a recorder writes a Kineto trace: `.save(` of a Profile, or a chrome trace
    dumped by hand."""
    return len(re.findall(r"prof\.save\(", source)) + len(re.findall(r"json\.dump\(document", source))


RECORDERS = [p for p in sorted((ROOT / "tools").glob("record*.py")) if trace_saves(p.read_text())]


def test_the_recorders_that_save_traces_are_found():
    assert {"record.py", "record_training.py", "record_own_model.py"} <= {p.name for p in RECORDERS}


@pytest.mark.parametrize("path", RECORDERS, ids=[p.name for p in RECORDERS])
def test_every_recorder_that_saves_a_trace_validates_it(path):
    """Each place a recorder writes a trace is matched by a refuse_invalid call."""
    source = path.read_text()
    assert source.count("refuse_invalid(") >= trace_saves(source), f"{path.name}: a trace saved without validation"
