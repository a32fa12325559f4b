"""A fake decode recording in the format tools/record_decode.py writes (decode.json, Kineto traces,
ncu CSVs), for the chapter's tests and the synthetic variants (a part missing, another winner, a
tie). Its numbers are made up; its traces have the structure of real ones (ProfilerStep rows, a
launch call per kernel or one cudaGraphLaunch per step, correlation ids) and pass
tools/validate_recordings.py. Not a measurement: nothing here reaches a replay set."""
from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

HEADS, HEAD_DIM = 32, 128
BATCHES, KV_LENS = (1, 8, 64), (1024, 4096, 16384, 32768)
FLASH_SPLIT = "void pytorch_flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4>, true>(pytorch_flash::Flash_fwd_params)"
FLASH_COMBINE = "void pytorch_flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4>, 4>(pytorch_flash::Flash_fwd_params)"
FLASH_ONE = "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>, false>(pytorch_flash::Flash_fwd_params)"
CUDNN = "cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_35_16x128x128_1x4x1_cga1x1x1_kernel0_0"
CUDNN_REDUCE = "void cudnn::fusion::lean_reduction_kernel<float, 128>(cudnn::fusion::Params)"
EFFICIENT = "fmha_cutlassF_bf16_aligned_64x128_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::bfloat16_t>::Params)"
GEMV = "void gemv2T_kernel_val<int, int, __nv_bfloat16, float, 128, 16, 4, 4, false>(float)"
SOFTMAX = "void (anonymous namespace)::softmax_warp_forward<c10::BFloat16, float, float, 10, false>(c10::BFloat16*)"
MUL = "void at::native::vectorized_elementwise_kernel<4, at::native::MulFunctor<float>, std::array<char*, 3> >(int)"
COPY = "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda>(int)"
FLEX = ("triton_poi_fused_ones_0", "triton_poi_fused_zeros_1", "triton_tem_fused_flex_attention_2",
        "triton_per_fused_3", "triton_per_fused_4")

# made-up bandwidth (GB/s) each backend reaches on a large call, and the CPU µs per call
BANDWIDTH = {"sdpa_cudnn": 3000.0, "sdpa_auto": 3000.0, "sdpa_flash": 2600.0, "sdpa_efficient": 700.0,
             "sdpa_math": 400.0, "naive": 900.0, "flex": 500.0, "flex_blockmask": 1500.0}
CPU_US = {"sdpa_math": 60.0, "naive": 30.0, "flex": 45.0, "flex_blockmask": 40.0}


def kv_bytes(batch: int, kv: int) -> int:
    return 2 * batch * HEADS * kv * HEAD_DIM * 2


def kernels_of(backend: str, batch: int, split_below: int = 106) -> list[str]:
    """The kernels of one decode call, as the real backends name them."""
    if backend == "sdpa_flash":
        return [FLASH_SPLIT, FLASH_COMBINE] if batch * HEADS < split_below else [FLASH_ONE]
    if backend in ("sdpa_cudnn", "sdpa_auto"):
        return [CUDNN, CUDNN_REDUCE] if batch == 1 else [CUDNN]
    if backend == "sdpa_efficient":
        return [EFFICIENT]
    if backend == "sdpa_math":
        return [COPY, COPY, GEMV, SOFTMAX, GEMV, COPY]
    if backend == "naive":
        return [GEMV, MUL, SOFTMAX, GEMV]
    if backend == "flex":
        return list(FLEX)
    if backend == "flex_blockmask":
        return list(FLEX[2:])
    raise KeyError(backend)


def trace(kernels: list[tuple[str, float]], cpu_us: float, graph: bool = False, steps=(2, 3, 4),
          t0: float = 1_000_000.0) -> list[dict]:
    """Kineto events of `steps` profiled steps, each launching `kernels` (name, µs): one launch call
    per kernel spread over `cpu_us` of host time, or one cudaGraphLaunch (`graph`)."""
    events: list[dict] = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python3"}}]
    corr, t, gpu_free = 1000, t0, t0
    for step in steps:
        start = t
        op_start = t + 2
        if graph:
            corr += 1
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 1, "tid": 1,
                           "ts": op_start + 1, "dur": 8.0, "args": {"correlation": corr, "cbid": 311}})
            g = max(gpu_free, op_start + 6)
            for name, dur in kernels:
                events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": g, "dur": dur,
                               "args": {"correlation": corr, "stream": 7, "device": 0, "grid": [1, 1, 1],
                                        "block": [128, 1, 1]}})
                g += dur + 0.3
            gpu_free, host_end = g, op_start + 12
        else:
            each = cpu_us / max(len(kernels), 1)
            h = op_start
            for name, dur in kernels:
                corr += 1
                events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                               "ts": h + each * 0.5, "dur": 3.0, "args": {"correlation": corr, "cbid": 211}})
                g = max(gpu_free, h + each * 0.5 + 4)
                events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": g, "dur": dur,
                               "args": {"correlation": corr, "stream": 7, "device": 0, "grid": [1, 1, 1],
                                        "block": [128, 1, 1]}})
                gpu_free = g + dur
                h += each
            host_end = h
        events.append({"ph": "X", "cat": "cpu_op", "name": "aten::decode_call", "pid": 1, "tid": 1,
                       "ts": op_start, "dur": host_end - op_start, "args": {"External id": step}})
        end = max(host_end + 2, start + 5)
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": 1, "tid": 1,
                       "ts": start, "dur": end - start, "args": {}})
        t = max(end, gpu_free) + 5   # the next step starts once this one's work is done
    return events


def write_trace(folder: Path, name: str, events: list[dict], gpu: str, record: dict) -> str:
    path = folder / "traces" / f"{name}.json.gz"
    path.parent.mkdir(parents=True, exist_ok=True)
    provenance = {"stage": f"decode:{name}", "shape": {}, "gpu": gpu, "capability": "9.0", "sm_count": 132,
                  "driver": "0", "torch": "2.11.0", "cuda": "13.0", "cudnn": "91900", "date": "2026-12-07T06:30:00+00:00",
                  "command": "tests/decode_fake.py", "mode": "live", "loop_us": record.get("loop_us"),
                  "loop_calls": record.get("loop_calls"), "loop_busy_us": record.get("busy_us"), "timers": "live",
                  "extra": {"annotation": None}, "source": "code"}
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": events, "provenance": provenance, "displayTimeUnit": "ms"}, f)
    return f"traces/{path.name}"


def busy_of(events: list[dict], steps: int = 3) -> float:
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") == "kernel")
    total, end = 0.0, float("-inf")
    for a, b in spans:
        if b > end:
            total += b - max(a, end)
            end = b
    return total / steps


def call(folder: Path, gpu: str, part: str, backend: str, batch: int, kv: int, bandwidth: dict, cpu: dict,
         split_below: int, loop: bool = True) -> dict:
    names = kernels_of(backend, batch, split_below)
    total = kv_bytes(batch, kv) / (bandwidth[backend] * 1e3) + 3.0   # µs
    main = max(range(len(names)), key=lambda i: "triton_tem" in names[i] or "fprop" in names[i]
               or "flash_fwd" in names[i] and "combine" not in names[i] or "fmha" in names[i])
    durs = [total * 0.9 if i == main else total * 0.1 / max(len(names) - 1, 1) for i in range(len(names))]
    cpu_us = cpu.get(backend, 12.0)
    events = trace(list(zip(names, durs)), cpu_us)
    busy = busy_of(events)
    rec = {"name": f"{backend}__b{batch}_kv{kv}", "backend": backend, "batch": batch, "kv": kv, "heads": HEADS,
           "head_dim": HEAD_DIM, "dtype": "bfloat16", "is_causal": False, "kv_bytes": kv_bytes(batch, kv),
           "busy_us": busy, "steps": 3, "max_abs_error": 0.0039}
    if loop:
        wall = max(busy, cpu_us) * 1.04
        rec |= {"loop_us": [wall * f for f in (0.99, 1.0, 1.0, 1.01, 1.02)], "loop_calls": 100}
    rec["trace"] = write_trace(folder, rec["name"], events, gpu, rec)
    return rec


def ncu_csv(path: Path, rows: list[tuple[str, float, float, float]]) -> None:
    """ncu's raw page for one job: (kernel, bytes read, bytes written, ns); bytes in Mbyte, time in usecond."""
    lines = ['"ID","Kernel Name","dram__bytes_read.sum","dram__bytes_write.sum","gpu__time_duration.sum",'
             '"launch__grid_size","launch__block_size"', '"","","Mbyte","Kbyte","usecond","",""']
    for i, (name, read, write, ns) in enumerate(rows):
        lines.append(f'"{i}","{name}","{read / 1e6:.4f}","{write / 1e3:.4f}","{ns / 1e3:.4f}","132","128"')
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def step_events(mode: str, layers: int) -> tuple[list[dict], float]:
    per_layer = 26 if mode == "eager" else 9
    kernels = [(f"void at::native::elementwise_kernel_{i}<int>(int)" if i % 5 else "sm90_xmma_gemm_bf16bf16_bf16f32", 2.0 + (i % 5 == 0) * 20)
               for i in range(per_layer * layers)]
    if mode == "eager":
        return trace(kernels, cpu_us=per_layer * layers * 9.0), per_layer * layers * 9.0 * 1.05
    return trace(kernels, cpu_us=10.0, graph=True), 0.0


def make(root: Path, gpu_slug: str = "fakegpu", gpu: str = "FAKE H100", *, winner: str = "sdpa_cudnn",
         tie: bool = False, without: tuple[str, ...] = (), split_below: int = 106,
         with_ceilings_from: Path | None = None) -> Path:
    """Write a fake decode recording under root/gpu_slug/decode; returns that folder.
    `winner`: the backend with the best bandwidth (SDPA's own choice runs its kernels); `tie`: the
    pinned flash and cuDNN backends at the same bandwidth; `without`: parts left out (sweep,
    split, flex, trap, step, ncu, compiled, all)."""
    folder = Path(root) / gpu_slug / "decode"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    if with_ceilings_from is not None:
        shutil.copy(with_ceilings_from, folder.parent / "ceilings.json")
    if "all" in without:
        return folder
    bandwidth = dict(BANDWIDTH)
    if winner != "sdpa_cudnn":
        bandwidth[winner], bandwidth["sdpa_cudnn"] = bandwidth["sdpa_cudnn"], bandwidth[winner]
    if tie:
        bandwidth["sdpa_flash"] = bandwidth["sdpa_cudnn"]
    bandwidth["sdpa_auto"] = bandwidth[winner]
    doc = {"provenance": {"gpu": gpu, "capability": "9.0", "sm_count": 132, "driver": "0", "torch": "2.11.0",
                          "cuda": "13.0", "cudnn": "91900", "date": "2026-12-07T06:30:00+00:00", "gpu_slug": gpu_slug,
                          "command": "tests/decode_fake.py (not a measurement)"},
           "method": {}, "config": {"batches": BATCHES, "kv_lens": KV_LENS, "step_layers": 4, "step_cache": 1024},
           "copy_roof": None, "sweep": [], "split": [], "flex": [], "trap": [], "step": [], "ncu": {},
           "failed": {}, "skipped": [], "seconds": {}}
    auto_like = winner

    def auto_kernels(batch):
        return kernels_of(auto_like, batch, split_below)

    for kv in KV_LENS:
        for batch in BATCHES:
            for backend in ("naive", "sdpa_math", "sdpa_efficient", "sdpa_flash", "sdpa_cudnn", "sdpa_auto"):
                if "sweep" in without:
                    continue
                if backend == "sdpa_math" and batch == 64 and kv == 32768:
                    doc["failed"][f"sdpa_math__b{batch}_kv{kv}"] = "OutOfMemoryError: CUDA out of memory"
                    continue
                rec = call(folder, gpu, "sweep", backend, batch, kv, bandwidth, CPU_US, split_below)
                if backend == "sdpa_auto":   # SDPA's choice runs the winner's kernels
                    names = auto_kernels(batch)
                    events = trace([(n, rec["busy_us"] / len(names)) for n in names], 12.0)
                    rec["busy_us"] = busy_of(events)
                    rec["trace"] = write_trace(folder, rec["name"], events, gpu, rec)
                doc["sweep"].append(rec)
    if "split" not in without:
        for kv in (1024, 32768):
            for batch in (2, 3, 4, 6, 16):
                for backend in ("sdpa_efficient", "sdpa_flash", "sdpa_cudnn"):
                    doc["split"].append(call(folder, gpu, "split", backend, batch, kv, bandwidth, CPU_US,
                                             split_below, loop=False))
    if "flex" not in without:
        for batch, kv in ((1, 4096), (8, 4096), (64, 4096), (1, 32768), (8, 32768), (64, 32768)):
            doc["flex"].append(call(folder, gpu, "flex", "flex", batch, kv, bandwidth, CPU_US, split_below))
        for batch, kv in ((1, 4096), (1, 32768)):
            doc["flex"].append(call(folder, gpu, "flex", "flex_blockmask", batch, kv, bandwidth, CPU_US, split_below))
    if "trap" not in without:
        for batch in (1, 8):
            for backend in ("sdpa_math", "sdpa_efficient", "sdpa_flash", "sdpa_cudnn", "sdpa_auto"):
                name = f"{backend}__causal_b{batch}_kv4096"
                rec = {"name": name, "backend": backend, "batch": batch, "kv": 4096, "is_causal": True}
                if backend == "sdpa_flash":
                    rec |= {"ran": False, "error": "RuntimeError: No available kernel. Aborting execution."}
                else:
                    names = [CUDNN] if backend in ("sdpa_cudnn", "sdpa_auto") else kernels_of(backend, batch)
                    events = trace([(n, 3.0) for n in names], 12.0)
                    rec |= {"ran": True, "busy_us": busy_of(events), "steps": 3, "max_abs_error": 2.84,
                            "max_abs_error_vs_upper_left": 0.0039}
                    rec["trace"] = write_trace(folder, name, events, gpu, rec)
                doc["trap"].append(rec)
    if "step" not in without:
        for mode in ("eager", "graph", "compiled"):
            if mode == "compiled" and "compiled" in without:
                continue
            events, cpu = step_events(mode, 4)
            busy = busy_of(events)
            wall = max(busy * 1.02, cpu)
            rec = {"name": f"step__{mode}", "mode": mode, "layers": 4, "cache_len": 1024, "batch": 1, "dim": 4096,
                   "heads": 32, "head_dim": 128, "first_call_seconds": 20.0 if mode == "compiled" else 0.5,
                   "busy_us": busy, "steps": 3, "loop_us": [wall * f for f in (0.995, 1.0, 1.0, 1.005, 1.01)],
                   "loop_calls": 50}
            rec["trace"] = write_trace(folder, rec["name"], events, gpu, rec)
            doc["step"].append(rec)
    if "ncu" not in without:
        tables = {}
        for backend in ("naive", "sdpa_efficient", "sdpa_flash", "sdpa_cudnn", "flex"):
            for batch, kv in ((1, 4096), (1, 32768), (8, 32768), (64, 4096), (64, 32768)):
                names = kernels_of(backend, batch, split_below)
                total = kv_bytes(batch, kv)
                ns = total / (bandwidth[backend] * 1e9) * 1e9 + 3000
                rows = [(n, total * 1.01 / len(names), 1e4, ns / len(names)) for n in names]
                ncu_csv(folder / "ncu" / f"{backend}__b{batch}_kv{kv}.csv", rows)
                tables[f"{backend}__b{batch}_kv{kv}"] = f"ncu/{backend}__b{batch}_kv{kv}.csv"
        doc["ncu"] = {"metrics": ["dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum"],
                      "tables": tables, "ncu": "fake"}
    (folder / "decode.json").write_text(json.dumps(doc, indent=1))
    return folder
