"""Plain readers of the raw recordings for the independent checks: ncu's raw CSV pages with the
csv module, the memory ladder with json. Nothing here imports helpers."""
from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
H200 = ROOT / "notebooks" / "traces" / "h200"
SCALE = {"": 1, "byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "usecond": 1e3, "us": 1e3, "ns": 1,
         "nsecond": 1, "msecond": 1e6, "ms": 1e6, "%": 1, "inst": 1, "Kinst": 1e3, "Minst": 1e6, "Ginst": 1e9}
TENSOR_PREFIX = "sm__ops_path_tensor_src_"
FFMA = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
# fp32 adds and multiplies: one FLOP per thread-instruction
FADD = "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum"
FMUL = "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum"


def kernels(path: Path) -> list[dict]:
    """One dict per kernel: name, ns, DRAM bytes, tensor ops, FFMA instructions, gmma/hmma instructions."""
    rows = list(csv.reader(open(path, encoding="utf-8", errors="replace")))
    start = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
    head, units = rows[start], dict(zip(rows[start], rows[start + 1]))

    def num(r, col):
        v = r[col].replace(",", "").strip()
        return float(v) * SCALE[units[col]] if v not in ("", "n/a") else 0.0
    out = []
    for line in rows[start + 2:]:
        if len(line) != len(head):
            continue
        r = dict(zip(head, line))
        out.append({"name": r["Kernel Name"], "ns": num(r, "gpu__time_duration.sum"),
                    "dram": num(r, "dram__bytes_read.sum") + num(r, "dram__bytes_write.sum"),
                    "tensor": sum(num(r, c) for c in head if c.startswith(TENSOR_PREFIX) and c.endswith(".sum")),
                    "ffma": num(r, FFMA), "addmul": num(r, FADD) + num(r, FMUL), "gmma": num(r, "sm__inst_executed_pipe_tensor_op_gmma.sum"),
                    "occ": num(r, "sm__warps_active.avg.pct_of_peak_sustained_active")})
    return out


def calibration() -> dict:
    """FLOPs per tensor op and per FFMA, and each calibration's TFLOP/s (2·m·n·k over ncu time)."""
    bf = kernels(H200 / "ncu" / "calibration__bfloat16_4096x4096x4096.csv")[0]
    f32 = kernels(H200 / "ncu" / "calibration__float32_2048x2048x2048.csv")[0]
    fb, ff = 2 * 4096**3, 2 * 2048**3
    return {"per_tensor": fb / bf["tensor"], "per_ffma": ff / f32["ffma"],
            "bf16_tflops": fb / bf["ns"] / 1e3, "fp32_tflops": ff / f32["ns"] / 1e3}


def flops(k: dict, cal: dict) -> float:
    return k["tensor"] * cal["per_tensor"] + k["ffma"] * cal["per_ffma"] + k["addmul"]


def copy_tbps() -> float:
    c = json.loads((H200 / "ceilings.json").read_text())
    return next(x["value"] for x in c["ceilings"] if "copy" in x["ceiling"])


def backward_segments() -> dict[str, list[dict]]:
    base = H200 / "training" / "ncu" / "backward__b8_h16_s1024_d64_bfloat16_causal"
    stages = json.loads(base.with_suffix(".json").read_text())
    out, current = {}, None
    it = iter(stages)
    for k in kernels(base.with_suffix(".csv")):
        if "spin_kernel" in k["name"]:
            current = next(it)
            out[current] = []
        else:
            out[current].append(k)
    return out


def memory() -> dict:
    return json.loads((H200 / "training" / "memory.json").read_text())


def trace_provenance(stage: str, key: str = "b8_h16_s1024_d64_bfloat16_causal") -> dict:
    with gzip.open(H200 / f"{stage}__{key}.json.gz", "rt") as f:
        return json.load(f)["provenance"]
