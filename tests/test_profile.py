"""Capture and replay: one Profile type, clear errors for bad input."""
import gzip
import json
import shutil

import pandas as pd
import pytest
import torch

import helpers
from helpers import Profile, Shape, StageUnavailable, TraceError, get_stage, profile_stage
from helpers.sources.replay import recorded, replay
from conftest import TRACES


def test_unknown_stage_names_the_registered_ones():
    with pytest.raises(ValueError, match="Unknown stage 'flash2'.*naive.*sdpa_cudnn"):
        profile_stage("flash2", mode="replay")


def test_replay_prints_a_banner_with_gpu_date_and_torch(capsys):
    prof = profile_stage("naive", mode="replay")
    line = capsys.readouterr().out.strip()
    p = prof.provenance
    assert line.startswith("Replaying naive: recorded on")
    for fact in (p.gpu, p.date[:10], p.torch, p.capability, str(p.sm_count)):
        assert fact in line
    assert prof.mode == "replay" and isinstance(prof, Profile)


def test_replay_is_limited_to_recorded_shapes():
    with pytest.raises(TraceError, match="recorded shapes are"):
        replay("naive", Shape(seq=777))


def test_missing_trace_says_how_to_get_one(tmp_path):
    with pytest.raises(TraceError, match="tools/record.py"):
        Profile.load(tmp_path / "nope.json.gz")


@pytest.mark.parametrize("damage", ["truncate", "not-gzip", "no-provenance"])
def test_corrupt_trace_is_reported(tmp_path, damage):
    path = tmp_path / "naive.json.gz"
    shutil.copy(TRACES[0], path)
    if damage == "truncate":
        path.write_bytes(path.read_bytes()[:200])
    elif damage == "not-gzip":
        path.write_text("{}")
    else:
        with gzip.open(path, "wt") as f:
            json.dump({"traceEvents": []}, f)
    with pytest.raises(TraceError, match="corrupt or not one of ours"):
        Profile.load(path)


def test_save_and_load_round_trip(tmp_path):
    prof = Profile.load(TRACES[0])
    again = Profile.load(prof.save(tmp_path / "again.json.gz"))
    pd.testing.assert_frame_equal(prof.gpu_events("all"), again.gpu_events("all"))
    pd.testing.assert_frame_equal(prof.cpu_ops("all"), again.cpu_ops("all"))


def test_every_article_stage_is_recorded_at_the_default_shape():
    table = recorded()
    have = set(table[table["seq"] == 1024]["stage"])
    assert set(helpers.ARTICLE_STAGES) <= have


def test_recorded_trace_is_a_chrome_trace_perfetto_opens():
    with gzip.open(TRACES[0], "rt") as f:
        doc = json.load(f)
    assert isinstance(doc["traceEvents"], list) and all("ph" in e for e in doc["traceEvents"])


def test_live_mode_without_cuda_is_refused(monkeypatch):
    # patched where resolve_mode looks it up, so that the test means the same on a GPU machine
    monkeypatch.setattr(helpers.sources.modes, "cuda_available", lambda: False)
    monkeypatch.delenv("ATTN_PROFILED_MODE", raising=False)  # "auto" must decide by CUDA alone
    with pytest.raises(StageUnavailable, match="mode='replay'"):
        profile_stage("naive", mode="live")
    assert helpers.resolve_mode("auto") == "replay"


@pytest.mark.parametrize("stage", ["sdpa_flash", "sdpa_cudnn"])
def test_t4_is_told_flash_and_cudnn_are_unavailable(monkeypatch, stage):
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (7, 5))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "Tesla T4")
    with pytest.raises(StageUnavailable, match=r"Tesla T4 is compute capability 7\.5.*8\.0"):
        get_stage(stage).check(Shape(), "cuda")


def test_flash_refuses_fp32_before_running(monkeypatch):
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    with pytest.raises(StageUnavailable, match="bfloat16 or float16"):
        get_stage("sdpa_flash").check(Shape(dtype="float32"), "cuda")


def test_no_gpu_events_fall_back_to_cuda_event_time():
    # a recording that timed the forward with CUDA events too (the recorder now does only where
    # CUPTI saw nothing, so a later set's traces have no such field)
    prof = next(p for p in map(Profile.load, TRACES) if p.provenance.cuda_event_time_us)
    stripped = [e for e in prof.events if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset")]
    fallback = prof.provenance.cuda_event_time_us
    blind = Profile(stripped, helpers.Provenance(**{**prof.provenance.__dict__, "cupti": False}))
    assert blind.gpu_events().empty
    assert (blind.per_step["gpu_time_us"] == fallback).all()


# --- on the GPU: the same API, live ------------------------------------------------------------

# replay counterpart, run in CI: tests/independent/test_gpu_counterparts.py::test_recorded_live_capture_and_replay_have_the_same_types_and_columns
@pytest.mark.gpu
def test_live_and_replay_return_the_same_types_and_columns():
    live = profile_stage("naive", mode="live")
    recorded_prof = profile_stage("naive", mode="replay")
    assert type(live) is type(recorded_prof) and live.mode == "live"
    for table in ("gpu_events", "cpu_ops", "launches", "kernels"):
        a, b = getattr(live, table)(), getattr(recorded_prof, table)()
        assert list(a.columns) == list(b.columns), table
        assert len(a) > 0
    assert list(live.per_step.columns) == list(recorded_prof.per_step.columns)


# replay counterpart, run in CI: tests/independent/test_gpu_counterparts.py::test_flash_refuses_fp32_on_the_recording_gpu
@pytest.mark.gpu
def test_live_flash_with_fp32_raises_no_available_kernel():
    stage = get_stage("sdpa_flash")
    inputs = stage.make_inputs(Shape(batch=1, heads=2, seq=128, dtype="float32"))
    with pytest.raises(StageUnavailable, match="No available kernel"):
        stage.run(inputs)


# replay counterpart, run in CI: tests/independent/test_gpu_counterparts.py::test_without_cupti_the_gpu_time_is_the_cuda_events
@pytest.mark.gpu
def test_without_cupti_the_profile_warns_and_times_with_cuda_events():
    from torch.profiler import ProfilerActivity
    from helpers.sources.capture import capture
    with pytest.warns(RuntimeWarning, match="no GPU events"):
        prof = capture("sdpa_flash", activities=[ProfilerActivity.CPU])
    assert not prof.provenance.cupti and prof.gpu_events().empty
    assert prof.summary()["gpu_time_us"] == prof.provenance.cuda_event_time_us > 0


# replay counterpart, run in CI: tests/independent/test_gpu_counterparts.py::test_recorded_tables_match_raw_events
@pytest.mark.gpu
@pytest.mark.parametrize("stage", ["naive", "sdpa_flash"])
def test_live_tables_match_raw_events(stage, tmp_path):
    from test_trace import independent_view
    prof = profile_stage(stage, mode="live")
    path = prof.save(tmp_path / f"{stage}.json.gz")
    steps, gpu, *_ = independent_view(path)
    table = prof.per_step.set_index("step")
    for step in steps:
        assert table.loc[step, "gpu_events"] == len(gpu[step])
