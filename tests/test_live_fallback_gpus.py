"""Live on a GPU that cannot run a stage (flash on a T4), that stage falls back to its recording,
made on another GPU. The page must not compare the reader's GPU with the recorded one as if they
were one: the banner says which stage is whose, and every verdict comparing it says where each
side ran.

The GPU is faked: the decision says live, the capture returns the repository's recordings with
the device renamed to a T4 (synthetic profiles), and raises StageUnavailable for sdpa_flash, as
its requirement does on sm 7.5. The expected words are spelled here."""
import dataclasses

import pytest

import helpers
from helpers.core.errors import StageUnavailable
from helpers.sources import capture as capturing
from helpers.sources import modes
from helpers.sources.replay import trace_path

T4 = "Tesla T4 (fake)"


@pytest.fixture
def t4(monkeypatch, tmp_path):
    def capture(stage, shape=helpers.DEFAULT_SHAPE, **_):
        if stage == "sdpa_flash":
            raise StageUnavailable("FlashAttention-2 needs an Ampere-or-newer GPU and fp16/bf16.")
        recorded = helpers.Profile.load(trace_path(stage), mode="live")
        prov = dataclasses.replace(recorded.provenance, gpu=T4, capability="7.5", sm_count=40, mode="live")
        return helpers.Profile(recorded.events, prov, None)

    monkeypatch.setattr(modes, "cuda_available", lambda: True)
    monkeypatch.setattr(capturing, "capture", capture)
    monkeypatch.setattr(capturing, "_device_key", lambda: (T4, "0.0"))
    monkeypatch.setenv("ATTN_PROFILED_CACHE", str(tmp_path))


def test_the_banner_names_each_stages_gpu_and_the_fallback(t4, capsys):
    profiles = helpers.Session().stages(["naive", "sdpa_flash", "flex"])
    out = capsys.readouterr().out
    assert profiles["naive"].provenance.gpu == T4 and profiles["sdpa_flash"].provenance.gpu == "NVIDIA H200"
    assert profiles["sdpa_flash"].mode == "replay"
    assert "Profiled naive, flex live on Tesla T4 (fake)" in out
    assert "Replaying sdpa_flash: recorded on NVIDIA H200" in out
    assert "sdpa_flash could not run on this GPU: its figures are the NVIDIA H200's recording" in out
    assert "compares two GPUs" in out


def test_every_verdict_across_the_two_gpus_says_where_each_side_ran(t4, capsys):
    from helpers.chapters import claims
    profiles = helpers.Session().stages(["sdpa_flash", "flex"])
    rows = claims.check("flex", profiles)
    assert len(rows)
    for evidence in rows["this trace"]:
        assert evidence.startswith("Two GPUs: flex live on Tesla T4 (fake); sdpa_flash recorded on NVIDIA H200. ")


def test_one_gpu_verdicts_carry_no_note(t4, capsys):
    from helpers.chapters import claims
    profiles = helpers.Session().stages(["naive", "inplace"])       # both live on the T4
    assert not any(e.startswith("Two GPUs") for e in claims.check("inplace", profiles)["this trace"])
    replayed = helpers.Session(mode="replay").stages(["sdpa_flash", "flex"])   # both the H200's
    assert not any(e.startswith("Two GPUs") for e in claims.check("flex", replayed)["this trace"])


def test_load_stages_banner_does_not_name_one_gpu_for_all(t4, capsys):
    modes.load_stages(["naive", "sdpa_flash"], mode="auto")
    out = capsys.readouterr().out
    assert "live on Tesla T4 (fake)" in out and "recorded on NVIDIA H200" in out
