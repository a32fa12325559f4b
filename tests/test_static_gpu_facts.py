"""The book's own pages state a GPU's facts only from the selected replay set (MyST substitutions
filled by book/_ext/replay_gpu.py, or glue in their code cells), or name the GPU they speak of:
built from the H100's set, no page may tell the H200's facts as the book's.

Expected values are read here from the recordings' raw json (gzip + json), not through helpers."""
import gzip
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "notebooks" / "traces"
SETS = [p for p in sorted(TRACES.iterdir()) if p.is_dir() and not p.name.startswith("synthetic")]


def _first_provenance(folder: Path) -> dict:
    with gzip.open(sorted(folder.glob("*__*.json.gz"))[0], "rt") as f:
        return json.load(f)["provenance"]


@pytest.fixture(scope="module")
def replay_gpu():
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    import replay_gpu
    return replay_gpu


@pytest.mark.parametrize("folder", SETS, ids=lambda p: p.name)
def test_the_substitutions_are_the_selected_sets(replay_gpu, folder):
    prov = _first_provenance(folder)
    facts = replay_gpu.facts(folder.name)
    assert facts["replay_gpu"] == prov["gpu"]
    assert facts["replay_sm"] == prov["capability"] and facts["replay_sms"] == str(prov["sm_count"])
    assert facts["replay_torch"] == prov["torch"]
    for other in SETS:   # every set in the repository, whichever is selected
        assert _first_provenance(other)["gpu"] in facts["recorded_gpus"]


def test_the_static_pages_say_no_h200_fact_as_the_books():
    said = {page: (ROOT / "book" / page).read_text() for page in ("run_it_yourself.md", "kernel_names.md")}
    for page, text in said.items():
        for wrong in ("recorded on an H200", "the H200's sm", "as many blocks as the H200", "on the H200 also",
                      "traces/h200/", "beside the\nH200's"):
            assert wrong not in text, (page, wrong)
    assert "{{ replay_gpu }}" in said["run_it_yourself.md"] and "{{ recorded_gpus }}" in said["run_it_yourself.md"]
    assert "{{ replay_sm }}" in said["kernel_names.md"]


def test_the_datasheet_reference_names_every_gpu_it_is_cited_for():
    bib = (ROOT / "book" / "references.bib").read_text()
    entry = bib[bib.index("@misc{nvidia_h200,"):]
    entry = entry[:entry.index("\n}\n")]
    roofline = (ROOT / "helpers" / "chapters" / "roofline.py").read_text()
    parts = re.findall(r'"part": "([A-Z0-9]+)', roofline)      # the GPUs whose datasheet figures a page quotes
    assert parts
    for part in parts:
        assert part in entry, part


def test_the_live_runs_time_is_read_from_its_log():
    page = (ROOT / "book" / "run_it_yourself.md").read_text()
    log = (ROOT / "benchmarks" / "results" / "gpu_live_32" / "notebooks_cold-pooled_call3.log").read_text()
    total = re.search(r"all notebooks: ([\d.]+) s", log)[1]
    assert total not in page          # glued from the log, not typed
    assert "notebooks_{kind}-pooled_call3.log" in page and '{glue:text}`ry_cold`' in page
