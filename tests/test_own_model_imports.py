"""10's Hugging Face experiment where `transformers` is installed but refuses to import.

On the lent H100 (gpu_live_31) `pip install kernels` had brought huggingface_hub 2.4.0 beside a
transformers that wants <2.0: `import transformers` raised ImportError, and 10's cell showed the
raw traceback. Being installed is not being usable: the page must give the reason in one line
and replay the recording (or say there is none), never raise. A fake `transformers` package that
raises that very error on import stands in for the broken install."""
from __future__ import annotations

import sys

import pytest

from helpers.core.errors import StageUnavailable
from helpers.own_model import sources
from helpers.sources import live_cache, modes

HUB_ERROR = ("huggingface-hub>=1.5.0,<2.0 is required for a normal functioning of this module, "
             "but found huggingface-hub==2.4.0.")


@pytest.fixture
def broken_transformers(tmp_path, monkeypatch):
    pkg = tmp_path / "transformers"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(f"raise ImportError({HUB_ERROR!r})\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "transformers", raising=False)
    sources.import_problem.cache_clear()
    # a GPU machine, as far as the experiment's checks go (nothing here touches CUDA itself)
    monkeypatch.setattr(sources, "cuda_available", lambda: True)
    monkeypatch.setattr(modes, "cuda_available", lambda: True)
    # no session cache: its key is the CUDA device's name
    monkeypatch.setattr(live_cache, "profile", lambda kind, name, measure, fresh=False: measure())
    yield
    sources.import_problem.cache_clear()


def test_installed_but_broken_is_a_reason(broken_transformers):
    why = sources.import_problem("transformers")
    assert why is not None and "does not import" in why and "huggingface-hub>=1.5.0,<2.0" in why


def test_make_step_raises_the_reason_not_the_import_error(broken_transformers):
    with pytest.raises(StageUnavailable, match="does not import.*huggingface-hub"):
        sources.make_step("hf_gpt2_forward")


def test_with_a_recording_the_page_replays_it_and_says_why(broken_transformers, capsys):
    prof = sources.profile_experiment("hf_gpt2_forward", "auto")
    out = capsys.readouterr().out
    assert prof is not None and prof.mode == "replay" and prof.stage == "hf_gpt2_forward"
    assert "does not import" in out and "Showing the recorded trace instead" in out


def test_without_a_recording_the_page_says_so(broken_transformers, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sources, "recording", lambda name, gpu=None: tmp_path / "none.json.gz")
    assert sources.available("hf_gpt2_forward") is False
    assert sources.profile("hf_gpt2_forward") is None
    out = capsys.readouterr().out
    assert "no recording here, and it cannot run live" in out and "does not import" in out
