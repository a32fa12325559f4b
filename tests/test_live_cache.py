"""Live, the training steps (11), the "Your own model" experiments (10) and the shared-memory
experiment (07) are measured once a session and kept in ATTN_PROFILED_CACHE, as the stages'
forwards are: a later run (the warm pass) shows the same measurement without profiling again.

The GPU is faked (the decision says live; what would profile returns a recorded trace as if it
had just measured it), so that what is checked is the caching, on any machine: how many times
the profiler ran, and that a later run shows the very events and tables the first measured."""
import gzip
import json
import sys
import types

import pytest

import helpers
from conftest import ROOT
from helpers.core.profile import Profile, Provenance
from helpers.sources import capture as capturing
from helpers.sources import modes
from helpers.sources import own_code
from helpers.own_model import sources as own_model
from helpers.smem_cliff import sources as smem_cliff

SET = ROOT / "notebooks" / "traces" / "h200"


@pytest.fixture
def fake_gpu(monkeypatch, tmp_path):
    """A live session on a fake GPU: returns the list of what the profiler ran."""
    ran = []

    def capture(stage, shape=helpers.DEFAULT_SHAPE, step=None, **_):
        training = step is not None and step.name == "training"
        ran.append(("training" if training else "forward", stage))
        path = (SET / "training" if training else SET) / f"{stage}__{shape.key}.json.gz"
        prof = Profile.load(path, mode="live")
        prof.trace_path = None    # a fresh capture: written nowhere yet
        return prof

    monkeypatch.setattr(modes, "cuda_available", lambda: True)
    monkeypatch.setattr(own_model, "cuda_available", lambda: True)
    monkeypatch.setattr(capturing, "capture", capture)
    monkeypatch.setattr(capturing, "_device_key", lambda: ("Fake GPU", "0.0"))
    monkeypatch.setenv("ATTN_PROFILED_CACHE", str(tmp_path))
    return ran


def test_training_steps_are_kept_and_a_later_run_reuses_them(fake_gpu, capsys):
    stages = ["naive", "sdpa_flash"]
    first = helpers.Session(mode="live").training(stages)
    assert fake_gpu == [("training", "naive"), ("training", "sdpa_flash")]
    assert not any(p.reused for p in first.values())
    capsys.readouterr()
    later = helpers.Session(mode="live").training(stages)       # the warm run
    assert len(fake_gpu) == 2                                   # nothing profiled again
    for stage in stages:
        assert later[stage].reused and later[stage].events == first[stage].events
        assert later[stage].summary().equals(first[stage].summary())
        assert later[stage].provenance.extra == first[stage].provenance.extra   # what autograd kept
    assert "naive, sdpa_flash: measured earlier this session and reused" in capsys.readouterr().out
    helpers.Session(mode="live").training(["naive"], fresh=True)
    assert fake_gpu[-1] == ("training", "naive") and len(fake_gpu) == 3


def test_own_model_experiments_are_kept_with_their_annotation(fake_gpu, monkeypatch, capsys):
    profiled = []

    def profile_code(step, annotation="my_code", quiet=False, **_):
        profiled.append(annotation)
        with gzip.open(SET / "own_model" / f"{annotation}.json.gz", "rt") as f:
            document = json.load(f)
        events = document.pop("traceEvents")
        recorded = document.pop("provenance")
        provenance = Provenance(**(recorded | {"mode": "live", "source": "code",
                                               "extra": dict(recorded.get("extra") or {}) | {"annotation": annotation}}))
        return Profile(events, provenance, None, annotation, document)

    monkeypatch.setattr(own_code, "profile_code", profile_code)
    monkeypatch.setattr(own_model, "make_step", lambda name: (lambda: None))
    first = helpers.Session(mode="live").own_model("encoder_forward")
    assert profiled == ["encoder_forward"] and not first.reused
    later = helpers.Session(mode="live").own_model("encoder_forward")
    assert profiled == ["encoder_forward"]                      # kept: not profiled again
    assert later.reused and later.annotation == first.annotation == "encoder_forward"
    assert later.events == first.events and later.metadata.keys() >= first.metadata.keys() - {"displayTimeUnit"}
    assert later.summary().equals(first.summary())
    assert later.kernels(later.forward_step).equals(first.kernels(first.forward_step))
    assert "measured earlier this session and reused" in later.banner()
    helpers.Session(mode="live").own_model("encoder_forward", fresh=True)
    assert profiled == ["encoder_forward"] * 2


def test_the_shared_memory_experiment_is_kept(fake_gpu, monkeypatch):
    with gzip.open(SET / "experiments" / "smem_cliff.json.gz", "rt") as f:
        recorded = json.load(f)
    runs = []
    monkeypatch.setitem(sys.modules, "cupy", types.ModuleType("cupy"))
    monkeypatch.setattr(smem_cliff, "smem_cliff_events", lambda: runs.append(1) or recorded["traceEvents"])

    class Props:
        major, minor, multi_processor_count = 9, 0, 132
    monkeypatch.setattr("torch.cuda.get_device_properties", lambda i: Props())
    monkeypatch.setattr("torch.cuda.current_device", lambda: 0)
    monkeypatch.setattr("torch.cuda.get_device_name", lambda *a: "Fake GPU")
    events, prov, line = helpers.Session(mode="live").smem_cliff()
    assert runs == [1] and line == "Ran the experiment live on Fake GPU."
    again, prov_again, line_again = helpers.Session(mode="live").smem_cliff()
    assert runs == [1] and again == events and prov_again == prov
    assert "earlier this session: reused" in line_again
    helpers.Session(mode="live").smem_cliff(fresh=True)
    assert runs == [1, 1]


def test_a_broken_entry_is_measured_again(fake_gpu, tmp_path):
    helpers.Session(mode="live").training(["naive"])
    [entry] = tmp_path.rglob("training/naive__*.json.gz")
    entry.write_bytes(b"not a trace")
    prof = helpers.Session(mode="live").training(["naive"])["naive"]
    assert len(fake_gpu) == 2 and not prof.reused
