"""Check a recorded Kineto chrome trace before anything reads it (issue 38):

    python tools/validate_recordings.py [TRACE.json.gz ...]   # default: every trace of every replay set

A trace passes when
* every complete event has a positive `ts` and a non-negative `dur`, and no GPU event (its start
  or its end: a huge `dur`) lies more than SLACK_US outside the span of the host's events (CUPTI can
  corrupt a session's first kernel records on CUDA before 13.1, pytorch issue 192021: ts 0, a ts
  from another clock, a huge dur);
* no GPU event starts before the runtime or driver call that launched it (joined by the
  `correlation` arg; a GPU event whose call is not in the trace was launched before the profiler's
  window opened and belongs to no step);
* every profiled step (`ProfilerStep#N`) launched the same GPU work: the same multiset of kernel,
  memcpy and memset names, each event given to the step in which its launch call started;
* a per-step table handed in (the helpers' `Profile.per_step`, or a per-event table with a `step`
  and a `dur_us` column) agrees with the plain sums of the raw events within 1 %.

This module reads the file with gzip and json and imports nothing of `helpers`: it is the raw side
of the comparison. The recorders (tools/record*.py) call `refuse_invalid` right after they save a
trace, so a corrupt recording never lands in a replay set under its real name.
"""
from __future__ import annotations

import gzip
import json
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "notebooks" / "traces"
GPU_CATS = {"kernel": "kernels", "gpu_memcpy": "memcpys", "gpu_memset": "memsets"}
CALL_CATS = ("cuda_runtime", "cuda_driver")
HOST_CATS = ("cpu_op", "user_annotation", "cuda_runtime", "cuda_driver", "python_function")
STEP = re.compile(r"ProfilerStep#(\d+)")
WHOLE_TRACE = 0           # a trace without ProfilerStep rows is one step, numbered 0
SLACK_US = 1e6            # a GPU event more than 1 s outside the host's span is not of this session
TOLERANCE = 0.01          # a table's figure within 1 % of the raw sum
COUNTED = ("gpu_events", "kernels", "memcpys", "memsets", "gpu_time_us")
CUPTI_NOTE = ("CUPTI before CUDA 13.1 can corrupt the first kernel records of a profiling session "
              "(pytorch issue 192021): record again, after a warm-up profile, or on CUDA 13.1 or later")


class InvalidRecording(ValueError):
    """A trace that fails the checks; its message names the file and every problem found."""


@dataclass
class Report:
    path: Path
    problems: list[str] = field(default_factory=list)
    steps: dict[int, dict[str, float]] = field(default_factory=dict)   # raw sums per step
    unattributed: int = 0   # GPU events whose launch call is outside the trace (launched before it)

    @property
    def ok(self) -> bool:
        return not self.problems


def read(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        document = json.load(f)
    return document["traceEvents"] if isinstance(document, dict) else document


def _num(e: dict, key: str) -> float | None:
    v = e.get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def check_events(events: list[dict], path: Path = Path("<events>")) -> Report:
    """The raw checks of one trace's events; `Report.steps` holds the raw per-step sums."""
    report = Report(path)
    bad = report.problems
    complete = [e for e in events if e.get("ph") == "X"]
    host = [e for e in complete if e.get("cat") in HOST_CATS]
    gpu = [e for e in complete if e.get("cat") in GPU_CATS]
    if not gpu:
        bad.append("no GPU event (kernel, memcpy, memset) at all: the profiler saw no CUDA activity")
    # --- timestamps: positive, finite durations, inside the session --------------------------------
    for e in complete:
        ts, dur = _num(e, "ts"), _num(e, "dur")
        what = f"{e.get('cat')} '{str(e.get('name'))[:60]}'"
        if ts is None or dur is None:
            bad.append(f"{what} has no numeric ts/dur (ts={e.get('ts')!r}, dur={e.get('dur')!r})")
        elif ts <= 0:
            bad.append(f"{what} starts at ts {ts:g}: a zeroed record")
        elif dur < 0:
            bad.append(f"{what} has a negative duration {dur:g} µs")
    if bad:
        return report
    if host:
        lo = min(e["ts"] for e in host)
        hi = max(e["ts"] + e["dur"] for e in host)
        for e in gpu:
            if e["ts"] < lo - SLACK_US or e["ts"] + e["dur"] > hi + SLACK_US:
                bad.append(f"{e['cat']} '{e['name'][:60]}' at ts {e['ts']:.3f}, dur {e['dur']:.3f} µs lies "
                           f"outside the host's span [{lo:.3f}, {hi:.3f}] by more than {SLACK_US / 1e6:g} s")
    # --- each GPU event after the call that launched it ---------------------------------------------
    calls: dict[Any, dict] = {}
    for e in complete:
        if e.get("cat") in CALL_CATS and "correlation" in (e.get("args") or {}):
            calls.setdefault(e["args"]["correlation"], e)
    launched: list[tuple[dict, dict]] = []
    for e in gpu:
        call = calls.get((e.get("args") or {}).get("correlation"))
        if call is None:
            report.unattributed += 1
            continue
        if e["ts"] < call["ts"]:
            bad.append(f"{e['cat']} '{e['name'][:60]}' starts at {e['ts']:.3f}, {call['ts'] - e['ts']:.3f} µs "
                       f"before its launch call {call['name']} (correlation {e['args']['correlation']})")
        launched.append((e, call))
    # --- steps: every GPU event given to the step in which its launch started ------------------------
    spans = sorted((int(STEP.fullmatch(e["name"]).group(1)), e["ts"], e["ts"] + e["dur"])
                   for e in host if STEP.fullmatch(str(e.get("name", ""))))
    if not spans and host:
        spans = [(WHOLE_TRACE, min(e["ts"] for e in host), max(e["ts"] + e["dur"] for e in host))]
    names: dict[int, Counter] = {n: Counter() for n, _, _ in spans}
    sums: dict[int, dict[str, float]] = {n: dict.fromkeys(COUNTED, 0.0) for n, _, _ in spans}
    for e, call in launched:
        step = next((n for n, a, b in spans if a <= call["ts"] <= b), None)
        if step is None:
            continue
        names[step][(e["cat"], e["name"])] += 1
        s = sums[step]
        s["gpu_events"] += 1
        s[GPU_CATS[e["cat"]]] += 1
        s["gpu_time_us"] += e["dur"]
    report.steps = sums
    if len(spans) > 1:
        first = spans[0][0]
        for n, _, _ in spans[1:]:
            if names[n] != names[first]:
                extra, missing = names[n] - names[first], names[first] - names[n]
                say = lambda c: ", ".join(f"{k[1][:50]} ×{v}" for k, v in list(c.items())[:3]) or "nothing"  # noqa: E731
                bad.append(f"step {n} launched other GPU work than step {first}: "
                           f"{say(extra)} more, {say(missing)} fewer")
    return report


def _rows(table: Any) -> list[Mapping]:
    return table.to_dict("records") if hasattr(table, "to_dict") else list(table)


def check_tables(report: Report, tables: Mapping[str, Any]) -> list[str]:
    """Each table's figures per step against the raw sums of `report.steps`, within 1 %.

    A table with `dur_us` and no `gpu_time_us` is one row per GPU event (the kernel tables): its
    durations are summed per step and its rows counted. A step the table has and the raw events do
    not, or the reverse, is a problem too."""
    bad = []
    for label, table in tables.items():
        rows = _rows(table)
        per_event = rows and "dur_us" in rows[0] and "gpu_time_us" not in rows[0]
        if per_event:
            got: dict[int, dict[str, float]] = {}
            for r in rows:
                if r.get("step") is None or r["step"] != r["step"]:   # unattributed (NA / NaN)
                    continue
                g = got.setdefault(int(r["step"]), {"gpu_events": 0, "gpu_time_us": 0.0})
                g["gpu_events"] += 1
                g["gpu_time_us"] += float(r["dur_us"])
        else:
            got = {int(r["step"]): {k: float(r[k]) for k in COUNTED if k in r} for r in rows}
        for step in sorted(set(got) | set(report.steps)):
            if step not in got or step not in report.steps:
                bad.append(f"{label}: step {step} is in {'the raw events' if step in report.steps else 'the table'} only")
                continue
            for key, value in got[step].items():
                want = report.steps[step][key]
                if abs(value - want) > TOLERANCE * abs(want) + 1e-9:
                    bad.append(f"{label}: step {step} {key} reads {value:,.3f}, the raw events sum to {want:,.3f} "
                               f"({100 * (value - want) / want if want else float('inf'):+.1f} %)")
    return bad


def validate(path: Path, tables: Mapping[str, Any] | None = None) -> Report:
    path = Path(path)
    report = check_events(read(path), path)
    if tables and not report.problems:
        report.problems += check_tables(report, tables)
    return report


def profile_tables(profile: Any) -> dict[str, Any]:
    """The per-step tables a page reads off a Profile (duck-typed: nothing of helpers imported):
    its per-step figures and its GPU events of every step (the kernel tables' rows)."""
    return {"Profile.per_step": profile.per_step, "Profile.gpu_events('all')": profile.gpu_events("all")}


def refuse_invalid(path: Path, profile: Any = None) -> Path:
    """The recorders' gate, called right after a trace is saved (with the Profile that wrote it,
    whose tables are held to the raw sums): a trace that fails is moved aside to
    `<name>.rejected` (no reader picks it up, it stays for inspection) and InvalidRecording says
    why. Returns the path of a trace that passes."""
    path = Path(path)
    report = validate(path, None if profile is None else profile_tables(profile))
    if report.ok:
        return path
    rejected = path.with_name(path.name + ".rejected")
    path.replace(rejected)
    shown = "\n  - ".join(report.problems[:12])
    more = f"\n  ... and {len(report.problems) - 12} more" if len(report.problems) > 12 else ""
    raise InvalidRecording(f"refused {path.name}: the trace fails {len(report.problems)} check(s) of "
                           f"tools/validate_recordings.py:\n  - {shown}{more}\nIt was moved to {rejected} "
                           f"for inspection and is not in the replay set. {CUPTI_NOTE}.")


def kineto_traces(root: Path = TRACES) -> list[Path]:
    """Every Kineto chrome trace of every replay set (stages, training, own_model, experiments)."""
    return sorted(p for p in root.rglob("*.json.gz"))


def main(argv: Iterable[str] | None = None) -> int:
    paths = [Path(a) for a in (sys.argv[1:] if argv is None else argv)] or kineto_traces()
    failed = 0
    for p in paths:
        r = validate(p)
        failed += not r.ok
        steps = ", ".join(f"#{n}: {int(s['gpu_events'])} events {s['gpu_time_us']:,.1f} µs" for n, s in r.steps.items())
        print(f"{'ok  ' if r.ok else 'FAIL'} {p.relative_to(ROOT) if p.is_relative_to(ROOT) else p}  [{steps}]"
              + (f"  ({r.unattributed} launched before the window)" if r.unattributed else ""))
        for problem in r.problems:
            print(f"     - {problem}")
    print(f"{len(paths) - failed} of {len(paths)} traces pass")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
