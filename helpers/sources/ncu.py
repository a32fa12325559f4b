"""Nsight Compute: the hardware counters of one forward's kernels, read by `ncu` in a subprocess.

torch.profiler reports what CUPTI sees at launch (grid, registers, shared memory, an *estimated*
occupancy); ncu replays each kernel and reads the hardware counters: the theoretical and the
achieved occupancy, the DRAM bytes, the time, and the work the tensor and FMA pipes did.

    from helpers.sources import ncu
    rep, csv = ncu.record("sdpa_flash", DEFAULT_SHAPE, out_dir)   # needs ncu and a CUDA GPU
    table = ncu.read_csv(csv)                                      # one row per kernel

The profiled process builds the stage's inputs, runs three warm-up forwards (a compiled stage
compiles there), then one forward between cudaProfilerStart and cudaProfilerStop, so
`ncu --profile-from-start off` sees exactly one forward.
"""
from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd

from ..core.errors import TraceError
from ..core import config, replay_set
from ..core.quantities import FADD, FFMA, FMUL, TENSOR_TOTAL
from ..core.config import DEFAULT_GPU, ROOT  # noqa: F401  (DEFAULT_GPU: re-exported for tools)
from ..core.stages import Shape
from ..core.ncu_tables import (  # noqa: F401  (re-exported: the reading half lives in core)
    KERNEL_COLUMNS, LAUNCH_COLUMNS, RECORD_COMMAND, WORK_PATTERNS, _PREFIX, _SCALED, _TIME, _number, calibration_name, in_base_units, kernels, read_csv, record_command, recording_name, short_version, shown, unit_scale)

# what every recording reads: the launch, occupancy (theoretical, its limiters, achieved),
# DRAM traffic and time
BASE_METRICS = (
    "launch__grid_size", "launch__block_size", "launch__registers_per_thread",
    "launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic",
    "launch__shared_mem_config_size", "launch__waves_per_multiprocessor",
    "launch__occupancy_limit_registers", "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps", "launch__occupancy_limit_blocks",
    "sm__maximum_warps_per_active_cycle_pct", "sm__warps_active.avg.pct_of_peak_sustained_active",
    "dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum",
)


def find_ncu() -> str | None:
    """The ncu executable: on PATH, or where the CUDA toolkit puts it."""
    found = shutil.which("ncu")
    if found:
        return found
    for candidate in ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/ncu"):
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def version(ncu: str) -> str:
    out = subprocess.run([ncu, "--version"], capture_output=True, text=True, check=False).stdout
    return out.strip().splitlines()[-1] if out.strip() else "unknown"


def query_metrics(ncu: str) -> list[str]:
    """The metric base names ncu lists for this GPU (`ncu --query-metrics`)."""
    out = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, check=False).stdout
    names = []
    for line in out.splitlines():
        token = line.split(" ", 1)[0].strip()
        if re.fullmatch(r"[a-z0-9]+__[a-z0-9_]+", token):
            names.append(token)
    return names


def work_metrics(available: list[str]) -> list[str]:
    """The counters of executed work among `available`, each summed over the GPU."""
    return sorted(f"{n}.sum" for n in available if any(p.match(n) for p in WORK_PATTERNS))


# --- the profiled process ------------------------------------------------------------------------

# ncu follows the profiled process only, not the processes it starts: Inductor's compile workers
# (a pool of Python processes, each importing torch) would otherwise start under ncu too
PROCESSES = ("--target-processes", "application-only")


def _env() -> dict:
    # one compile thread: the graphs this process compiles are in the shared caches already (a page's
    # timed compile put them there), and a pool of compile workers costs more than it saves here
    return config.subprocess_env() | {"TORCHINDUCTOR_COMPILE_THREADS": "1"}


def profile_one_forward(stage: str, shape_key: str, warmup: int = 3) -> None:
    """Run in the process ncu profiles: warm up, then one forward between profiler start/stop."""
    import torch

    from ..core.stages import get_stage
    st = get_stage(stage)
    inputs = st.make_inputs(Shape.from_key(shape_key), "cuda")
    for _ in range(warmup):
        st.run(inputs)
    torch.cuda.synchronize()
    cudart = torch.cuda.cudart()
    cudart.cudaProfilerStart()
    st.run(inputs)
    torch.cuda.synchronize()
    cudart.cudaProfilerStop()


def _forward_of(job: dict):
    """What one job of a page runs once inside its range: a stage's forward (its inputs built and
    three warm-up calls made first, outside every range) or a calibration matmul."""
    import torch
    if job["kind"] == "stage":
        from ..core.stages import get_stage
        st = get_stage(job["stage"])
        inputs = st.make_inputs(Shape.from_key(job["shape"]), "cuda")
        forward = lambda: st.run(inputs)  # noqa: E731
    else:
        torch.backends.cuda.matmul.allow_tf32 = False  # fp32 stays on the FMA pipe
        a = torch.randn(job["m"], job["k"], device="cuda", dtype=getattr(torch, job["dtype"]))
        b = torch.randn(job["k"], job["n"], device="cuda", dtype=getattr(torch, job["dtype"]))
        forward = lambda: a @ b  # noqa: E731
    for _ in range(3):
        forward()
    torch.cuda.synchronize()
    return forward


def profile_jobs(jobs_json: str) -> None:
    """Run in the one process ncu profiles for a page: every job in turn, each run once between
    cudaProfilerStart and cudaProfilerStop inside an NVTX range named for it, so that
    `ncu --nvtx --profile-from-start off` sees exactly one forward per job and its report can be
    split by range (`--print-nvtx-rename kernel`). A line per job tells the parent how far it got."""
    import torch
    cudart = torch.cuda.cudart()
    for job in json.loads(jobs_json):
        forward = _forward_of(job)
        cudart.cudaProfilerStart()
        torch.cuda.nvtx.range_push(job["name"])
        forward()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
        cudart.cudaProfilerStop()
        del forward
        torch.cuda.empty_cache()
        print(f"{JOB_DONE}{job['name']}", flush=True)


JOB_DONE = "attention_profiled job done: "


def stage_job(stage: str, shape: Shape) -> dict:
    return {"kind": "stage", "name": recording_name(stage, shape), "stage": stage, "shape": shape.key}


def calibration_job(dtype: str, m: int, n: int, k: int) -> dict:
    return {"kind": "calibration", "name": calibration_name(dtype, m, n, k), "dtype": dtype, "m": m, "n": n, "k": k}


def _rows(text: str) -> list[list[str]]:
    return [row for row in csv.reader(io.StringIO(text)) if row]


def split_by_range(raw: str, renamed: str, names: list[str]) -> dict[str, str]:
    """ncu's raw CSV page of a whole page's report, split into one CSV per job: the same export
    with `--print-nvtx-rename kernel` names each row by its innermost NVTX range (the job), row
    for row (the ID column says so). Each part keeps the header and units rows, so read_csv
    reads it as it reads a one-forward recording. Raises RuntimeError if a row has no job."""
    a, b = _rows(raw), _rows(renamed)
    start = next(i for i, r in enumerate(a) if "ID" in r and "Kernel Name" in r)
    start_b = next(i for i, r in enumerate(b) if "ID" in r and "Kernel Name" in r)
    header, units = a[start], a[start + 1]
    id_a, name_b = header.index("ID"), b[start_b].index("Kernel Name")
    id_b = b[start_b].index("ID")
    rows_a, rows_b = a[start + 2:], b[start_b + 2:]
    if len(rows_a) != len(rows_b):
        raise RuntimeError(f"ncu's two exports differ in length ({len(rows_a)} and {len(rows_b)} rows)")
    parts: dict[str, list[list[str]]] = {n: [] for n in names}
    for ra, rb in zip(rows_a, rows_b):
        if ra[id_a] != rb[id_b]:
            raise RuntimeError(f"ncu's two exports disagree on the kernel IDs ({ra[id_a]} and {rb[id_b]})")
        # ncu 2025.3 names a kernel "<range>/<kernel>" (the H200 run of benchmarks/results/gpu_live_19)
        label = rb[name_b]
        job = label if label in parts else label.split("/", 1)[0] if label.split("/", 1)[0] in parts else None
        if job is None:
            raise RuntimeError(f"a kernel of ncu's report is in no job's NVTX range (it reads {label[:120]!r})")
        parts[job].append(ra)
    missing = [n for n, rows in parts.items() if not rows]
    if missing:
        raise RuntimeError(f"no kernel of {', '.join(missing)} in ncu's report")
    out = {}
    for name, rows in parts.items():
        buffer = io.StringIO()
        writer = csv.writer(buffer, quoting=csv.QUOTE_ALL, lineterminator="\n")
        writer.writerows([header, units, *rows])
        out[name] = buffer.getvalue()
    return out


def run_page(jobs: list[dict], out_dir: Path, metrics: list[str], ncu: str, on_done=None,
             timeout: float = 1800) -> tuple[Path, str, str]:
    """Run every job under ONE ncu process (`profile_jobs`); return its report and two exports of
    the raw page: as it is, and with each kernel renamed by its NVTX range (the job)."""
    rep = Path(out_dir) / f"page__{len(jobs)}jobs__{os.getpid()}.ncu-rep"
    call = f"profile_jobs({json.dumps(jobs)!r})"
    command = [ncu, "--nvtx", *PROCESSES, "--profile-from-start", "off", "--clock-control", "none", "--metrics",
               ",".join(metrics), "-f", "-o", str(rep.with_suffix("")), *target(call)]
    said = []
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env=_env()) as run:
        for line in run.stdout:
            if line.startswith(JOB_DONE):
                if on_done is not None:
                    on_done(line[len(JOB_DONE):].strip())
            else:
                said.append(line.rstrip())
        returncode = run.wait(timeout=timeout)
    if returncode != 0 or not rep.exists():
        errors = "\n".join(line for line in said if "==ERROR==" in line or "==WARNING==" in line or "Error" in line)
        raise RuntimeError(f"ncu failed on {len(jobs)} jobs (exit {returncode}): {errors or chr(10).join(said)[-2000:]}")
    exports = []
    for extra in ([], ["--print-nvtx-rename", "kernel"]):
        exported = subprocess.run([ncu, "--import", str(rep), "--csv", "--page", "raw", *extra],
                                  capture_output=True, text=True, check=False)
        if exported.returncode != 0:
            raise RuntimeError(f"ncu --import {rep} failed: {exported.stderr[-2000:]}")
        exports.append(exported.stdout)
    return rep, exports[0], exports[1]


def record_jobs(jobs: list[dict], out_dir: Path, metrics: list[str], ncu: str | None = None,
                on_done=None) -> tuple[Path, dict[str, Path]]:
    """Every job of a page in ONE profiled process under ncu, its report split by NVTX range into
    `<job>.csv` per job (the format `record` writes for one forward). `on_done(name)` is called as
    each job finishes. Returns the report and the tables; RuntimeError with ncu's words if it fails."""
    ncu = ncu or find_ncu()
    if ncu is None:
        raise RuntimeError("ncu is not on PATH (Nsight Compute is not installed here)")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rep, raw, renamed = run_page(jobs, out_dir, metrics, ncu, on_done)
    # both exports stay beside the report: what the split below read, should it refuse them
    rep.with_suffix(".raw.csv").write_text(raw)
    rep.with_suffix(".ranges.csv").write_text(renamed)
    tables = {}
    for name, text in split_by_range(raw, renamed, [j["name"] for j in jobs]).items():
        tables[name] = out_dir / f"{name}.csv"
        tables[name].write_text(text)
    return rep, tables


def profile_matmul(dtype: str, m: int, n: int, k: int) -> None:
    """A matmul of known FLOPs (2·m·n·k), to calibrate what one unit of a work counter stands for."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 stays on the FMA pipe
    a = torch.randn(m, k, device="cuda", dtype=getattr(torch, dtype))
    b = torch.randn(k, n, device="cuda", dtype=getattr(torch, dtype))
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    a @ b
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


def target(call: str) -> list[str]:
    """The command ncu launches: this interpreter running one call of this module."""
    return [sys.executable, "-c", f"from helpers.sources import ncu; ncu.{call}"]


def record(call: str, name: str, out_dir: Path, metrics: list[str], ncu: str | None = None,
           timeout: float = 600) -> tuple[Path, Path]:
    """Profile `call` (e.g. "profile_one_forward('naive', '<shape key>')") under ncu.

    Writes `<name>.ncu-rep` (ncu's report) and `<name>.csv` (its raw page: one row per kernel,
    ncu's metric names); returns both paths. Raises RuntimeError with ncu's own words if it fails."""
    ncu = ncu or find_ncu()
    if ncu is None:
        raise RuntimeError("ncu is not on PATH (Nsight Compute is not installed here)")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rep, table = out_dir / f"{name}.ncu-rep", out_dir / f"{name}.csv"
    command = [ncu, *PROCESSES, "--profile-from-start", "off", "--clock-control", "none", "--metrics",
               ",".join(metrics), "-f", "-o", str(rep.with_suffix("")), *target(call)]
    run = subprocess.run(command, capture_output=True, text=True, env=_env(), timeout=timeout, check=False)
    if run.returncode != 0 or not rep.exists():
        said = "\n".join(line for line in (run.stdout + run.stderr).splitlines()
                         if "==ERROR==" in line or "==WARNING==" in line or "Error" in line)
        raise RuntimeError(f"ncu failed on {name} (exit {run.returncode}): {said or (run.stdout + run.stderr)[-2000:]}")
    exported = subprocess.run([ncu, "--import", str(rep), "--csv", "--page", "raw"], capture_output=True,
                              text=True, check=False)
    if exported.returncode != 0:
        raise RuntimeError(f"ncu --import {rep} failed: {exported.stderr[-2000:]}")
    table.write_text(exported.stdout)
    return rep, table


# --- reading -------------------------------------------------------------------------------------





# --- units ---------------------------------------------------------------------------------------






# --- the replay set ------------------------------------------------------------------------------

def recording_dir(gpu: str | None = None) -> Path:
    """notebooks/traces/<gpu>/ncu: the recorded reports, tables and provenance."""
    return replay_set.recording_dir("ncu", gpu)






def provenance(gpu: str | None = None) -> dict:
    """Where, when and how the recorded counters were taken (provenance.json)."""
    path = recording_dir(gpu) / "provenance.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise TraceError(f"The Nsight Compute provenance {path} is missing or unreadable "
                         f"({type(err).__name__}: {err}). Restore it with `git checkout -- "
                         f"{shown(path)}`, or record the counters again on a GPU with ncu: "
                         f"`{record_command()}`.") from err








def load(stage: str, shape: Shape, gpu: str | None = None) -> pd.DataFrame:
    """The recorded counters of one forward of `stage` at `shape`, as `kernels()` gives them.

    A missing or corrupt recording raises TraceError naming the file and the command that
    records it; attrs carry the paths of the table and of ncu's report."""
    name = recording_name(stage, shape)
    table, report = recording_dir(gpu) / f"{name}.csv", recording_dir(gpu) / f"{name}.ncu-rep"
    how = f"record it on a GPU with ncu: `{record_command(stage)}`"
    if not table.exists():
        recorded = sorted(p.name.removesuffix(".csv").split("__", 1)[1]
                          for p in recording_dir(gpu).glob(f"{stage}__*.csv"))
        shapes = f" Recorded shapes of {stage}: {', '.join(recorded)}." if recorded else ""
        raise TraceError(f"No Nsight Compute recording of {stage} at {shape.key}: {shown(table)} "
                         f"is missing.{shapes} Restore it with `git checkout -- {shown(table)}`, or {how}.")
    try:
        frame = read_csv(table)
        result = kernels(frame)
    except TraceError as err:
        raise TraceError(f"{err} (file {shown(table)}; or {how})") from err
    except (ValueError, KeyError, TypeError) as err:
        raise TraceError(f"The Nsight Compute table {shown(table)} is corrupt ({type(err).__name__}: {err}). "
                         f"Restore it with `git checkout -- {shown(table)}`, or {how}.") from err
    if result.empty:
        raise TraceError(f"The Nsight Compute table {shown(table)} has no kernel rows. Restore it with "
                         f"`git checkout -- {shown(table)}`, or {how}.")
    bad = [c for c in ("grid_blocks", "threads", "registers", "dram_bytes", "time_us")
           if not pd.api.types.is_numeric_dtype(result[c])]
    if bad:
        raise TraceError(f"The Nsight Compute table {shown(table)} is corrupt: {', '.join(bad)} "
                         f"are not numbers. Restore it with `git checkout -- {shown(table)}`, or {how}.")
    result.attrs |= {"csv": table, "report": report if report.exists() else None,
                     "stage": stage, "shape": shape.key, "gpu": gpu}
    return result


# --- live ----------------------------------------------------------------------------------------
from ..counters.core import PERMISSION_ERROR  # noqa: E402  (one definition, in core)


class CountersUnavailable(RuntimeError):
    """ncu can't read counters here; the message says why (no ncu, no GPU, no permission)."""


def unavailable_reason() -> str | None:
    """Why ncu can't be run live here, or None when it may (permission is found out by trying)."""
    import torch
    reasons = []
    if find_ncu() is None:
        reasons.append("ncu (Nsight Compute) is not on PATH here")
    if not torch.cuda.is_available():
        reasons.append("this process sees no CUDA GPU")
    return " and ".join(reasons) or None




_METRICS: dict[str, list[str]] = {}


def live_metrics(exe: str, cache: Path | None = None) -> list[str]:
    """What a live recording reads: the base metrics and this GPU's work counters (queried once
    per process, and kept in `cache`/metrics.json for the next notebook of the session)."""
    if exe not in _METRICS:
        kept = Path(cache) / "metrics.json" if cache else None
        if kept is not None and kept.exists():
            _METRICS[exe] = json.loads(kept.read_text())
        else:
            _METRICS[exe] = list(BASE_METRICS) + work_metrics(query_metrics(exe))
            if kept is not None:
                kept.parent.mkdir(parents=True, exist_ok=True)
                kept.write_text(json.dumps(_METRICS[exe]))
    return _METRICS[exe]


def is_page_metric(metric: str) -> bool:
    """Whether a page reads `metric` from a live table: the launch, occupancy, DRAM bytes and
    time (BASE_METRICS) and the FLOP-carrying work counters (the tensor pipe's ops by source type,
    and the fp32 FFMA, FADD and FMUL instructions, helpers.core.quantities). The other work
    counters (per instruction family, sparsity, ...) are in the replay set's recordings, which the
    training chapter reads; a live page never does, and each costs ncu replay passes of every kernel."""
    return metric in BASE_METRICS or bool(TENSOR_TOTAL.match(metric)) or metric in (FFMA, FADD, FMUL)


def page_metrics(exe: str, cache: Path | None = None) -> list[str]:
    """What a live page records: `live_metrics` narrowed to those a page reads (`is_page_metric`):
    about 20 of the 56 on a Hopper GPU, so ncu replays each kernel fewer passes."""
    return [m for m in live_metrics(exe, cache) if is_page_metric(m)]


def metric_set(name: str, exe: str, cache: Path | None = None) -> list[str]:
    """The metrics of a named set: "page" (what the pages read, `page_metrics`) or "full" (every
    work counter, `live_metrics`, what the replay set records)."""
    if name not in ("page", "full"):
        raise ValueError(f"no metric set {name!r}: 'page' or 'full'")
    return page_metrics(exe, cache) if name == "page" else live_metrics(exe, cache)


def _ready() -> str:
    """ncu's path, or CountersUnavailable with the reason it can't run here."""
    reason = unavailable_reason()
    if reason:
        raise CountersUnavailable(reason)
    return find_ncu()


def _raise_if_withheld(err: RuntimeError) -> None:
    """ncu's failure as the reader's reason where the GPU withholds its counters."""
    if PERMISSION_ERROR in str(err):
        raise CountersUnavailable(
            f"the GPU does not give this user its performance counters ({PERMISSION_ERROR}: "
            f"see https://developer.nvidia.com/{PERMISSION_ERROR})") from err


def measure(call: str, name: str, out_dir: Path) -> pd.DataFrame:
    """Run `call` under ncu now and return its kernels, as `kernels()` gives them.

    Raises CountersUnavailable when ncu is missing or the GPU does not permit counters, and
    RuntimeError with ncu's words for any other failure."""
    exe = _ready()
    try:
        report, table = record(call, name, Path(out_dir), live_metrics(exe), exe)
    except RuntimeError as err:
        _raise_if_withheld(err)
        raise
    result = kernels(read_csv(table))
    result.attrs |= {"csv": table, "report": report, "name": name}
    return result


def measure_jobs(jobs: list[dict], out_dir: Path, on_done=None, metrics: list[str] | None = None) -> dict[str, pd.DataFrame]:
    """Every job of a page under ONE ncu process, now; name -> its kernels, as `kernels()` gives
    them. `metrics`: what ncu reads (default: `live_metrics`, every work counter). Raises
    CountersUnavailable when ncu is missing or the GPU does not permit counters, and
    RuntimeError with ncu's words for any other failure."""
    exe = _ready()
    metrics = metrics if metrics is not None else live_metrics(exe, Path(out_dir))
    try:
        report, tables = record_jobs(jobs, Path(out_dir), metrics, exe, on_done)
    except RuntimeError as err:
        _raise_if_withheld(err)
        raise
    out = {}
    for name, table in tables.items():
        out[name] = kernels(read_csv(table))
        out[name].attrs |= {"csv": table, "report": report, "name": name}
    return out


def measure_stage(stage: str, shape: Shape, out_dir: Path) -> pd.DataFrame:
    """One forward of `stage` at `shape` under ncu, now (a subprocess)."""
    result = measure(f"profile_one_forward({stage!r}, {shape.key!r})", recording_name(stage, shape), out_dir)
    result.attrs |= {"stage": stage, "shape": shape.key}
    return result


def measure_calibration(dtype: str, m: int, n: int, k: int, out_dir: Path) -> pd.DataFrame:
    """One matmul of known shape under ncu, now: what its work counters read for 2·m·n·k FLOPs."""
    return measure(f"profile_matmul({dtype!r}, {m}, {n}, {k})", calibration_name(dtype, m, n, k), out_dir)




def recorded_shapes(stage: str, gpu: str | None = None) -> list[Shape]:
    """The shapes at which `stage`'s counters were recorded, by sequence length."""
    from ..core.recordings import recorded_ncu_shapes
    return recorded_ncu_shapes(stage, gpu)
