"""Live, a stage is profiled once a session: every page that shows it reuses that measurement.

The GPU is faked here (the decision says live; `capture` returns a recorded trace as if it had
just profiled it), so that what is checked is the caching, on any machine: how many times the
profiler ran, and that a later page shows the very events an earlier one measured."""
import pytest

import helpers
from helpers import Shape
from helpers.sources import capture as capturing
from helpers.sources import modes
from helpers.sources.replay import trace_path

SMALL = Shape(batch=1, heads=1, seq=128)   # any shape: the fake never runs a forward


@pytest.fixture
def fake_gpu(monkeypatch, tmp_path):
    """A live session on a fake GPU: returns the list of (stage, shape) the profiler ran."""
    ran = []

    def capture(stage, shape=helpers.DEFAULT_SHAPE, **_):
        ran.append((stage, shape))
        prof = helpers.Profile.load(trace_path(stage), mode="live")
        prof.trace_path = None    # as a fresh capture: it has not been written anywhere yet
        return prof

    monkeypatch.setattr(modes, "cuda_available", lambda: True)
    monkeypatch.setattr(capturing, "capture", capture)
    monkeypatch.setattr(capturing, "_device_key", lambda: ("Fake GPU", "0.0"))
    monkeypatch.setenv("ATTN_PROFILED_CACHE", str(tmp_path))
    return ran


def test_a_later_page_reuses_the_stages_an_earlier_page_profiled(fake_gpu, capsys):
    first = modes.profile_stages(["naive", "inplace"], mode="live")        # 02's first cell
    assert fake_gpu == [("naive", helpers.DEFAULT_SHAPE), ("inplace", helpers.DEFAULT_SHAPE)]
    assert not any(p.reused for p in first.values())
    capsys.readouterr()

    later = modes.profile_stages(["naive", "inplace", "sdpa_math"], mode="live")   # 03's
    assert fake_gpu[2:] == [("sdpa_math", helpers.DEFAULT_SHAPE)]          # only the new stage ran
    for stage in ("naive", "inplace"):
        assert later[stage].reused and later[stage].events == first[stage].events
        assert later[stage].summary().equals(first[stage].summary())
    banner = capsys.readouterr().out
    assert "naive, inplace: measured earlier this session and reused" in banner
    assert "Profiled naive, inplace, sdpa_math live on" in banner


def test_fresh_profiles_again_and_a_new_shape_is_its_own_measurement(fake_gpu):
    modes.profile_stage("naive", mode="live", quiet=True)
    again = modes.profile_stage("naive", mode="live", quiet=True, fresh=True)
    assert len(fake_gpu) == 2 and not again.reused
    modes.profile_stage("naive", SMALL, mode="live", quiet=True)
    assert fake_gpu[-1] == ("naive", SMALL) and len(fake_gpu) == 3
    assert modes.profile_stage("naive", SMALL, mode="live", quiet=True).reused and len(fake_gpu) == 3


def test_a_broken_cache_entry_is_profiled_again(fake_gpu, tmp_path):
    modes.profile_stage("naive", mode="live", quiet=True)
    [entry] = tmp_path.rglob("naive__*.json.gz")
    entry.write_bytes(b"not a trace")
    prof = modes.profile_stage("naive", mode="live", quiet=True)
    assert len(fake_gpu) == 2 and not prof.reused


def test_the_roofline_timings_reuse_the_stage_pages_measurements(fake_gpu, capsys):
    """09's timed forwards (a Session's `timed(counters)`) come from the same cache as the pages'."""
    from types import SimpleNamespace
    modes.profile_stage("sdpa_flash", mode="live", quiet=True)
    live_counters = SimpleNamespace(mode="live", gpu="Fake GPU", kernels={("sdpa_flash", helpers.DEFAULT_SHAPE.key): None})
    [timed] = helpers.Session(mode="live").timed(live_counters, quiet=True)
    assert timed.reused and timed.stage == "sdpa_flash" and len(fake_gpu) == 1
