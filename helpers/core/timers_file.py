"""A replay set's caller's timer, read: `timers.json` (written on a GPU by tools/record_timers.py)
merged into a recorded Profile's provenance. `Profile.load` calls `merge` on every replayed
trace, so this is the one place that decides which timer a recording's verdicts read.

timers.json sits at the top of a set (`ReplaySet.path("timers", "timers")`); its "forwards" are
keyed by a stage trace's file stem (`<stage>__<shape>`), its "training_steps" by the stem of a
trace under the set's training/ folder. A record found there replaces the trace's own timer
fields; a set without timers.json leaves the trace's provenance as it was recorded (no caller's
timer in the book's sets recorded before it: their verdicts are then not drawn)."""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from .replay_set import KINDS

FILE = "timers" + KINDS["timers"][1]          # timers.json
TRAINING_DIR = KINDS["training"][0]           # training/


def locate(trace_path: Path) -> tuple[Path, str, str]:
    """(timers.json of the trace's set, its section, the record's key) for a recorded trace."""
    trace_path = Path(trace_path)
    key = trace_path.name.split(".", 1)[0]
    if trace_path.parent.name == TRAINING_DIR:
        return trace_path.parent.parent / FILE, "training_steps", key
    return trace_path.parent / FILE, "forwards", key


@lru_cache(maxsize=16)
def _read(path: str, mtime_ns: int) -> dict:
    return json.loads(Path(path).read_text())


def document(path: Path) -> dict | None:
    """A timers.json as a dict (cached per file version); None where the set has none."""
    path = Path(path)
    if not path.is_file():
        return None
    return _read(str(path), path.stat().st_mtime_ns)


def record(trace_path: Path) -> tuple[dict | None, dict | None]:
    """(the timers.json document of the trace's set or None, the trace's record in it or None)."""
    where, section, key = locate(trace_path)
    doc = document(where)
    if doc is None:
        return None, None
    return doc, (doc.get(section) or {}).get(key)


def fields(trace_path: Path) -> dict:
    """The provenance fields timers.json gives a recorded trace: {} where the set has no
    timers.json; where it has one, the trace's record, or no timer at all where it has none for
    this trace (a record that failed to time is not replaced by the trace's older one)."""
    doc, rec = record(trace_path)
    if doc is None:
        return {}
    date = str((doc.get("provenance") or {}).get("date") or "")[:10]
    if not rec or not rec.get("loop_us"):
        return {"loop_us": None, "loop_calls": None, "loop_busy_us": None, "timers": None}
    return {"loop_us": [float(x) for x in rec["loop_us"]], "loop_calls": rec.get("loop_calls"),
            "loop_busy_us": None if rec.get("busy_us") is None else float(rec["busy_us"]),
            "timers": f"timers.json ({date})" if date else "timers.json"}
