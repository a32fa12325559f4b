"""Nsight Compute's tables read, with nothing but core: ncu's raw CSV page as a DataFrame, its
units scaled to base units, one row per kernel with plain names (`kernels`), and the names of the
recordings. helpers.sources.ncu runs ncu and re-exports these; views and chapters read here."""
from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pandas as pd

from .config import ROOT
from .errors import TraceError
from .stages import Shape


# the work done, chosen from what `ncu --query-metrics` lists on the GPU at hand: tensor-pipe
# operation counters (per source/destination type) and thread-level floating-point instructions
WORK_PATTERNS = (
    re.compile(r"^sm__ops_path_tensor_(op_)?\w*src_(bf16|fp16|tf32|fp32)\w*$"),
    re.compile(r"^sm__inst_executed_pipe_tensor\w*$"),
    re.compile(r"^smsp__sass_thread_inst_executed_op_(ffma|fadd|fmul|hfma|hadd|hmul|dfma|dadd|dmul)_pred_on$"),
)


RECORD_COMMAND = "python tools/record_ncu.py"


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
    return read_csv_text(path.read_text(errors="replace"), path)


def read_csv_text(text: str, path: str | Path = "<text>") -> pd.DataFrame:
    """`read_csv` of the CSV's text (a gzipped recording, read by its caller)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        raise TraceError(f"{path} is not an Nsight Compute raw CSV (no header row starting with \"ID\"). "
                         f"Record it again with `{RECORD_COMMAND}`.")
    # a raw page with every SASS opcode instance spelled out (chapter 7b's) has cells past csv's
    # default 128 KiB limit (a backward's 100 kernels): read them whole
    csv.field_size_limit(max(csv.field_size_limit(), 2**31 - 1))
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header, data = rows[0], rows[1:]
    # under the header ncu writes a row of units, whose ID cell is empty
    units = data.pop(0) if data and not data[0][0].strip() else [""] * len(header)
    frame = pd.DataFrame([[_number(v) for v in row] for row in data if len(row) == len(header)],
                         columns=header)
    frame.attrs["units"] = dict(zip(header, units))
    frame.attrs["source"] = str(path)
    return frame


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
    attrs = dict(frame.attrs)
    units = dict(attrs.get("units", {}))
    out = frame.copy()
    out.attrs = {}  # pandas deep-copies a frame's attrs (every column's unit) into each column read
    for column, unit in attrs.get("units", {}).items():
        factor, base = unit_scale(unit)
        if factor != 1 and pd.api.types.is_numeric_dtype(out[column]):
            out[column] = out[column].astype(float) * factor
        units[column] = base
    out.attrs = attrs | {"units": units}
    return out


def recording_name(stage: str, shape: Shape) -> str:
    return f"{stage}__{shape.key}"


def record_command(stage: str | None = None) -> str:
    """The command that records `stage` (or everything) for the replay set, on a GPU with ncu."""
    return RECORD_COMMAND + (f" --stages {stage}" if stage else "")


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
    units, base.attrs = base.attrs["units"], {}  # no attrs copied into each column read (in_base_units)
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
    out.attrs = {"units": {c: units.get(c, "") for c in work},
                 "source": frame.attrs.get("source")}
    return out


def short_version(text: str) -> str:
    """"Version 2025.3.1.0 (build 36398880) (public-release)" -> "ncu 2025.3.1.0"."""
    match = re.search(r"\d+\.\d+(\.\d+)*", text or "")
    return f"ncu {match.group(0)}" if match else "ncu"


def calibration_name(dtype: str, m: int, n: int, k: int) -> str:
    return f"calibration__{dtype}_{m}x{n}x{k}"
