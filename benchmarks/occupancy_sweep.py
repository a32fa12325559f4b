"""Check helpers.occupancy against the CUDA driver's own occupancy calculator, on a real GPU.

Run from the repository root (PYTHONPATH set to it):

    python benchmarks/occupancy_sweep.py --out benchmarks/results/occupancy_sweep_h200.csv.gz

It compiles a family of kernels with NVRTC through CuPy, with real register counts set by
``--maxrregcount`` (the count is read back from the compiled kernel, never assumed) and real
static shared memory, and for each one asks ``cuOccupancyMaxActiveBlocksPerMultiprocessor``
how many blocks fit, over block sizes, dynamic shared memory and carveout preferences, in two
modes:

* ``opt-in``: the kernel's dynamic shared memory limit raised to the GPU's opt-in maximum
  (``max_dynamic_shared_size_bytes``), compared with ``occupancy(..., shared_memory_limit="opt-in")``;
* ``default``: the limit left as the driver sets it (48 KiB less the static shared memory),
  compared with ``shared_memory_limit="default"``, which is what Kineto computes.

Every configuration goes into the CSV with both answers; a sidecar JSON holds the GPU, driver
and toolkit versions and the device properties. How the two answers are compared: where the
driver answers with an error instead of a count (a block size the kernel cannot be launched
with, dynamic shared memory above the kernel's limit), the launch could not run, so no block
of it is resident: the error counts as 0 blocks, and the calculator, which says 0 there, agrees.
Both the raw error and the count are kept in the CSV. Per-configuration failures are recorded,
never fatal.
"""
from __future__ import annotations

import argparse
import csv
import gzip
import json
import platform
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from helpers.occupancy import occupancy, product_for_device_name, gpu_spec  # noqa: E402

# One template for every kernel: NACC live accumulators make the register pressure, SMEM_FLOATS
# floats of static shared memory make the static footprint. The tag keeps each variant's source
# unique, so that CuPy never hands two variants the same module (their attributes would be shared).
KERNEL_TEMPLATE = r"""
// variant TAG
#define NACC NACC_VALUE
#define SMEM_FLOATS SMEM_VALUE
extern "C" __global__ void sweep_kernel(const float* __restrict__ x, float* __restrict__ y,
                                        int mask) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float acc[NACC];
#pragma unroll
    for (int i = 0; i < NACC; ++i) acc[i] = x[(t + i * 131) & mask];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
#pragma unroll
        for (int i = 0; i < NACC; ++i)
            acc[i] = fmaf(acc[i], acc[(i + r + 1) % NACC], x[(t * 7 + i + r) & mask]);
    }
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < NACC; ++i) s += acc[i] * (float)(i + 1);
#if SMEM_FLOATS > 0
    __shared__ float buf[SMEM_FLOATS];
    for (int i = threadIdx.x; i < SMEM_FLOATS; i += blockDim.x) buf[i] = s + (float)i;
    __syncthreads();
    s += buf[(threadIdx.x * 17) % SMEM_FLOATS];
#endif
    y[t & mask] = s;
}
"""

# (name, accumulators, static shared bytes, maxrregcount or None)
def kernel_variants() -> list[tuple[str, int, int, int | None]]:
    # light kernels first: they compile in a moment, so a slow compile of the hungry ones can
    # only cut the sweep short at its end
    variants = []
    # light kernels with static shared memory of many sizes, some near granularity edges
    for static in (4, 1028, 4100, 12672, 18944, 32772, 45056, 48128, 49152):
        variants.append((f"light_s{static}", 4, static, None))
    # both at once
    for cap, static in ((64, 18944), (128, 40960), (168, 8192), (255, 2048)):
        variants.append((f"mixed_r{cap}_s{static}", 64 if cap < 128 else 160, static, cap))
    # register-hungry: 208 accumulators want more than 255 registers; the cap sets the count
    for cap in (None, 16, 24, 32, 40, 48, 56, 64, 72, 80, 96, 104, 128, 144, 168, 184, 200,
                232, 255):
        variants.append((f"hungry_r{cap or 'free'}", 208, 0, cap))
    return variants


BLOCK_SIZES = (1, 16, 31, 32, 33, 48, 63, 64, 65, 96, 100, 127, 128, 129, 160, 192, 200, 224,
               255, 256, 257, 288, 320, 352, 384, 416, 448, 480, 511, 512, 513, 544, 576, 608,
               640, 672, 704, 736, 768, 800, 832, 864, 896, 897, 928, 960, 992, 1000, 1023, 1024)
CARVEOUTS = (-1, 0, 1, 10, 25, 33, 50, 60, 66, 75, 90, 100)   # -1: the driver's default


def dynamic_sizes(static: int, optin: int) -> list[int]:
    """Dynamic shared memory values for a kernel with ``static`` bytes, up to the opt-in max."""
    base = [0, 1, 127, 128, 129, 896, 1024, 1025, 2048, 4096, 8064, 8192, 8193, 12288, 16384,
            20480, 24576, 32768, 40960, 45056, 47104, 48127, 48128, 48129, 49151, 49152, 49153,
            50176, 57344, 65536, 73728, 81920, 98304, 100352, 102400, 114688, 116736, 131072,
            134144, 135168, 147456, 163840, 166912, 167936, 196608, 200704, 229376]
    room = optin - static
    # the default-limit edge and the opt-in edge, seen from this kernel's static size
    edges = [49152 - static - 1, 49152 - static, 49152 - static + 1, room - 129, room - 128,
             room - 1, room]
    return sorted({d for d in base + edges if 0 <= d <= room})


COLUMNS = ["kernel", "capability", "registers_per_thread", "static_shared_bytes",
           "kernel_max_threads_per_block", "local_bytes", "mode", "max_dynamic_attr",
           "carveout", "carveout_readback", "threads_per_block", "dynamic_shared_bytes",
           "shared_memory_per_block", "driver_blocks", "driver_error", "driver_effective",
           "calc_blocks", "calc_error", "match"]


def device_facts(cupy) -> dict:
    runtime = cupy.cuda.runtime
    dev = cupy.cuda.Device()
    props = runtime.getDeviceProperties(dev.id)
    name = props.get("name", b"")
    name = name.decode(errors="replace") if isinstance(name, bytes) else str(name)

    def attr(key, attr_name):
        if key in props:
            return int(props[key])
        try:
            return int(runtime.deviceGetAttribute(getattr(runtime, attr_name), dev.id))
        except Exception:  # noqa: BLE001 - a missing property is recorded as None
            return None

    facts = {
        "gpu": name,
        "capability": f"{props.get('major')}.{props.get('minor')}",
        "sm_count": attr("multiProcessorCount", "cudaDevAttrMultiProcessorCount"),
        "max_threads_per_sm": attr("maxThreadsPerMultiProcessor",
                                   "cudaDevAttrMaxThreadsPerMultiProcessor"),
        "max_blocks_per_sm": attr("maxBlocksPerMultiProcessor",
                                  "cudaDevAttrMaxBlocksPerMultiprocessor"),
        "registers_per_sm": attr("regsPerMultiprocessor",
                                 "cudaDevAttrMaxRegistersPerMultiprocessor"),
        "registers_per_block": attr("regsPerBlock", "cudaDevAttrMaxRegistersPerBlock"),
        "shared_memory_per_sm": attr("sharedMemPerMultiprocessor",
                                     "cudaDevAttrMaxSharedMemoryPerMultiprocessor"),
        "shared_memory_per_block": attr("sharedMemPerBlock",
                                        "cudaDevAttrMaxSharedMemoryPerBlock"),
        "shared_memory_per_block_optin": attr("sharedMemPerBlockOptin",
                                              "cudaDevAttrMaxSharedMemoryPerBlockOptin"),
        "reserved_shared_memory_per_block": attr("reservedSharedMemPerBlock",
                                                 "cudaDevAttrReservedSharedMemoryPerBlock"),
        "driver_version": runtime.driverGetVersion(),
        "runtime_version": runtime.runtimeGetVersion(),
        "cupy_version": cupy.__version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
    }
    try:
        facts["nvrtc_version"] = ".".join(map(str, cupy.cuda.nvrtc.getVersion()))
    except Exception as exc:  # noqa: BLE001
        facts["nvrtc_version"] = f"unknown ({exc})"
    try:
        import torch
        facts["torch_version"] = torch.__version__
        facts["torch_cuda"] = torch.version.cuda
    except Exception:  # noqa: BLE001 - torch is not needed here
        pass
    return facts


def table_vs_device(facts: dict) -> list[str]:
    """Where this repository's GPU table disagrees with what the device reports."""
    try:
        spec = gpu_spec(facts["capability"])
    except ValueError as exc:
        return [str(exc)]
    pairs = {
        "max_threads_per_sm": spec.max_threads_per_sm,
        "max_blocks_per_sm": spec.max_blocks_per_sm,
        "registers_per_sm": spec.registers_per_sm,
        "registers_per_block": spec.max_registers_per_block,
        "shared_memory_per_sm": spec.shared_memory_per_sm,
        "shared_memory_per_block": spec.shared_memory_per_block_default,
        "shared_memory_per_block_optin": spec.shared_memory_per_block_optin,
        "reserved_shared_memory_per_block": spec.reserved_shared_memory_per_block,
    }
    problems = [f"{k}: table {v}, device {facts.get(k)}" for k, v in pairs.items()
                if facts.get(k) is not None and facts.get(k) != v]
    product = product_for_device_name(facts["gpu"])
    if product is not None and product.sm_count != facts.get("sm_count"):
        problems.append(f"sm_count: table {product.sm_count} for {product.name}, "
                        f"device {facts.get('sm_count')}")
    return problems


def compile_kernel(cupy, name, nacc, static, cap):
    code = (KERNEL_TEMPLATE.replace("TAG", name).replace("NACC_VALUE", str(nacc))
            .replace("SMEM_VALUE", str(static // 4)))
    options = ("-std=c++14",) + ((f"--maxrregcount={cap}",) if cap else ())
    kernel = cupy.RawKernel(code, "sweep_kernel", options=options)
    kernel.compile()
    return kernel


def calculator(capability, threads, regs, total_smem, carveout, mode):
    try:
        r = occupancy(capability, threads, regs, total_smem,
                      carveout=None if carveout == -1 else carveout, shared_memory_limit=mode)
        return r.active_blocks, ""
    except ValueError as exc:
        return "", str(exc)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="benchmarks/results/occupancy_sweep_h200.csv.gz")
    parser.add_argument("--per-group", type=int, default=28,
                        help="sampled (block, dynamic smem) pairs per kernel x mode x carveout")
    parser.add_argument("--seed", type=int, default=20240611)
    parser.add_argument("--time-budget", type=float, default=100.0,
                        help="seconds; compiling and sweeping stop early past this")
    args = parser.parse_args(argv)
    started = time.perf_counter()

    import cupy
    drv = cupy.cuda.driver

    facts = device_facts(cupy)
    capability = facts["capability"]
    optin = facts.get("shared_memory_per_block_optin") or gpu_spec(capability).shared_memory_per_block_optin
    problems = table_vs_device(facts)
    print(f"device: {facts['gpu']} (sm {capability}, {facts['sm_count']} SMs), driver "
          f"{facts['driver_version']}, runtime {facts['runtime_version']}", flush=True)
    for p in problems:
        print(f"WARNING table differs from device: {p}", flush=True)

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    sidecar = out.with_name(out.name.replace(".csv.gz", "").replace(".csv", "") + ".json")
    rng_root = random.Random(args.seed)
    skipped_groups: list[str] = []
    kernels_info: list[dict] = []
    rows = 0
    mismatches: list[dict] = []
    driver_errors = 0
    truncated = False

    with gzip.open(out, "wt", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS)
        writer.writeheader()

        for name, nacc, static_req, cap in kernel_variants():
            if time.perf_counter() - started > args.time_budget:
                truncated = True
                print(f"time budget spent; stopping before kernel {name}", flush=True)
                break
            t0 = time.perf_counter()
            try:
                kernel = compile_kernel(cupy, name, nacc, static_req, cap)
                func = kernel.kernel.ptr
                regs = int(kernel.num_regs)
                static = int(kernel.shared_size_bytes)
                kmax = int(kernel.max_threads_per_block)
                local = int(kernel.local_size_bytes)
                default_dyn_attr = int(kernel.max_dynamic_shared_size_bytes)
            except Exception as exc:  # noqa: BLE001 - one bad variant must not stop the sweep
                print(f"kernel {name}: compile/attribute error: {exc}", flush=True)
                kernels_info.append({"kernel": name, "error": repr(exc)})
                continue
            info = {"kernel": name, "accumulators": nacc, "maxrregcount": cap,
                    "registers_per_thread": regs, "static_shared_bytes": static,
                    "max_threads_per_block": kmax, "local_bytes": local,
                    "default_max_dynamic_shared_bytes": default_dyn_attr,
                    "compile_s": round(time.perf_counter() - t0, 3)}
            kernels_info.append(info)
            print(f"kernel {name}: {regs} regs, {static} B static, max {kmax} threads, "
                  f"{local} B local ({info['compile_s']} s)", flush=True)

            dyn_all = dynamic_sizes(static, optin)
            pairs_all = [(b, d) for b in BLOCK_SIZES for d in dyn_all]

            def record(mode, dyn_attr, carveout, readback, threads, dyn):
                nonlocal rows, driver_errors
                try:
                    blocks = int(drv.occupancyMaxActiveBlocksPerMultiprocessor(func, threads, dyn))
                    err = ""
                except Exception as exc:  # noqa: BLE001 - recorded per configuration
                    blocks, err = "", f"{type(exc).__name__}: {exc}"
                    driver_errors += 1
                effective = 0 if err else blocks
                calc, calc_err = calculator(capability, threads, regs, static + dyn, carveout, mode)
                match = (not calc_err) and calc == effective
                row = {"kernel": name, "capability": capability, "registers_per_thread": regs,
                       "static_shared_bytes": static, "kernel_max_threads_per_block": kmax,
                       "local_bytes": local, "mode": mode, "max_dynamic_attr": dyn_attr,
                       "carveout": carveout, "carveout_readback": readback,
                       "threads_per_block": threads, "dynamic_shared_bytes": dyn,
                       "shared_memory_per_block": static + dyn, "driver_blocks": blocks,
                       "driver_error": err, "driver_effective": effective, "calc_blocks": calc,
                       "calc_error": calc_err, "match": int(match)}
                writer.writerow(row)
                rows += 1
                if not match:
                    mismatches.append(row)

            # carveout -1 comes first, while the kernel's preference is still untouched
            for carveout in CARVEOUTS:
                try:
                    if carveout != -1:
                        kernel.preferred_shared_memory_carveout = carveout
                    else:
                        try:  # a fresh kernel already has no preference; -1 may be refused
                            kernel.preferred_shared_memory_carveout = -1
                        except Exception:  # noqa: BLE001
                            pass
                    readback = int(kernel.preferred_shared_memory_carveout)
                except Exception as exc:  # noqa: BLE001
                    skipped_groups.append(f"{name} carveout {carveout}: {exc}")
                    continue
                for mode in ("opt-in", "default"):
                    dyn_attr = (optin - static) if mode == "opt-in" else default_dyn_attr
                    try:
                        kernel.max_dynamic_shared_size_bytes = dyn_attr
                    except Exception as exc:  # noqa: BLE001
                        skipped_groups.append(f"{name} carveout {carveout} {mode}: {exc}")
                        continue
                    rng = random.Random(f"{rng_root.random()}")
                    chosen = rng.sample(pairs_all, min(args.per_group, len(pairs_all)))
                    # always the launch shapes the book discusses, at the 48 KiB edge
                    edge = 49152 - static
                    chosen += [(128, 0), (128, edge), (256, 0), (1024, 0)]
                    if edge + 1 <= optin - static:
                        chosen.append((128, edge + 1))
                    for threads, dyn in chosen:
                        record(mode, dyn_attr, carveout, readback, threads, dyn)

                # exhaustive slices on the default carveout, opt-in: every block size, and for
                # light kernels every 128-byte edge of dynamic shared memory
                if carveout == -1:
                    try:
                        kernel.max_dynamic_shared_size_bytes = optin - static
                    except Exception as exc:  # noqa: BLE001
                        skipped_groups.append(f"{name} exhaustive: {exc}")
                        continue
                    if name in ("hungry_r72", "hungry_r255", "hungry_r168", "light_s4"):
                        for threads in range(1, 1025):
                            record("opt-in", optin - static, -1, readback, threads, 0)
                    if name in ("light_s4", "light_s12672"):
                        for k in range((optin - static) // 128 + 1):
                            for dyn in (k * 128, k * 128 + 1):
                                if dyn <= optin - static:
                                    record("opt-in", optin - static, -1, readback, 128, dyn)
                    kernel.max_dynamic_shared_size_bytes = default_dyn_attr

            if time.perf_counter() - started > args.time_budget:
                truncated = True

    elapsed = time.perf_counter() - started
    summary = {**facts, "table_vs_device": problems, "rows": rows,
               "mismatches": len(mismatches), "driver_errors": driver_errors,
               "skipped_groups": skipped_groups, "kernels": kernels_info,
               "carveouts": list(CARVEOUTS), "block_sizes": list(BLOCK_SIZES),
               "truncated_by_time_budget": truncated, "elapsed_s": round(elapsed, 2),
               "comparison": "a driver error counts as 0 resident blocks (driver_effective)",
               "csv": out.name}
    sidecar.write_text(json.dumps(summary, indent=2, default=str))
    print(f"{rows} configurations in {elapsed:.1f} s -> {out} (+ {sidecar.name}); "
          f"{driver_errors} driver errors, {len(skipped_groups)} skipped groups", flush=True)
    print(f"MISMATCHES: {len(mismatches)}", flush=True)
    for row in mismatches[:15]:
        print("  " + ", ".join(f"{k}={row[k]}" for k in (
            "kernel", "registers_per_thread", "static_shared_bytes", "mode", "carveout",
            "threads_per_block", "dynamic_shared_bytes", "driver_blocks", "driver_error",
            "calc_blocks", "calc_error")), flush=True)
    # the CSV is the result; mismatches are for the test to judge, so a batch goes on
    return 0


if __name__ == "__main__":
    sys.exit(main())
