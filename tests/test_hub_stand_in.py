"""05b where a replay set has no hub_flash trace (the H100's: its recording machine could not load
the kernel). The page says so in one line, what is missing and why, and compares nothing in its
place: no stand-in trace, no table comparing sdpa_flash with itself, no empty verdict table, no
guess asking whether sdpa_flash is faster than sdpa_flash. A maintainer's message (a command to
type, backticks) never reaches the reader.

The expected words are spelled here; the traces are the repository's."""
from pathlib import Path

import pytest
from IPython.display import HTML

from helpers.chapters import hub_flash as page
from helpers.sources.hub import fetch_hub_flash
from helpers.sources.modes import profile_stage

ROOT = Path(__file__).resolve().parent.parent
H100 = "h100-80gb-hbm3"
pytestmark = pytest.mark.skipif(not (ROOT / "notebooks" / "traces" / H100).is_dir(), reason="no H100 replay set")


@pytest.fixture(scope="module")
def without_hub():
    assert not list((ROOT / "notebooks" / "traces" / H100).glob("hub_flash__*"))   # the premise
    assert list((ROOT / "notebooks" / "traces" / "h200").glob("hub_flash__*"))     # and where it is
    return fetch_hub_flash(mode="replay", gpu=H100), profile_stage("sdpa_flash", mode="replay", gpu=H100)


def test_one_line_says_what_is_missing_and_why(without_hub, capsys, monkeypatch):
    fetch_hub_flash(mode="replay", gpu=H100)
    assert capsys.readouterr().out == ""        # no maintainer's message printed
    (prof, status, loaded, missing), _ = without_hub
    assert prof is None and missing and not loaded
    line = missing.line
    assert "NVIDIA H100 80GB HBM3" in line and "holds no trace" in line and "compares nothing" in line
    assert "could not load the kernel" in line                          # why
    assert "NVIDIA H200" in missing.where_else                          # where it is: the set that has it
    for raw in ("`", "git checkout", "tools/record.py", str(ROOT)):
        assert raw not in line + missing.where_else
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    hf = page.page(prof, status, loaded, missing)
    assert len(shown) == 1 and isinstance(shown[0], HTML)
    summary = shown[0].data.split("<summary>", 1)[1].split("<span", 1)[0]
    assert summary.strip() == line.replace("'", "&#x27;")              # the one visible line
    # the empty sections below it are hidden in the book: from the notebook's first section on
    import json
    cells = json.loads((ROOT / "notebooks" / "05b_hub_flash.ipynb").read_text())["cells"]
    headings = [line for c in cells if c["cell_type"] == "markdown" for line in "".join(c["source"]).splitlines()
                if line.startswith("## ")]
    assert headings[0] == "## Guess first" and "section#guess-first ~ section" in shown[0].data
    assert hf.stand_in and hf.prof is None


def test_every_view_shows_nothing_in_its_place(without_hub):
    (prof, status, loaded, missing), sdpa = without_hub
    hf = page.HubFlash(prof, status, missing)
    others = {"sdpa_flash": sdpa}
    views = [hf.markdown(), hf.questions(sdpa), hf.kernel_table(), hf.op_tree(), hf.binaries(sdpa),
             hf.cpu_lane(sdpa), hf.runtime_calls(), hf.runtime_calls(sdpa), hf.verdicts(sdpa),
             hf.summary_markdown(others), hf.summary_table(others), hf.time_chart(others), hf.timeline(),
             hf.perfetto_note()]
    assert views == [None] * len(views)


def test_a_trace_is_never_judged_against_itself(without_hub):
    _, sdpa = without_hub
    with pytest.raises(ValueError, match="itself"):
        page.verdicts(sdpa, sdpa)


def test_with_a_hub_trace_the_tables_compare_it():
    hub, sdpa = profile_stage("hub_flash", mode="replay", gpu="h200"), profile_stage("sdpa_flash", mode="replay", gpu="h200")
    hf = page.HubFlash(hub, "status")
    b = hf.binaries(sdpa)
    assert list(b.columns) == ["hub_flash", "sdpa_flash", "same?"]
    assert list(hf.cpu_lane(sdpa).index) == ["hub_flash", "sdpa_flash"]
    assert len(hf.verdicts(sdpa)) >= 1
    text = hf.summary_markdown({"sdpa_flash": sdpa, "sdpa_cudnn": sdpa}).data
    assert text.count("sdpa_flash:") == 1 and "**hub_flash**" in text
