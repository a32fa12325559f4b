"""Nsight Compute: the hardware counters of one forward's kernels, read by `ncu` in a subprocess.

torch.profiler reports what CUPTI sees at launch (grid, registers, shared memory, an *estimated*
occupancy); ncu replays each kernel and reads the hardware counters: the theoretical and the
achieved occupancy, the DRAM bytes, the time, and the work the tensor and FMA pipes did.

    from helpers.profiling import ncu
    rep, csv = ncu.record("sdpa_flash", DEFAULT_SHAPE, out_dir)   # needs ncu and a CUDA GPU
    table = ncu.read_csv(csv)                                      # one row per kernel

The profiled process builds the stage's inputs, runs three warm-up forwards (a compiled stage
compiles there), then one forward between cudaProfilerStart and cudaProfilerStop, so
`ncu --profile-from-start off` sees exactly one forward.
"""
from __future__ import annotations

import csv
import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd

from .errors import TraceError
from .replay import ROOT
from .stages import Shape

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
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def profile_one_forward(stage: str, shape_key: str, warmup: int = 3) -> None:
    """Run in the process ncu profiles: warm up, then one forward between profiler start/stop."""
    import torch

    from .stages import get_stage
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
    return [sys.executable, "-c", f"from helpers.profiling import ncu; ncu.{call}"]


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
