"""05b where a replay set has no hub_flash trace (the H100's: its recording machine could not reach
the Hub): sdpa_flash's trace stands in, and every table says so. A column headed hub_flash over
sdpa_flash's kernel, a "same?" column comparing a trace with itself, or verdicts judging it, would
tell the reader the Hub's binary was measured when it was not.

The expected names are spelled here from the stage names; the traces are the repository's."""
from pathlib import Path

import pytest

from helpers.chapters import hub_flash as page
from helpers.sources.hub import fetch_hub_flash
from helpers.sources.modes import profile_stage

ROOT = Path(__file__).resolve().parent.parent
H100 = "h100-80gb-hbm3"
pytestmark = pytest.mark.skipif(not (ROOT / "notebooks" / "traces" / H100).is_dir(), reason="no H100 replay set")


@pytest.fixture(scope="module")
def without_hub():
    assert not list((ROOT / "notebooks" / "traces" / H100).glob("hub_flash__*"))   # the premise
    return fetch_hub_flash(mode="replay", gpu=H100), profile_stage("sdpa_flash", mode="replay", gpu=H100)


def test_the_stand_in_is_sdpa_flash_and_says_where_the_trace_is_missing(without_hub, capsys):
    fetch_hub_flash(mode="replay", gpu=H100)
    said = capsys.readouterr().out
    assert f"notebooks/traces/{H100}/hub_flash__" in said and str(ROOT) not in said   # the repository's path, not this machine's
    (prof, _, loaded, stand_in), _ = without_hub
    assert stand_in and not loaded and prof.stage == "sdpa_flash"


def test_tables_name_the_stand_in_and_compare_nothing(without_hub):
    (prof, *_), sdpa = without_hub
    b = page.binaries({"hub_flash": prof, "sdpa_flash": sdpa})
    assert list(b.columns) == ["sdpa_flash (in place of hub_flash)", "sdpa_flash"]
    lane = page.cpu_lane({"hub_flash": prof, "sdpa_flash": sdpa})
    assert list(lane.index) == ["sdpa_flash (in place of hub_flash)", "sdpa_flash"]
    assert len(page.verdicts(prof, sdpa)) == 0


def test_with_a_hub_trace_the_tables_compare_it():
    hub, sdpa = profile_stage("hub_flash", mode="replay", gpu="h200"), profile_stage("sdpa_flash", mode="replay", gpu="h200")
    b = page.binaries({"hub_flash": hub, "sdpa_flash": sdpa})
    assert list(b.columns) == ["hub_flash", "sdpa_flash", "same?"]
    assert list(page.cpu_lane({"hub_flash": hub, "sdpa_flash": sdpa}).index) == ["hub_flash", "sdpa_flash"]
    assert len(page.verdicts(hub, sdpa)) >= 1
