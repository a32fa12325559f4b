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
from ..core import config
from ..core.config import DEFAULT_GPU, ROOT  # noqa: F401  (DEFAULT_GPU: re-exported for tools)
from ..core.stages import Shape

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
# the work done, chosen from what `ncu --query-metrics` lists on the GPU at hand: tensor-pipe
# operation counters (per source/destination type) and thread-level floating-point instructions
WORK_PATTERNS = (
    re.compile(r"^sm__ops_path_tensor_(op_)?\w*src_(bf16|fp16|tf32|fp32)\w*$"),
    re.compile(r"^sm__inst_executed_pipe_tensor\w*$"),
    re.compile(r"^smsp__sass_thread_inst_executed_op_(ffma|fadd|fmul|hfma|hadd|hmul|dfma|dadd|dmul)_pred_on$"),
)
RECORD_COMMAND = "python tools/record_ncu.py"


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

def _env() -> dict:
    return config.subprocess_env()


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
    command = [ncu, "--profile-from-start", "off", "--clock-control", "none", "--metrics",
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

def _number(value: str):
    text = value.replace(",", "").strip()
    if text in ("", "n/a"):
        return None
    try:
        number = float(text)
    except ValueError:
        return value
    return int(number) if number.is_integer() and "." not in text else number


def read_csv(path: str | Path) -> pd.DataFrame:
    """ncu's raw CSV page as a DataFrame: one row per kernel, ncu's metric names as columns.

    The units row ncu writes under the header goes to `frame.attrs["units"]`. ncu's own lines
    (`==PROF==`) and anything the profiled process printed before the table are skipped."""
    path = Path(path)
    if not path.exists():
        raise TraceError(f"No Nsight Compute table at {path}. Record it on a GPU with ncu: "
                         f"`{RECORD_COMMAND}`.")
    lines = path.read_text(errors="replace").splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        raise TraceError(f"{path} is not an Nsight Compute raw CSV (no header row starting with \"ID\"). "
                         f"Record it again with `{RECORD_COMMAND}`.")
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header, data = rows[0], rows[1:]
    # under the header ncu writes a row of units, whose ID cell is empty
    units = data.pop(0) if data and not data[0][0].strip() else [""] * len(header)
    frame = pd.DataFrame([[_number(v) for v in row] for row in data if len(row) == len(header)],
                         columns=header)
    frame.attrs["units"] = dict(zip(header, units))
    frame.attrs["source"] = str(path)
    return frame


# --- units ---------------------------------------------------------------------------------------
# ncu scales each column to a unit it names in the units row (Mbyte, usecond, Kinst, ...); a
# table in base units (bytes, nanoseconds, counts) is what arithmetic across kernels needs.
# ncu's prefixes are decimal (SI); the binary ones are spelled KiB, MiB, ...
_PREFIX = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15,
           "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
_TIME = {"ns": 1, "nsecond": 1, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6, "s": 1e9, "second": 1e9}
_SCALED = ("byte", "inst", "cycle", "warp", "block", "register", "thread", "pass")


def unit_scale(unit: str) -> tuple[float, str]:
    """(factor, base unit) turning a value in ncu's `unit` ("Mbyte", "us", "Kbyte/block") into
    the base unit ("byte", "ns", "byte/block")."""
    unit = (unit or "").strip()
    if unit in _TIME:
        return _TIME[unit], "ns"
    head, slash, per = unit.partition("/")
    for base in _SCALED:
        if head.endswith(base) and head[:-len(base)] in _PREFIX:
            return _PREFIX[head[:-len(base)]], base + slash + per
    return 1, unit   # %, counts without a unit, or one this table has no need to scale


def in_base_units(frame: pd.DataFrame) -> pd.DataFrame:
    """The same table with every numeric metric column in its base unit (attrs["units"] updated)."""
    out = frame.copy()
    units = dict(frame.attrs.get("units", {}))
    for column, unit in frame.attrs.get("units", {}).items():
        factor, base = unit_scale(unit)
        if factor != 1 and pd.api.types.is_numeric_dtype(out[column]):
            out[column] = out[column].astype(float) * factor
        units[column] = base
    out.attrs = dict(frame.attrs) | {"units": units}
    return out


# --- the replay set ------------------------------------------------------------------------------

def recording_dir(gpu: str | None = None) -> Path:
    """notebooks/traces/<gpu>/ncu: the recorded reports, tables and provenance."""
    return config.recording_dir("ncu", gpu)


def recording_name(stage: str, shape: Shape) -> str:
    return f"{stage}__{shape.key}"


def record_command(stage: str | None = None) -> str:
    """The command that records `stage` (or everything) for the replay set, on a GPU with ncu."""
    return RECORD_COMMAND + (f" --stages {stage}" if stage else "")


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


def shown(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


LAUNCH_COLUMNS = {
    "Kernel Name": "kernel", "launch__grid_size": "grid_blocks", "launch__block_size": "threads",
    "launch__registers_per_thread": "registers",
    "launch__shared_mem_per_block_static": "shared_memory_static",
    "launch__shared_mem_per_block_dynamic": "shared_memory_dynamic",
    "launch__shared_mem_config_size": "shared_memory_config",
    "launch__waves_per_multiprocessor": "waves",
    "launch__occupancy_limit_registers": "limit_registers",
    "launch__occupancy_limit_shared_mem": "limit_shared_memory",
    "launch__occupancy_limit_warps": "limit_warps", "launch__occupancy_limit_blocks": "limit_blocks",
    "sm__maximum_warps_per_active_cycle_pct": "theoretical_occupancy_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved_occupancy_pct",
    "dram__bytes_read.sum": "dram_read_bytes", "dram__bytes_write.sum": "dram_write_bytes",
    "gpu__time_duration.sum": "time_ns",
}
KERNEL_COLUMNS = ["#", "kernel", "block", "grid", *[c for c in LAUNCH_COLUMNS.values() if c != "kernel"],
                  "shared_memory", "dram_bytes", "time_us"]


def kernels(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per kernel of ncu's raw table, in launch order, in base units and with plain names:
    `#`, kernel, block and grid (as ncu prints them), the launch, the occupancy ncu worked out
    (theoretical, its four limits) and measured (achieved), DRAM bytes and time; then every work
    counter under its own metric name (`sm__ops_path_tensor_...sum`, `smsp__sass_thread_...sum`)."""
    missing = [c for c in LAUNCH_COLUMNS if c not in frame.columns]
    if missing:
        raise TraceError(f"{frame.attrs.get('source', 'The Nsight Compute table')} lacks "
                         f"{', '.join(missing)}: record it again with `{record_command()}`.")
    base = in_base_units(frame)
    out = base.rename(columns=LAUNCH_COLUMNS)
    out.insert(0, "#", range(1, len(out) + 1))
    out["block"] = base["Block Size"] if "Block Size" in base else None
    out["grid"] = base["Grid Size"] if "Grid Size" in base else None
    # counts and bytes of the launch are whole numbers, whatever unit ncu printed them in
    for column in ("grid_blocks", "threads", "registers", "shared_memory_static", "shared_memory_dynamic",
                   "shared_memory_config", "limit_registers", "limit_shared_memory", "limit_warps", "limit_blocks"):
        if pd.api.types.is_numeric_dtype(out[column]) and out[column].notna().all():
            out[column] = out[column].round().astype("int64")
    out["shared_memory"] = out["shared_memory_static"] + out["shared_memory_dynamic"]
    out["dram_bytes"] = out["dram_read_bytes"] + out["dram_write_bytes"]
    out["time_us"] = out["time_ns"] / 1e3
    work = [c for c in base.columns if any(p.match(c.removesuffix(".sum")) for p in WORK_PATTERNS)]
    out = out[KERNEL_COLUMNS + work].reset_index(drop=True)
    out.attrs = {"units": {c: base.attrs["units"].get(c, "") for c in work},
                 "source": frame.attrs.get("source")}
    return out


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
PERMISSION_ERROR = "ERR_NVGPUCTRPERM"   # what ncu says when the driver keeps the counters to admins


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


def short_version(text: str) -> str:
    """"Version 2025.3.1.0 (build 36398880) (public-release)" -> "ncu 2025.3.1.0"."""
    match = re.search(r"\d+\.\d+(\.\d+)*", text or "")
    return f"ncu {match.group(0)}" if match else "ncu"


_METRICS: dict[str, list[str]] = {}


def live_metrics(exe: str) -> list[str]:
    """What a live recording reads: the base metrics and this GPU's work counters (queried once)."""
    if exe not in _METRICS:
        _METRICS[exe] = list(BASE_METRICS) + work_metrics(query_metrics(exe))
    return _METRICS[exe]


def measure(call: str, name: str, out_dir: Path) -> pd.DataFrame:
    """Run `call` under ncu now and return its kernels, as `kernels()` gives them.

    Raises CountersUnavailable when ncu is missing or the GPU does not permit counters, and
    RuntimeError with ncu's words for any other failure."""
    reason = unavailable_reason()
    if reason:
        raise CountersUnavailable(reason)
    exe = find_ncu()
    try:
        report, table = record(call, name, Path(out_dir), live_metrics(exe), exe)
    except RuntimeError as err:
        if PERMISSION_ERROR in str(err):
            raise CountersUnavailable(
                f"the GPU does not give this user its performance counters ({PERMISSION_ERROR}: "
                f"see https://developer.nvidia.com/{PERMISSION_ERROR})") from err
        raise
    result = kernels(read_csv(table))
    result.attrs |= {"csv": table, "report": report, "name": name}
    return result


def measure_stage(stage: str, shape: Shape, out_dir: Path) -> pd.DataFrame:
    """One forward of `stage` at `shape` under ncu, now (a subprocess)."""
    result = measure(f"profile_one_forward({stage!r}, {shape.key!r})", recording_name(stage, shape), out_dir)
    result.attrs |= {"stage": stage, "shape": shape.key}
    return result


def measure_calibration(dtype: str, m: int, n: int, k: int, out_dir: Path) -> pd.DataFrame:
    """One matmul of known shape under ncu, now: what its work counters read for 2·m·n·k FLOPs."""
    return measure(f"profile_matmul({dtype!r}, {m}, {n}, {k})", calibration_name(dtype, m, n, k), out_dir)


def calibration_name(dtype: str, m: int, n: int, k: int) -> str:
    return f"calibration__{dtype}_{m}x{n}x{k}"


def recorded_shapes(stage: str, gpu: str | None = None) -> list[Shape]:
    """The shapes at which `stage`'s counters were recorded, by sequence length."""
    shapes = [Shape.from_key(p.name.removesuffix(".csv").split("__", 1)[1])
              for p in recording_dir(gpu).glob(f"{stage}__*.csv")]
    return sorted(shapes, key=lambda s: (s.head_dim, s.seq, s.batch, s.heads))
