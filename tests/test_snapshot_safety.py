"""No code runs from a recording: a memory snapshot (`snapshot__<stage>__<shape>.pickle.gz`) is a
pickle, and a pickle can name any function to call while it loads. A replay set shared with a
reader must not run its code on their machine: the snapshot is read with an unpickler that admits
plain data only (helpers.training.core_backward.read_snapshot), and a hostile one is refused, with a message
that says so, before anything of it runs.

The hostile snapshot here is a real one with one allocator event replaced by an object whose
`__reduce__` writes a file; plain `pickle.loads` of the same bytes writes it (the control), the
book's loaders must not.
"""
from __future__ import annotations

import gzip
import re
import pickle
import shutil
from pathlib import Path

import pytest

from helpers.training import core_backward as bw
from helpers.core import config
from helpers.core.errors import TraceError
from helpers.training import sources_modes as training_modes

RECORDED = Path(__file__).resolve().parent.parent / "notebooks" / "traces" / "h200" / "training"


class Hostile:
    """Unpickled, it calls exec, which writes `path`: what a crafted snapshot would do."""

    def __init__(self, path: Path):
        self.path = str(path)

    def __reduce__(self):
        return exec, (f"open({self.path!r}, 'w').write('ran')",)


def hostile_snapshot(path: Path, protocol: int) -> bytes:
    real = pickle.loads(gzip.decompress(next(RECORDED.glob("snapshot__sdpa_flash__*.pickle.gz")).read_bytes()))
    real["device_traces"][0][0] = Hostile(path)
    return pickle.dumps(real, protocol=protocol)


@pytest.mark.parametrize("protocol", range(0, pickle.HIGHEST_PROTOCOL + 1))
def test_a_hostile_snapshot_is_refused_and_runs_nothing(tmp_path, protocol):
    target = tmp_path / "written-by-the-snapshot"
    data = hostile_snapshot(target, protocol)
    # the control: an ordinary unpickler runs it
    pickle.loads(data)
    assert target.read_text() == "ran"
    target.unlink()
    for read in (bw.read_snapshot, bw.snapshot_timeline):
        with pytest.raises(TraceError) as err:
            read(data)
        message = str(err.value)
        # protocols 0-2 spell the module as Python 2 did
        assert "refused" in message and re.search(r"(builtins|__builtin__)\.exec", message), message
        assert "run code" in message and "Nothing of it was run" in message, message
        assert not target.exists(), f"{read.__name__} ran the snapshot's code"


def test_a_copied_replay_set_with_a_hostile_snapshot_is_refused(tmp_path, monkeypatch):
    # a replay set as a reader receives it: the recorded one, with one snapshot replaced
    target = tmp_path / "written-by-the-snapshot"
    folder = tmp_path / "replay" / "h200" / "training"
    folder.mkdir(parents=True)
    shutil.copy(RECORDED / "memory.json", folder)
    for f in RECORDED.glob("snapshot__*.pickle.gz"):
        shutil.copy(f, folder)
    hostile = next(folder.glob("snapshot__sdpa_flash__*.pickle.gz"))
    hostile.write_bytes(gzip.compress(hostile_snapshot(target, 4)))
    monkeypatch.setattr(config, "REPLAY_DIR", tmp_path / "replay")
    # the untouched snapshot still loads, as the pickle memory_viz opens (the download's bytes)
    good = training_modes.snapshots(("naive",), mode="replay")["naive"][0]
    assert good == gzip.decompress(next(RECORDED.glob("snapshot__naive__*.pickle.gz")).read_bytes())
    assert len(bw.snapshot_timeline(good)) > 0
    with pytest.raises(TraceError) as err:
        training_modes.snapshots(("naive", "sdpa_flash"), mode="replay")
    assert str(hostile) in str(err.value) and "refused" in str(err.value)
    assert not target.exists()


def test_what_is_not_a_snapshot_is_refused_with_a_message():
    for data, says in ((b"not a pickle", "not a readable memory snapshot"),
                       (pickle.dumps([1, 2, 3]), "not a memory snapshot"),
                       (pickle.dumps({"segments": []})[:-3], "not a readable memory snapshot"),
                       (pickle.dumps({"a": {1, 2}}), "holds a set")):
        with pytest.raises(TraceError, match=says):
            bw.read_snapshot(data)
    # plain data of every kind a snapshot holds reads back equal
    plain = {"segments": [{"blocks": [{"size": 2 ** 40, "state": "active_allocated"}]}], "t": (1.5, None, True, b"x")}
    assert bw.read_snapshot(pickle.dumps(plain)) == plain
