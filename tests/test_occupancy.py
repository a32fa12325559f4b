"""Tests for helpers.occupancy.gpus and helpers.occupancy.calculator.

(a) the driver sweep recorded on a GPU agrees with the calculator, row for row;
(b) impossible input is refused, naming the limit, and nothing comes back NaN;
(c) properties that hold whatever the table's numbers are;
(d) Kineto's "est. achieved occupancy %" in every recorded trace is reproduced exactly;
plus one test on a real GPU (marked ``gpu``), skipped without CUDA.
"""
from __future__ import annotations

import gzip
import itertools
import json
import math
from pathlib import Path

import pytest

from helpers.occupancy.gpus import ARCHITECTURES, PRODUCTS, gpu_spec, product_for_device_name
from helpers.occupancy.calculator import (LIMITERS, UNLIMITED, kineto_estimated_occupancy_pct,
                               occupancy)

ROOT = Path(__file__).resolve().parents[1]
SWEEP = ROOT / "benchmarks" / "results" / "occupancy_sweep_h200.csv.gz"
TRACES = sorted(set((ROOT / "notebooks" / "traces").glob("**/*.json.gz"))
                | set((ROOT / "benchmarks" / "results").glob("**/*.trace.json.gz")))
CAPABILITIES = [f"{a}.{b}" for a, b in ARCHITECTURES]


# ---------------------------------------------------------------- (a) the GPU sweep

@pytest.mark.skipif(not SWEEP.exists(), reason=f"{SWEEP.relative_to(ROOT)} not recorded yet: "
                    "run benchmarks/occupancy_sweep.py on the GPU")
def test_sweep_matches_driver_row_for_row():
    import pandas as pd

    df = pd.read_csv(SWEEP, keep_default_na=False, dtype={"capability": str})
    assert len(df) >= 10_000, f"only {len(df)} configurations recorded"
    assert df["carveout"].nunique() >= 4, "the sweep should cover several carveouts"
    assert "opt-in" in set(df["mode"])
    mismatches = []
    cache: dict[tuple, int] = {}
    for row in df.itertuples(index=False):
        key = (row.capability, row.threads_per_block, row.registers_per_thread,
               row.shared_memory_per_block, row.carveout, row.mode)
        if key not in cache:
            carveout = None if int(row.carveout) == -1 else int(row.carveout)
            cache[key] = occupancy(row.capability, int(row.threads_per_block),
                                   int(row.registers_per_thread), int(row.shared_memory_per_block),
                                   carveout=carveout, shared_memory_limit=row.mode).active_blocks
        # a driver error means the launch cannot run: no block of it is resident
        driver = 0 if str(row.driver_error) else int(row.driver_blocks)
        if cache[key] != driver:
            mismatches.append((key, row.kernel, driver, row.driver_error, cache[key]))
    assert not mismatches, (f"{len(mismatches)} of {len(df)} rows disagree, e.g. "
                            f"(capability, threads, regs, smem, carveout, mode), kernel, driver, "
                            f"driver error, calculator: {mismatches[:5]}")


# ---------------------------------------------------------------- (b) bad input, no NaN

@pytest.mark.parametrize("kwargs, words", [
    (dict(threads_per_block=0, registers_per_thread=32), ["threads_per_block", "1024"]),
    (dict(threads_per_block=1025, registers_per_thread=32), ["threads_per_block", "1024"]),
    (dict(threads_per_block=-5, registers_per_thread=32), ["threads_per_block"]),
    (dict(threads_per_block=128, registers_per_thread=-1), ["registers_per_thread", "255"]),
    (dict(threads_per_block=128, registers_per_thread=256), ["registers_per_thread", "255"]),
    (dict(threads_per_block=128, registers_per_thread=32, shared_memory_per_block=232449),
     ["opt-in", "232448"]),
    (dict(threads_per_block=128, registers_per_thread=32, shared_memory_per_block=232449,
          shared_memory_limit="default"), ["opt-in", "232448"]),
    (dict(threads_per_block=128, registers_per_thread=32, shared_memory_per_block=-1),
     ["shared_memory_per_block"]),
    (dict(threads_per_block=128, registers_per_thread=32, carveout=-1), ["carveout", "0..100"]),
    (dict(threads_per_block=128, registers_per_thread=32, carveout=101), ["carveout", "0..100"]),
    (dict(threads_per_block=128, registers_per_thread=32, shared_memory_limit="max"),
     ["shared_memory_limit"]),
    (dict(threads_per_block=128.5, registers_per_thread=32), ["threads_per_block", "integer"]),
    (dict(threads_per_block=True, registers_per_thread=32), ["threads_per_block", "integer"]),
])
def test_bad_input_names_the_limit(kwargs, words):
    with pytest.raises(ValueError) as info:
        occupancy("9.0", **kwargs)
    for word in words:
        assert word in str(info.value)


@pytest.mark.parametrize("gpu", ["GTX 9999", "sm_99", (5, 0), "6.1", "", None, 90])
def test_unknown_gpu_names_the_known_ones(gpu):
    with pytest.raises(ValueError) as info:
        occupancy(gpu, 128, 32)
    assert "unknown GPU" in str(info.value)
    assert "H200" in str(info.value) and "9.0" in str(info.value)


def test_default_limit_over_48k_is_valid_and_fits_zero_times():
    r = occupancy("9.0", 128, 32, 48 * 1024 + 1, shared_memory_limit="default")
    assert r.active_blocks == 0 and r.occupancy == 0.0
    assert r.limiters == {"shared_memory"}
    assert occupancy("9.0", 128, 32, 48 * 1024, shared_memory_limit="default").active_blocks > 0
    assert occupancy("9.0", 128, 32, 48 * 1024 + 1).active_blocks > 0   # opted in


def test_registers_that_cannot_fit_give_zero_blocks():
    r = occupancy("9.0", 1024, 255)   # 8192 registers a warp x 32 warps > 64K per block
    assert r.active_blocks == 0 and r.occupancy == 0.0
    assert "registers" in r.limiters and r.block_limits["registers"] == 0


def test_kineto_bad_input():
    with pytest.raises(ValueError, match="sm_count"):
        kineto_estimated_occupancy_pct("9.0", 128, 32, 0, 100, 0)
    with pytest.raises(ValueError, match="grid_blocks"):
        kineto_estimated_occupancy_pct("9.0", 128, 32, 0, -1, 132)
    with pytest.raises(ValueError, match="threads_per_block"):
        kineto_estimated_occupancy_pct("9.0", 2048, 32, 0, 100, 132)


def _grid():
    for cap in CAPABILITIES:
        spec = gpu_spec(cap)
        smems = [0, 1, 4096, 48 * 1024, 48 * 1024 + 1, spec.shared_memory_per_block_optin]
        for t, r, s, c, m in itertools.product(
                [1, 31, 32, 33, 100, 128, 256, 384, 512, 768, 1024],
                [0, 1, 16, 33, 64, 128, 200, 255], smems, [None, 0, 37, 100],
                ["opt-in", "default"]):
            yield cap, t, r, s, c, m


def test_no_nan_and_fractions_in_range_over_a_grid():
    for cap, t, r, s, c, m in _grid():
        res = occupancy(cap, t, r, s, carveout=c, shared_memory_limit=m)
        values = [res.occupancy, *res.utilization.values(), res.active_blocks, res.active_warps,
                  *res.block_limits.values()]
        assert all(isinstance(v, (int, float)) and math.isfinite(v) for v in values), res
        assert 0.0 <= res.occupancy <= 1.0
        assert all(0.0 <= u <= 1.0 for u in res.utilization.values()), res.utilization
        assert set(res.utilization) == set(LIMITERS) == set(res.block_limits)


# ---------------------------------------------------------------- (c) properties

def test_invariants_hold_over_the_grid():
    for cap, t, r, s, c, m in _grid():
        res = occupancy(cap, t, r, s, carveout=c, shared_memory_limit=m)
        assert res.active_blocks == min(res.block_limits.values())
        assert res.limiters == {k for k, v in res.block_limits.items() if v == res.active_blocks}
        assert res.limiters and res.limiters <= set(LIMITERS)
        assert res.active_warps == res.active_blocks * math.ceil(t / 32)
        assert res.occupancy == res.active_warps / res.max_warps
        assert res.max_warps == res.gpu.max_warps_per_sm
        assert res.active_warps <= res.max_warps
        assert res.active_blocks <= res.gpu.max_blocks_per_sm


@pytest.mark.parametrize("cap", CAPABILITIES)
def test_more_registers_never_raise_occupancy(cap):
    for t in (32, 96, 128, 256, 640, 1024):
        for s in (0, 20000):
            blocks = [occupancy(cap, t, r, s).active_blocks for r in range(0, 256)]
            assert all(a >= b for a, b in zip(blocks, blocks[1:])), (t, s)


@pytest.mark.parametrize("cap", CAPABILITIES)
def test_more_shared_memory_never_raises_occupancy(cap):
    spec = gpu_spec(cap)
    sizes = list(range(0, spec.shared_memory_per_block_optin + 1, 97))
    for c, m in itertools.product([None, 0, 10, 50, 100], ["opt-in", "default"]):
        blocks = [occupancy(cap, 64, 32, s, carveout=c, shared_memory_limit=m).active_blocks
                  for s in sizes]
        assert all(a >= b for a, b in zip(blocks, blocks[1:])), (c, m)


@pytest.mark.parametrize("cap", CAPABILITIES)
def test_carveout_and_opt_in_never_lower_occupancy(cap):
    spec = gpu_spec(cap)
    sizes = (0, 1000, 9000, 30000, 49152, 49153, 70000, spec.shared_memory_per_block_optin)
    for s in (s for s in sizes if s <= spec.shared_memory_per_block_optin):
        per_carveout = [occupancy(cap, 128, 32, s, carveout=c).active_blocks
                        for c in range(0, 101)]
        assert all(a <= b for a, b in zip(per_carveout, per_carveout[1:])), s
        # no preference: the driver's pick holds as many blocks as the most shared memory (100%)
        assert occupancy(cap, 128, 32, s).active_blocks == per_carveout[-1]
        assert (occupancy(cap, 128, 32, s, shared_memory_limit="opt-in").active_blocks
                >= occupancy(cap, 128, 32, s, shared_memory_limit="default").active_blocks)


def test_no_registers_and_no_shared_memory_are_unlimited():
    r = occupancy("7.5", 128, 0, 0)   # Turing reserves nothing per block
    assert r.block_limits["registers"] == UNLIMITED
    assert r.block_limits["shared_memory"] == UNLIMITED
    # from Ampere on the driver's 1 KiB makes even a block with no shared memory count
    a100 = gpu_spec("8.0")
    assert occupancy("8.0", 128, 0, 0, carveout=100).block_limits["shared_memory"] == (
        a100.shared_memory_per_sm // a100.reserved_shared_memory_per_block)
    # with no preference the driver's pick holds the 16 blocks the warp slots allow, no more
    assert occupancy("8.0", 128, 0, 0).block_limits["shared_memory"] == 16


def test_product_and_capability_agree():
    for product in PRODUCTS.values():
        a = occupancy(product.name, 256, 64, 20000)
        b = occupancy(product.capability, 256, 64, 20000)
        assert (a.active_blocks, a.limiters) == (b.active_blocks, b.limiters)
        assert a.gpu.sm_count == product.sm_count


def test_result_is_frozen():
    r = occupancy("9.0", 128, 32)
    with pytest.raises(AttributeError):
        r.active_blocks = 3
    hash(r)


def driver_blocks(threads: int, registers: int, smem: int, mode: str = "opt-in", carveout: int = -1) -> int:
    """Resident blocks per SM the CUDA driver reported for one configuration on the H200 (the
    recorded sweep, benchmarks/results/occupancy_sweep_h200.csv.gz)."""
    import pandas as pd
    df = pd.read_csv(SWEEP, keep_default_na=False, dtype={"capability": str})
    rows = df[(df["threads_per_block"] == threads) & (df["registers_per_thread"] == registers)
              & (df["shared_memory_per_block"] == smem) & (df["mode"] == mode) & (df["carveout"] == carveout)]
    assert len(rows) and rows["driver_error"].eq("").all(), (threads, registers, smem, mode, carveout)
    assert rows["driver_blocks"].nunique() == 1
    return int(rows["driver_blocks"].iloc[0])


def test_worked_examples_from_the_book():
    h200 = gpu_spec("H200")
    warps = lambda blocks, threads: blocks * threads // h200.warp_size  # noqa: E731
    # FlashAttention-like: 128 threads, 255 registers: registers bound
    r = occupancy("9.0", 128, 255)
    assert r.active_blocks == driver_blocks(128, 255, 0)
    assert (r.active_warps, r.max_warps) == (warps(r.active_blocks, 128), h200.max_warps_per_sm)
    assert r.limiters == {"registers"}
    # the cuDNN kernel: 168 registers x 384 threads with 132 KiB (after the driver's 1 KiB)
    r = occupancy("H200", 384, 168, 134144)
    assert r.active_blocks == driver_blocks(384, 168, 134144, carveout=100)
    assert r.active_warps == warps(r.active_blocks, 384) and r.occupancy == r.active_warps / h200.max_warps_per_sm
    assert r.limiters == {"registers", "shared_memory"}
    # 40 registers, 256 threads: the per-sub-partition rule, not 65536 / (40 x 32) warps
    r = occupancy("9.0", 256, 40)
    assert r.active_blocks == driver_blocks(256, 40, 0)
    assert r.active_warps == warps(r.active_blocks, 256) < h200.registers_per_sm // (40 * h200.warp_size)
    assert r.limiters == {"registers"}


# kernels of the H200 replay set whose recorded estimate shows a rule: the flash kernel, CUTLASS's
# fmha, cuDNN's (over 48 KiB: Kineto leaves out the opt-in), softmax (62.5 rounds half up), a one-block
# fill, the mask, and an FFMA gemm. Their launch and CUPTI's estimate are read from the traces.
KINETO_EXAMPLES = ("flash_fwd_kernel", "fmha_cutlassF", "cudnn_generated", "softmax_warp_forward",
                   "FillFunctor", "triu_tril_kernel", "sm80_xmma_gemm")


@pytest.mark.parametrize("example", KINETO_EXAMPLES)
def test_kineto_readings_on_h200(example):
    seen = []
    for path in sorted((ROOT / "notebooks" / "traces" / "h200").glob("*__*.json.gz")):
        with gzip.open(path, "rt") as fh:
            document = json.load(fh)
        prov = document["provenance"]
        for e in document["traceEvents"]:
            args = e.get("args") or {}
            if e.get("cat") == "kernel" and example in e.get("name", "") and "est. achieved occupancy %" in args:
                block, grid = args["block"], args["grid"]
                seen.append((kineto_estimated_occupancy_pct(
                    prov["capability"], block[0] * block[1] * block[2], args["registers per thread"],
                    args["shared memory"], grid[0] * grid[1] * grid[2], prov["sm_count"]),
                    args["est. achieved occupancy %"]))
        if seen:
            break
    assert seen, f"no {example} kernel in the H200 replay set"
    assert all(got == recorded for got, recorded in seen), seen


def test_kineto_grows_with_the_grid_up_to_the_theoretical_figure():
    for threads, regs, smem in [(128, 32, 0), (256, 96, 20000), (1024, 32, 0), (96, 255, 4000)]:
        series = [kineto_estimated_occupancy_pct("9.0", threads, regs, smem, g, 132)
                  for g in range(0, 132 * 40, 7)]
        assert all(a <= b for a, b in zip(series, series[1:]))
        theory = occupancy("9.0", threads, regs, smem, shared_memory_limit="default")
        full = theory.active_blocks * threads / theory.gpu.max_threads_per_sm
        assert series[-1] == int(0.5 + 100 * full)


# ---------------------------------------------------------------- the GPU table

def test_gpu_lookup_forms():
    assert gpu_spec("9.0") is gpu_spec("sm_90") is gpu_spec((9, 0)) is gpu_spec("sm_90a")
    assert gpu_spec("sm_100").capability == (10, 0)
    assert gpu_spec("sm_120").capability == (12, 0)
    assert gpu_spec("compute_75").capability == (7, 5)
    for name, (cap, sms) in {"NVIDIA H200": ((9, 0), 132), "NVIDIA A100-SXM4-80GB": ((8, 0), 108),
                             "NVIDIA A100-SXM4-40GB": ((8, 0), 108), "Tesla T4": ((7, 5), 40),
                             "NVIDIA L40S": ((8, 9), 142), "NVIDIA L4": ((8, 9), 58),
                             "NVIDIA A10G": ((8, 6), 80), "NVIDIA H100 80GB HBM3": ((9, 0), 132),
                             "NVIDIA B200": ((10, 0), 148),
                             "NVIDIA GeForce RTX 5090": ((12, 0), 170),
                             "h200": ((9, 0), 132), "RTX 5090": ((12, 0), 170)}.items():
        spec = gpu_spec(name)
        assert (spec.capability, spec.sm_count) == (cap, sms), name
    assert product_for_device_name("NVIDIA H200").name == "H200"
    # cards whose SM count is not the table's are not guessed
    for name in ("NVIDIA H100 PCIe", "NVIDIA A10", "NVIDIA L40", "NVIDIA GeForce RTX 5090 Laptop GPU",
                 "AMD Instinct MI300X", ""):
        assert product_for_device_name(name) is None, name


@pytest.mark.parametrize("cap", CAPABILITIES)
def test_spec_table_is_consistent(cap):
    s = gpu_spec(cap)
    assert s.max_threads_per_block == 1024 and s.warp_size == 32
    assert s.registers_per_sm == s.max_registers_per_block == 65536
    assert s.register_allocation_unit == 256 and s.sm_subpartitions == 4
    assert s.max_registers_per_thread == 255
    assert s.shared_memory_carveouts[-1] == s.shared_memory_per_sm
    assert list(s.shared_memory_carveouts) == sorted(s.shared_memory_carveouts)
    assert s.shared_memory_per_block_optin + s.reserved_shared_memory_per_block == s.shared_memory_per_sm
    assert s.shared_memory_per_block_default == 48 * 1024
    assert s.reserved_shared_memory_per_block == (1024 if s.capability >= (8, 0) else 0)
    assert s.shared_memory_allocation_unit == (128 if s.capability >= (8, 0) else 256)
    assert s.max_threads_per_sm in (1024, 1536, 2048)


# ---------------------------------------------------------------- (d) recorded traces

def _trace_ids():
    return [str(p.relative_to(ROOT)) for p in TRACES] or ["no-traces"]


@pytest.mark.parametrize("path", TRACES or [None], ids=_trace_ids())
def test_kineto_occupancy_in_recorded_traces(path, recorded_traces):
    # recorded_traces fails (never skips) where the replay set is missing
    assert path is not None, "no recorded traces under notebooks/traces/"
    with gzip.open(path, "rt") as fh:
        trace = json.load(fh)
    prov = trace.get("provenance") or {}
    capability = prov.get("capability")
    sm_count = prov.get("sm_count")
    if capability is None or not sm_count:
        product = product_for_device_name(prov.get("gpu", ""))
        if product is None:
            pytest.skip(f"{path.name}: provenance names no capability/sm_count: {prov}")
        capability = capability or product.capability
        sm_count = sm_count or product.sm_count
    checked, wrong = 0, []
    for e in trace.get("traceEvents", []):
        args = e.get("args") or {}
        if (e.get("ph") != "X" or e.get("cat") != "kernel"
                or "est. achieved occupancy %" not in args):
            continue
        block, grid = args["block"], args["grid"]
        got = kineto_estimated_occupancy_pct(
            capability, block[0] * block[1] * block[2], args["registers per thread"],
            args["shared memory"], grid[0] * grid[1] * grid[2], sm_count)
        checked += 1
        if got != args["est. achieved occupancy %"]:
            wrong.append((e.get("name", "")[:80], args["registers per thread"], block,
                          args["shared memory"], grid, args["est. achieved occupancy %"], got))
    if not checked:
        pytest.skip(f"{path.name} has no kernel events with an occupancy estimate")
    assert not wrong, f"{len(wrong)} of {checked} kernels differ: {wrong[:5]}"


# ---------------------------------------------------------------- a real GPU

def _cuda_and_cupy():
    try:
        import torch
        if not torch.cuda.is_available():
            return None
        import cupy
        return cupy
    except Exception:  # noqa: BLE001 - no CUDA stack here
        return None


# replay counterpart, run in CI: tests/independent/test_calculator_page.py::test_helpers_occupancy_agrees_with_the_driver_on_every_recorded_kernel
@pytest.mark.gpu
def test_matches_the_driver_on_real_kernels():
    cupy = _cuda_and_cupy()
    if cupy is None:
        pytest.skip("needs CUDA and CuPy")
    source = r"""
    extern "C" __global__ void k(const float* x, float* y, int mask) {
        float acc[NACC];
        int t = blockIdx.x * blockDim.x + threadIdx.x;
        #pragma unroll
        for (int i = 0; i < NACC; ++i) acc[i] = x[(t + 131 * i) & mask];
        #pragma unroll
        for (int i = 0; i < NACC; ++i) acc[i] = acc[i] * acc[(i + 1) % NACC] + 1.f;
        float s = 0.f;
        #pragma unroll
        for (int i = 0; i < NACC; ++i) s += acc[i];
        __shared__ float buf[SMEM];
        buf[threadIdx.x % SMEM] = s;
        __syncthreads();
        y[t & mask] = buf[(threadIdx.x + 1) % SMEM];
    }"""
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    capability = (props["major"], props["minor"])
    optin = props["sharedMemPerBlockOptin"]
    checked = 0
    for nacc, smem_floats, cap in [(4, 16, None), (64, 3168, 64), (200, 1024, 255)]:
        code = source.replace("NACC", str(nacc)).replace("SMEM", str(smem_floats))
        opts = (f"--maxrregcount={cap}",) if cap else ()
        kernel = cupy.RawKernel(code + f"\n// {nacc} {smem_floats} {cap}\n", "k", options=opts)
        kernel.compile()
        static = kernel.shared_size_bytes
        kernel.max_dynamic_shared_size_bytes = optin - static
        for threads in (32, 128, 256, 384, 640, 1024):
            for dyn in sorted({0, 49152 - static, 49153 - static, 100000, optin - static}):
                if dyn > optin - static:
                    continue
                try:
                    driver = cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(
                        kernel.kernel.ptr, threads, dyn)
                except Exception:  # noqa: BLE001 - a launch that cannot run: 0 resident blocks
                    driver = 0
                ours = occupancy(capability, threads, kernel.num_regs, static + dyn).active_blocks
                assert ours == driver, (kernel.num_regs, static, threads, dyn)
                checked += 1
    assert checked > 0


# the message names what the reader gave, beside the limit (mutants that printed None survived)
@pytest.mark.parametrize("kwargs, given", [
    (dict(threads_per_block=1025, registers_per_thread=32), "got 1025"),
    (dict(threads_per_block=128, registers_per_thread=256), "got 256"),
    (dict(threads_per_block=128, registers_per_thread=32, shared_memory_per_block=-7), "got -7"),
    (dict(threads_per_block=128, registers_per_thread=32, shared_memory_per_block=232449), "232449 B"),
    (dict(threads_per_block=128, registers_per_thread=32, carveout=101), "got 101"),
    (dict(threads_per_block=128, registers_per_thread=32, shared_memory_limit="max"), "got 'max'"),
    (dict(threads_per_block="12x", registers_per_thread=32), "threads_per_block must be an integer, got '12x'"),
    (dict(threads_per_block=128, registers_per_thread="r"), "registers_per_thread must be an integer, got 'r'"),
    (dict(threads_per_block=128, registers_per_thread=32, shared_memory_per_block=1.5),
     "shared_memory_per_block must be an integer, got 1.5"),
    (dict(threads_per_block=128, registers_per_thread=32, carveout="half"), "carveout must be an integer, got 'half'"),
    (dict(threads_per_block=True, registers_per_thread=32), "threads_per_block must be an integer, got True"),
])
def test_bad_input_names_the_value_given(kwargs, given):
    with pytest.raises(ValueError) as info:
        occupancy("9.0", **kwargs)
    assert given in str(info.value)
    if kwargs.get("shared_memory_per_block") == 232449:
        assert "of sm_90 (" in str(info.value)  # the architecture whose opt-in maximum it is (capability 9.0)
    if kwargs.get("shared_memory_limit") == "max":
        assert "default" in str(info.value) and "opt-in" in str(info.value)  # the limits it may be


def test_kineto_estimate_names_a_bad_count_and_omitted_shared_memory_is_none():
    for kwargs, what in ((dict(grid_blocks="g", sm_count=132), "grid_blocks"), (dict(grid_blocks=8, sm_count="s"), "sm_count")):
        with pytest.raises(ValueError, match=f"{what} must be an integer"):
            kineto_estimated_occupancy_pct("9.0", 128, 32, 0, **kwargs)
    # shared memory left out is none at all: the same answer as 0 bytes, for every limiter's side
    for threads, regs in ((128, 32), (1024, 64), (64, 255), (32, 16)):
        assert occupancy("9.0", threads, regs) == occupancy("9.0", threads, regs, 0)

    # a whole float is that integer (a value read from JSON or a spreadsheet), and one SM is a valid count
    assert occupancy("9.0", 128.0, 32.0, 1024.0) == occupancy("9.0", 128, 32, 1024)
    assert 0 <= kineto_estimated_occupancy_pct("9.0", 128, 32, 0, grid_blocks=1, sm_count=1) <= 100
