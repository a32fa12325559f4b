"""The replay counterpart of every GPU-only test (`@pytest.mark.gpu`, skipped without CUDA): the
same assertion, made on what the recording GPU wrote (its traces, their provenance, ncu's CSV),
read raw. Each test names the GPU test it stands in for.

- tests/test_occupancy.py::test_matches_the_driver_on_real_kernels → test_calculator_page.py::
  test_helpers_occupancy_agrees_with_the_driver_on_every_recorded_kernel (ncu's driver figures).
- tests/test_ncu.py::test_live_reason_is_none_only_with_ncu (skipif no CUDA) asks whether `ncu`
  is on PATH, a fact of the machine a recording cannot hold: no counterpart."""
import copy
import dataclasses

import pytest

from helpers import StageUnavailable, get_stage, load_trace, profile_stage
from helpers.core.profile import Profile
from helpers.core.stages import Shape

from . import raw

TABLES = ("gpu_events", "cpu_ops", "launches", "kernels")


def test_recorded_live_capture_and_replay_have_the_same_types_and_columns():
    """for test_profile.py::test_live_and_replay_return_the_same_types_and_columns: the recording
    is a live capture (its provenance says mode 'live'); loaded as any trace a reader saved, and
    replayed as a stage, it gives one type with the same columns."""
    path = raw.stage_path("naive")
    assert raw.provenance(path)["mode"] == "live"
    live = load_trace(path)
    replayed = profile_stage("naive", mode="replay", quiet=True)
    assert type(live) is type(replayed) and replayed.mode == "replay"
    for table in TABLES:
        a, b = getattr(live, table)(), getattr(replayed, table)()
        assert list(a.columns) == list(b.columns), table
        assert len(a) == len(b) > 0
    assert list(live.per_step.columns) == list(replayed.per_step.columns)


def test_flash_refuses_fp32_on_the_recording_gpu(monkeypatch):
    """for test_profile.py::test_live_flash_with_fp32_raises_no_available_kernel: on the recording
    GPU (sm 9.0, as its provenance says) the flash stage refuses fp32 inputs before torch does."""
    import torch
    p = raw.provenance(raw.stage_path("sdpa_flash"))
    major, minor = (int(x) for x in p["capability"].split("."))
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (major, minor))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: p["gpu"])
    with pytest.raises(StageUnavailable, match="float32"):
        get_stage("sdpa_flash").check(Shape(batch=1, heads=2, seq=128, dtype="float32"), "cuda")
    get_stage("sdpa_flash").check(Shape(batch=1, heads=2, seq=128, dtype="bfloat16"), "cuda")


def test_without_cupti_the_gpu_time_is_the_cuda_events():
    """for test_profile.py::test_without_cupti_the_profile_warns_and_times_with_cuda_events: the
    recording with its GPU events taken out and cupti=False times the forward by the CUDA events
    the recorder measured (the provenance's cuda_event_time_us)."""
    prof = profile_stage("sdpa_flash", mode="replay", quiet=True)
    gpu_cats = set(raw.GPU_CATS)
    events = [e for e in copy.deepcopy(prof.events) if e.get("cat") not in gpu_cats]
    cpu_only = Profile(events, dataclasses.replace(prof.provenance, cupti=False), prof.trace_path)
    want = raw.provenance(raw.stage_path("sdpa_flash"))["cuda_event_time_us"]
    assert not cpu_only.provenance.cupti and cpu_only.gpu_events().empty
    assert cpu_only.summary()["gpu_time_us"] == pytest.approx(want) and want > 0


@pytest.mark.parametrize("stage", ["naive", "sdpa_flash"])
def test_recorded_tables_match_raw_events(stage):
    """for test_profile.py::test_live_tables_match_raw_events: every step's GPU event count."""
    prof = profile_stage(stage, mode="replay", quiet=True)
    table = prof.per_step.set_index("step")
    path = raw.stage_path(stage)
    steps = raw.steps(raw.events(path))
    assert sorted(table.index) == [n for n, _, _ in steps]
    for n, _, _ in steps:
        assert table.loc[n, "gpu_events"] == raw.forward(path, n).count()


def test_recorded_compiled_capture_kept_the_generated_code_and_the_first_call():
    """for test_compiled_flex.py::test_live_compiled_capture_keeps_the_generated_code_and_the_first_call."""
    path = raw.stage_path("naive_compiled")
    p = raw.provenance(path)
    fused = next(e for e in raw.forward(path).gpu if e["name"].startswith("triton_"))
    code = "\n".join(p["extra"]["generated_code"])
    assert f"def {fused['name']}(" in code
    assert p["first_call_seconds"] * 1e6 > raw.forward(path).gpu_us


def test_recorded_flex_built_its_mask_outside_the_forward():
    """for test_compiled_flex.py::test_live_flex_records_the_mask_set_up_outside_the_forward: the
    set-up time is recorded and positive, and no mask-building op runs inside attn_fwd."""
    from helpers import flex
    path = raw.stage_path("flex")
    assert raw.provenance(path)["setup_seconds"] > 0
    f = raw.forward(path)
    assert not any(o["name"] in ("aten::tril", "aten::triu", "create_block_mask") for o in f.ops)
    prof = profile_stage("flex", mode="replay", quiet=True)
    verdicts = flex.verdict_list(prof, profile_stage("sdpa_flash", mode="replay", quiet=True))
    assert next(v for v in verdicts if v.claim.startswith("the block mask is built once")).holds


def test_a_recorded_training_step_has_its_forward_and_backward():
    """for test_training.py::test_a_training_step_profiles_live: in the last step, kernels
    launched inside attn_fwd (≥ 1) and inside attn_bwd (≥ 3), by their launch call's host time,
    and what autograd kept recorded."""
    path = raw.TRACES / "training" / f"sdpa_flash__{raw.DEFAULT}.json.gz"
    evs = raw.events(path)
    f = raw.forward(path)
    spans = {name: [(e["ts"], e["ts"] + e["dur"]) for e in evs if e.get("ph") == "X" and e.get("name") == name
                    and f.lo <= e["ts"] <= f.hi] for name in ("attn_fwd", "attn_bwd")}
    def inside(e, name):
        return any(a <= e["call"]["ts"] <= b for a, b in spans[name])
    kernels = [e for e in f.gpu if e["kind_cat"] == "kernel"]
    assert sum(inside(e, "attn_fwd") for e in kernels) >= 1
    assert sum(inside(e, "attn_bwd") for e in kernels) >= 3
    assert raw.provenance(path)["extra"]["training"]["held_bytes"] > 0
    from helpers.training import core_backward as bw
    from helpers.training import sources_modes as tm
    c = bw.phase_counts(tm.load_step("sdpa_flash"))
    assert c["forward"]["kernels"] == sum(inside(e, "attn_fwd") for e in kernels)
    assert c["backward"]["kernels"] == sum(inside(e, "attn_bwd") for e in kernels)


def test_recorded_ncu_reads_one_forward():
    """for test_ncu.py::test_live_ncu_reads_one_forward: ncu's CSV of sdpa_flash has one row per
    kernel of the forward, with the trace's registers, and its report kept beside it."""
    csv_path = raw.TRACES / "ncu" / f"sdpa_flash__{raw.DEFAULT}.csv"
    rows, _ = raw.ncu_table(csv_path)
    kernels = [e for e in raw.forward(raw.stage_path("sdpa_flash")).gpu if e["kind_cat"] == "kernel"]
    assert len(rows) == len(kernels)
    assert [int(float(r["launch__registers_per_thread"])) for r in rows] == [e["args"]["registers per thread"] for e in kernels]
    assert csv_path.with_suffix(".ncu-rep").exists()


def test_recorded_profile_code_matches_the_raw_events():
    """for test_own_traces.py::test_profile_code_on_the_gpu_matches_the_raw_events: a recording
    profile_code made (chapter 10's encoder layer): per step, its GPU event count and busy time."""
    from helpers import Session, breakdown
    name = "encoder_forward"
    path = raw.TRACES / "own_model" / f"{name}.json.gz"
    prof = Session(mode="replay").own_model(name)
    table = prof.per_step.set_index("step")
    got = breakdown.gpu_breakdown(prof).set_index("step")
    steps = raw.steps(raw.events(path))
    assert sorted(prof.steps) == [n for n, _, _ in steps]
    for n, _, _ in steps:
        f = raw.forward(path, n, name)
        assert table.loc[n, "gpu_events"] == f.count() > 0
        assert got.loc[n, "busy_us"] == pytest.approx(f.busy_us, abs=1e-3)
    again = load_trace(path)
    for t in TABLES:
        assert getattr(again, t)("all").shape == getattr(prof, t)("all").shape


@pytest.mark.parametrize("name", ["encoder_forward", "encoder_train_step"])
def test_a_recorded_experiment_has_the_stage_tables_and_its_threads(name):
    """for test_own_traces.py::test_an_experiment_live_and_replayed_have_the_same_tables_and_threads."""
    from helpers import Session
    prof = Session(mode="replay").own_model(name)
    stage = profile_stage("naive", mode="replay", quiet=True)
    assert prof.annotation == name
    for t in TABLES:
        assert list(getattr(prof, t)().columns) == list(getattr(stage, t)().columns)
    assert list(prof.per_step.columns) == list(stage.per_step.columns)
    f = raw.forward(raw.TRACES / "own_model" / f"{name}.json.gz", None, name)
    assert len(prof.gpu_events()) == f.count() > 0
    threads = {f.root["tid"]} | {o["tid"] for o in f.ops_all}
    assert prof.cpu_ops()["tid"].nunique() == len(threads)
    assert (len(threads) == 2) == ("train" in name)
