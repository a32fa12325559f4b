"""The book's ledger of quantities: every figure a page shows about a stage's work, bytes, time or
memory has one name here, one definition (the same words as the glossary's) and one function.
Chapters 07, 09 and 11 read these; where two definitions are both worth showing (the FLOPs the
shape implies against the FLOPs the hardware executed; a forward's DRAM bytes with or without its
copies), they are two quantities with two names, shown side by side.

Everything here is a pure function of ncu's kernel table (`helpers.core.ncu_tables.kernels`),
of a `Shape`, or of a recording's numbers: no chapter, no view.

    from helpers.core import quantities as q
    factors = q.flops_per_unit(calibration_tables, calibrations)   # counter -> FLOPs per unit
    q.executed_flops(table, factors)         # per kernel: what the hardware executed
    q.pipe_of(table, factors)                # per kernel: "bf16 tensor" or "fp32 FFMA"
    roofs = q.pipe_roofs(calibration_tables, calibrations, copy_tbps)
"""
from __future__ import annotations

import re
from typing import Mapping

import numpy as np
import pandas as pd

from .stages import Shape

TB = 1e12

# ------------------------------------------------------------------------------------ the ledger
# name -> (unit, definition). The glossary's entries say the same; test_quantities checks that
# every name here has its glossary entry.
LEDGER = {
    "model FLOPs": ("FLOP", "the attention's matmul FLOPs from the shape, 4·B·H·S²·D, halved for a causal "
                            "mask: what the computation needs, whatever kernels run it"),
    "executed FLOPs": ("FLOP", "what the kernels executed, read from Nsight Compute's counters: tensor-pipe "
                               "operations and fp32 FFMA instructions times what one unit is worth in the "
                               "calibration matmuls, plus fp32 FADD and FMUL instructions at one FLOP each (half "
                               "an FFMA); fp32 instructions count even where they are not a matmul (a softmax's "
                               "exponent, sum and scaling). Not counted: 16-bit scalar instructions (HADD, HMUL, "
                               "HFMA) and special functions (exp)"),
    "kernel DRAM bytes": ("byte", "the bytes a forward's kernels read from and wrote to DRAM, Nsight "
                                  "Compute's dram__bytes_read + dram__bytes_write, summed over the kernels"),
    "forward DRAM bytes": ("byte", "the kernel DRAM bytes plus the bytes of the forward's memcpy and memset "
                                   "events (the trace: ncu counts kernels only); naive's hidden copy included"),
    "arithmetic intensity": ("FLOP/byte", "executed FLOPs over DRAM bytes: chapter 9's forwards divide by the "
                                          "forward DRAM bytes (copies included), chapter 11's phases by the kernel "
                                          "DRAM bytes (its Nsight Compute tables hold kernels only), and name it so"),
    "ncu time": ("µs", "the kernels' gpu__time_duration under Nsight Compute, plus the copies' trace time"),
    "profiler GPU time": ("µs", "the sum of one forward's (or step's) GPU events in the profiler's trace: "
                                "kernels, memcpy and memset"),
    "do_bench time": ("µs", "triton.testing.do_bench's median of single calls, each after a 256 MB "
                              "L2 flush, CUDA events around each: one cold call's GPU-side time"),
    "executed TFLOP/s": ("TFLOP/s", "executed FLOPs over ncu time: the roofline's y"),
    "model TFLOP/s": ("TFLOP/s", "model FLOPs over the profiler GPU time: what the attention needed, per "
                                 "second the GPU spent"),
    "GPU event count": ("count", "everything a forward put on the GPU's timeline: kernels, memcpy and memset"),
    "kernel count": ("count", "the GPU events that are kernels (no memcpy, no memset)"),
    "peak memory above the inputs": ("byte", "torch.cuda.max_memory_allocated during one step minus what "
                                             "was allocated before it (the inputs)"),
    "peak memory with the inputs": ("byte", "the same plus the inputs the step reads: q, k, v and, in "
                                            "training, the output's gradient dO; what meets the GPU's memory"),
    "bf16 tensor roof": ("TFLOP/s", "the bf16 calibration matmul's FLOPs over its ncu time: the most the "
                                    "tensor cores were measured doing, under the timer the points use"),
    "fp32 FFMA roof": ("TFLOP/s", "the fp32 calibration matmul's FLOPs over its ncu time: an fp32 matmul "
                                  "runs on the FMA units (FFMA), not on the tensor cores"),
    "copy roof": ("TB/s", "a device-to-device copy's bytes per second under do_bench (read and written)"),
    "ridge": ("FLOP/byte", "a compute roof over the copy roof: left of it the bytes run out first"),
    "time per token": ("µs", "the caller's timer of one decode step, one new token per sequence: the median of "
                             "its repeats of N back-to-back steps between two CUDA events, divided by N"),
    "achieved bandwidth": ("GB/s", "the bytes of K and V one decode call must read over the GPU's busy time per "
                                   "call in the trace (beside it, Nsight Compute's DRAM bytes read and written over "
                                   "ncu time): what a memory-bound call is judged by, against the copy roof"),
}

# a kernel is bound by a roof when it reaches at least this share of it; under it on both roofs it
# is held back by neither: latency (too few warps in flight, or too little work per warp)
BOUND_SHARE = 0.6
TENSOR_PIPE, FFMA_PIPE = "bf16 tensor", "fp32 FFMA"
# the FLOP-carrying counters, one per family so nothing is counted twice
TENSOR_TOTAL = re.compile(r"^sm__ops_path_tensor_src_(?P<src>[a-z0-9]+)(_dst_(?P<dst>[a-z0-9]+))?\.sum$")
FFMA = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
# fp32 adds and multiplies: one FLOP per thread and instruction, half of what the calibration
# finds an FFMA worth; they run on the same FMA pipe, so they count towards the fp32 side
FADD = "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum"
FMUL = "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum"
# the tensor-core instruction families: Hopper's asynchronous warpgroup MMA (wgmma) and the
# synchronous warp-level mma.sync (HMMA) that Ampere's kernels use
GMMA = "sm__inst_executed_pipe_tensor_op_gmma.sum"
HMMA = "sm__inst_executed_pipe_tensor_op_hmma.sum"


def definition(name: str) -> str:
    unit, words = LEDGER[name]
    return f"{name} ({unit}): {words}"


# ------------------------------------------------------------------------------------------ FLOPs

def model_flops(shape: Shape) -> float:
    """model FLOPs: 4·B·H·S²·D, halved for a causal mask."""
    return shape.attention_flops


def work_columns(table: pd.DataFrame) -> list[str]:
    return [c for c in table.columns if TENSOR_TOTAL.match(c) or c == FFMA]


def calibration_rows(tables: Mapping[str, pd.DataFrame], calibrations: list[dict]) -> list[dict]:
    """One row per (calibration matmul, counter that read anything): its FLOPs (2·m·n·k), the
    reading, FLOPs per unit, and the matmul's ncu time."""
    rows = []
    for cal in calibrations:
        table = tables[cal["name"]]
        flops = 2 * cal["m"] * cal["n"] * cal["k"]
        for counter in work_columns(table):
            reading = float(table[counter].sum())
            if reading > 0:
                rows.append({"matmul": f"{cal['dtype']}, {cal['m']}×{cal['n']}×{cal['k']}", "dtype": cal["dtype"],
                             "FLOPs (2·m·n·k)": flops, "counter": counter, "reading": reading,
                             "FLOPs per unit": flops / reading, "ncu ns": float(table["time_ns"].sum())})
    return rows


def flops_per_unit(tables: Mapping[str, pd.DataFrame], calibrations: list[dict]) -> dict[str, float]:
    """counter -> FLOPs per unit, each from the calibration in which it carries the work (the one
    where its reading is largest)."""
    best: dict[str, tuple[float, float]] = {}
    for r in calibration_rows(tables, calibrations):
        if r["counter"] not in best or r["reading"] > best[r["counter"]][0]:
            best[r["counter"]] = (r["reading"], r["FLOPs per unit"])
    return {k: v[1] for k, v in best.items()}


def tensor_flops(table: pd.DataFrame, factors: Mapping[str, float]) -> pd.Series:
    """Per kernel: executed FLOPs on the tensor pipe."""
    total = pd.Series(0.0, index=table.index)
    for counter, factor in factors.items():
        if TENSOR_TOTAL.match(counter) and counter in table.columns:
            total = total + table[counter].fillna(0).astype(float) * factor
    return total


def ffma_flops(table: pd.DataFrame, factors: Mapping[str, float]) -> pd.Series:
    """Per kernel: executed FLOPs of fp32 FFMA instructions (2 per instruction and thread, as the
    fp32 calibration measures)."""
    if FFMA not in factors or FFMA not in table.columns:
        return pd.Series(0.0, index=table.index)
    return table[FFMA].fillna(0).astype(float) * factors[FFMA]


def fadd_fmul_flops(table: pd.DataFrame, factors: Mapping[str, float]) -> pd.Series:
    """Per kernel: executed FLOPs of fp32 FADD and FMUL instructions, one per instruction and
    thread (half an FFMA's calibrated worth; none without an FFMA calibration)."""
    total = pd.Series(0.0, index=table.index)
    if FFMA not in factors:
        return total
    for counter in (FADD, FMUL):
        if counter in table.columns:
            total = total + table[counter].fillna(0).astype(float) * factors[FFMA] / 2
    return total


def fp32_flops(table: pd.DataFrame, factors: Mapping[str, float]) -> pd.Series:
    """Per kernel: executed fp32 FLOPs on the FMA pipe: FFMA, FADD and FMUL."""
    return ffma_flops(table, factors) + fadd_fmul_flops(table, factors)


def executed_flops(table: pd.DataFrame, factors: Mapping[str, float]) -> pd.Series:
    """Per kernel: executed FLOPs, the tensor pipe's and the fp32 FMA pipe's (FFMA, FADD, FMUL)."""
    return tensor_flops(table, factors) + fp32_flops(table, factors)


def pipe_of(table: pd.DataFrame, factors: Mapping[str, float]) -> pd.Series:
    """Per kernel: the pipe that did most of its executed FLOPs, "bf16 tensor" or "fp32 FFMA"
    (the fp32 FMA pipe: FFMA, FADD, FMUL; None where it did none)."""
    t, f = tensor_flops(table, factors), fp32_flops(table, factors)
    return pd.Series([None if a + b == 0 else TENSOR_PIPE if a >= b else FFMA_PIPE for a, b in zip(t, f)],
                     index=table.index, dtype=object)


def mma_family(table: pd.DataFrame) -> pd.Series:
    """Per kernel: "wgmma" where Hopper's warpgroup MMA instructions ran, "mma.sync" where only
    the warp-level ones did, None where no tensor instruction ran."""
    from ..hopper.core import path_of   # the one definition of the words (chapter 7b's)
    g = table[GMMA].fillna(0) if GMMA in table.columns else pd.Series(0, index=table.index)
    h = table[HMMA].fillna(0) if HMMA in table.columns else pd.Series(0, index=table.index)
    return pd.Series([None if path_of(a, b) == "none" else path_of(a, b) for a, b in zip(g, h)],
                     index=table.index, dtype=object)


# ------------------------------------------------------------------------------------------ bytes, time

def kernel_dram_bytes(table: pd.DataFrame) -> float:
    """kernel DRAM bytes, summed over the table's kernels."""
    return float(table["dram_bytes"].sum())


def forward_dram_bytes(table: pd.DataFrame, copy_bytes: float) -> float:
    """forward DRAM bytes: the kernels' plus the copies' (from the trace)."""
    return kernel_dram_bytes(table) + float(copy_bytes)


def ncu_seconds(table: pd.DataFrame, copy_seconds: float = 0.0) -> float:
    """ncu time in seconds: the kernels' plus the copies'."""
    return float(table["time_ns"].sum()) / 1e9 + float(copy_seconds)


def model_tflops(shape: Shape, profiler_gpu_us: float) -> float:
    """model TFLOP/s: model FLOPs over the profiler GPU time."""
    return model_flops(shape) / (profiler_gpu_us * 1e-6) / TB


# ------------------------------------------------------------------------------------------ roofs

def pipe_roofs(tables: Mapping[str, pd.DataFrame], calibrations: list[dict]) -> dict[str, float]:
    """Each pipe's roof in TFLOP/s from the calibration matmuls: FLOPs over ncu time, the bf16
    matmul for the tensor pipe and the fp32 one for FFMA."""
    out = {}
    for cal in calibrations:
        table = tables[cal["name"]]
        flops = 2 * cal["m"] * cal["n"] * cal["k"]
        pipe = FFMA_PIPE if cal["dtype"] in ("float32", "fp32") else TENSOR_PIPE
        out[pipe] = flops / (float(table["time_ns"].sum()) / 1e9) / TB
    return out


def ridge(compute_tflops: float, copy_tbps: float) -> float:
    return compute_tflops / copy_tbps


def attainable(intensity, compute_tflops: float, copy_tbps: float) -> np.ndarray:
    """The roof in FLOP/s at an arithmetic intensity: min(compute, intensity × copy)."""
    return np.minimum(compute_tflops * TB, np.asarray(intensity, dtype=float) * copy_tbps * TB)


def limit(flops: float, dram_bytes: float, seconds: float, compute_tflops: float, copy_tbps: float) -> dict:
    """Where one kernel (or a sum of kernels) stands against the two roofs of its pipe: its side
    of the ridge, its share of each roof, and what bounds it: "compute" or "memory" where it
    reaches BOUND_SHARE of that roof, else "neither roof" (latency: too few warps in flight, or too
    little work per warp between its waits)."""
    tflops = flops / seconds / TB
    tbps = dram_bytes / seconds / TB
    of_compute, of_copy = tflops / compute_tflops, tbps / copy_tbps
    side = "memory" if dram_bytes and flops / dram_bytes < ridge(compute_tflops, copy_tbps) else "compute"
    bound = ("compute" if of_compute >= BOUND_SHARE and of_compute >= of_copy else
             "memory" if of_copy >= BOUND_SHARE else "neither roof")
    return {"TFLOP/s": tflops, "TB/s": tbps, "% of compute roof": 100 * of_compute,
            "% of copy roof": 100 * of_copy, "side": side, "bound": bound}


# ------------------------------------------------------------------------------------------ memory

def inputs_bytes(shape: Shape, tensors: int = 4, element: int = 2) -> float:
    """The inputs one training step reads, from the shape: q, k, v and dO (4 tensors of B·H·S·D
    elements, bf16)."""
    return float(tensors * shape.batch * shape.heads * shape.seq * shape.head_dim * element)


def wall_seq(bytes_per_score: float, bytes_per_q_element: float, batch: int, heads: int, head_dim: int,
             total_bytes: float) -> float:
    """The seq at which a·B·H·S² + b·B·H·S·D bytes reach `total_bytes` (a, b ≥ 0)."""
    a, b = bytes_per_score * batch * heads, bytes_per_q_element * batch * heads * head_dim
    if a > 0:
        return float((-b + np.sqrt(b * b + 4 * a * total_bytes)) / (2 * a))
    return float(total_bytes / b) if b > 0 else float("inf")


# ------------------------------------------------------------------------------------------ decode

def time_per_token(loop_us) -> float:
    """time per token: the median of the caller's timer's repeats (µs per step)."""
    v = sorted(float(x) for x in loop_us)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def achieved_gbps(nbytes: float, microseconds: float) -> float:
    """achieved bandwidth: bytes over µs, in GB/s (1 GB = 1e9 bytes)."""
    return float(nbytes) / float(microseconds) / 1e3
