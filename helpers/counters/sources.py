"""Nsight Compute's counters of a page, collected: live where CUDA, ncu and the GPU's permission
allow (every forward the page needs in ONE ncu process, what an earlier page of the session
measured reused from the session's cache), else the replay set's recordings, with the reason."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import pandas as pd

from ..core import config
from .core import Counters, calibrations as _calibrations
from ..core.ncu_tables import short_version
from ..core.profile import TraceError
from ..core.replay_set import ReplaySet
from ..core.stages import DEFAULT_SHAPE, Shape
from ..sources import ncu
from ..sources.modes import decide, resolve_mode


def _replay(jobs: list[tuple[str, Shape]], gpu: str, reason: str) -> Counters:
    # where they were read from, shown with the counters (the replay set's ncu/ folder)
    prov = {**ncu.provenance(gpu), "folder": ncu.shown(ncu.recording_dir(gpu))}
    kernels = {(s, sh.key): ncu.load(s, sh, gpu) for s, sh in jobs}
    calibration = {}
    for c in _calibrations(prov):
        table = ncu.recording_dir(gpu) / f"{c['name']}.csv"
        report = table.with_suffix(".ncu-rep")
        try:
            calibration[c["name"]] = ncu.kernels(ncu.read_csv(table))
            calibration[c["name"]].attrs |= {"csv": table, "report": report if report.exists() else None,
                                             "name": c["name"]}
        except (TraceError, ValueError, KeyError) as err:
            raise TraceError(f"The calibration matmul {table} is missing or corrupt ({err}). Restore it "
                             f"with `git checkout -- {table}`, or record it on a GPU with ncu: "
                             f"`{ncu.record_command()}`.") from err
    return Counters("replay", prov.get("gpu", gpu), prov, kernels, calibration, reason)


def _progress(total: int):
    """An ipywidgets progress bar, shown only live (the static book has nothing to wait for)."""
    import ipywidgets as w
    from IPython.display import display
    bar = w.IntProgress(min=0, max=total, description="ncu")
    label = w.HTML()
    display(w.HBox([bar, label]))
    return bar, label


def cache_dir(gpu: str, torch_version: str) -> Path:
    """Where live measurements of this GPU and torch are kept, so that the next page (or the next
    run) reuses them instead of running ncu again: the session's one cache (config.cache_dir)."""
    return config.cache_dir(gpu, torch_version)


def _cached(name: str, out: Path, metrics: Sequence[str] = ()) -> pd.DataFrame | None:
    """The kernels of one live recording, if this machine made it already (this session's cache)
    with every one of `metrics`: a table of a smaller metric set is measured again (and replaced)."""
    table = out / f"{name}.csv"
    if table.exists():
        try:
            frame = ncu.read_csv(table)
            if not set(metrics) <= set(frame.columns):
                return None
            result = ncu.kernels(frame)
            report = out / f"{name}.ncu-rep"
            result.attrs |= {"csv": table, "report": report if report.exists() else None, "name": name}
            return result
        except (TraceError, ValueError, KeyError):
            pass   # a broken cache entry is measured again
    return None


def own_replay_set(device_name: str) -> ReplaySet | None:
    """This GPU's own replay set, where one holds Nsight Compute counters recorded on a GPU of
    this very name (its ncu/provenance.json says so); else None."""
    own = ReplaySet.of_device(device_name)
    try:
        recorded_on = json.loads(own.path("ncu", "provenance.json").read_text()).get("gpu")
    except (OSError, ValueError):
        return None
    return own if recorded_on == device_name else None


def _from_own_set(jobs: list[tuple[str, Shape]], device_name: str) -> tuple[dict, ReplaySet | None]:
    """The sweep's forwards from this GPU's own replay set, each where it recorded one; {} (and
    None) where this GPU has no set, so that they are measured live as the rest."""
    own = own_replay_set(device_name)
    if own is None:
        return {}, None
    found = {}
    for stage, shape in jobs:
        try:
            table = ncu.load(stage, shape, own.gpu)
        except TraceError:
            continue
        table.attrs["recorded"] = own.gpu
        found[(stage, shape.key)] = table
    return found, own


def _live(stage_jobs: list[tuple[str, Shape]], gpu: str | None, metric_set: str = "page",
          recorded_sweep: bool = True) -> Counters:
    import torch

    from ..sources.provenance import device_facts
    props = torch.cuda.get_device_properties(0)
    out = cache_dir(props.name, torch.__version__)
    # the sweep (every shape but the article's): this GPU's own recordings where it has them
    sweep = [(s, sh) for s, sh in stage_jobs if sh != DEFAULT_SHAPE]
    taken, own = _from_own_set(sweep, props.name) if recorded_sweep else ({}, None)
    stage_jobs = [(s, sh) for s, sh in stage_jobs if (s, sh.key) not in taken]
    metrics = ncu.metric_set(metric_set, ncu.find_ncu(), out)
    recorded = ncu.provenance(gpu) if (ncu.recording_dir(gpu) / "provenance.json").exists() else {}
    calibrations = _calibrations(recorded) or [
        {"name": ncu.calibration_name(d, m, n, k), "dtype": d, "m": m, "n": n, "k": k, "flops": 2 * m * n * k}
        for d, m, n, k in (("bfloat16", 4096, 4096, 4096), ("float32", 2048, 2048, 2048))]
    jobs = [ncu.calibration_job(c["dtype"], c["m"], c["n"], c["k"]) for c in calibrations] + \
        [ncu.stage_job(stage, shape) for stage, shape in stage_jobs]
    found = {j["name"]: _cached(j["name"], out, metrics) for j in jobs}
    missing = [j for j in jobs if found[j["name"]] is None]
    reused = len(jobs) - len(missing)
    if missing:
        # every forward this page still needs, in ONE profiled process (ncu's report split by
        # NVTX range), with a progress bar that moves as each finishes
        bar, label = _progress(len(jobs))
        bar.value = reused
        label.value = f"<small>{len(missing)} forwards under one ncu process</small>"

        def done(name: str) -> None:
            bar.value += 1
            label.value = f"<small>{name}</small>"
        try:
            found |= ncu.measure_jobs(missing, out, on_done=done, metrics=metrics)
        except ncu.CountersUnavailable:
            raise
        except RuntimeError as err:
            # one GPU per page: a stage that can't run here sends every stage to the recording
            raise ncu.CountersUnavailable(f"the page's forwards did not run under ncu on {props.name} "
                                          f"({str(err)[:300]})") from err
        bar.description, label.value = "done", f"<small>reports in {out}</small>"
    calibration = {c["name"]: found[c["name"]] for c in calibrations}
    kernels = {(stage, shape.key): found[ncu.recording_name(stage, shape)] for stage, shape in stage_jobs}
    kernels |= taken
    facts = device_facts()
    prov = {**{k: facts[k] for k in ("gpu", "capability", "sm_count", "driver")},
            "ncu": ncu.version(ncu.find_ncu()), "torch": torch.__version__, "folder": str(out),
            "calibration": calibrations, "metrics": list(metrics)}
    notes = [f"{reused} of the {len(jobs)} recordings were this machine's from an earlier run or page, in {out}"] if reused else []
    if taken:
        p = ncu.provenance(own.gpu)
        seqs = ", ".join(str(n) for n in sorted({Shape.from_key(k).seq for _, k in taken}))
        prov["sweep_recorded"] = (f"{len(taken)} forwards (seq {seqs}) from the replay set {own.gpu}, recorded on "
                                  f"{p.get('gpu', own.gpu)} on {str(p.get('date', '?'))[:10]}")
        notes.append(f"The sequence sweep's {len(taken)} forwards (seq {seqs}) are not measured now: they are "
                     f"this GPU's recordings in the replay set ({own.gpu}, recorded on {p.get('gpu', own.gpu)} "
                     f"on {str(p.get('date', '?'))[:10]} with {short_version(p.get('ncu'))}); "
                     f"the article's shape is measured live.")
    return Counters("live", props.name, prov, kernels, calibration, notes=notes,
                    recorded={key: own.gpu for key in taken})


def collect(stages: Sequence[str], sweep: Sequence[Shape] = (), sweep_stages: Sequence[str] | None = None,
            mode: str = "auto", gpu: str | None = None, quiet: bool = False, metrics: str = "page",
            recorded_sweep: bool = True) -> Counters:
    """The counters of one forward of every stage at the article's shape, of `sweep_stages`
    (default: all of them) at each shape of `sweep` too, and of the calibration matmuls.

    Live where CUDA is present, ncu is found and the GPU permits counters (ncu runs in a
    single process for the page, with a progress bar; what an earlier page of
    this session measured is reused from the cache); else the recordings of the replay set, and the
    banner says why. In "auto" mode a live failure for want of counters falls back to replay.

    Live, ncu reads the `metrics` set ("page": what the pages read, `ncu.page_metrics`; "full":
    every work counter); a cached table lacking one of them is measured again. With
    `recorded_sweep`, the sweep's shapes (all but the article's) come from this GPU's own replay
    set where it has one (labelled so in the notes and `Counters.recorded`); else they are measured too."""
    jobs = [(s, DEFAULT_SHAPE) for s in stages]
    jobs += [(s, sh) for sh in sweep for s in (sweep_stages or stages) if sh != DEFAULT_SHAPE]
    # replay asked for (mode="replay", or ATTN_PROFILED_MODE=replay under "auto"): the one decision's word
    decision = None if mode == "live" else decide(mode)
    forced = decision is not None and not decision.live and "asked for" in decision.reason
    mode = "replay" if forced else resolve_mode(mode)
    reason = "the recording was asked for (mode='replay')" if forced else ncu.unavailable_reason()
    result = None
    if mode == "live" and reason is None:
        try:
            result = _live(jobs, gpu, metrics, recorded_sweep)
        except ncu.CountersUnavailable as err:
            reason = str(err)
    if result is None:
        result = _replay(jobs, gpu, reason or "the recording was asked for")
    if not quiet:
        # live: one line; replayed: the line, with why not live folded under it (helpers' own
        # collect shows that fold; here, outside a page, the reason follows in words)
        print(result.banner())
        if result.mode != "live":
            print(f"  {result.why_not_live()}")
        for note in result.notes:
            print(f"  {note}")
    return result
