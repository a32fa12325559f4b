"""Controlled experiments run under the PyTorch profiler, for claims the book makes about traces.

``smem_cliff_events()`` asks one question: why does CUPTI's ``est. achieved occupancy %`` read 0
for kernels that plainly ran? Kineto works that figure out with CUDA's occupancy calculator but
without the per-kernel shared-memory opt-in, so any block over 48 KiB of shared memory "fits"
zero times. The experiment launches one trivial kernel that differs only in its dynamic shared
memory, 49152 bytes (the default cap) against 49153 (one byte over, opted in so that it runs),
and, as a control for the launch path, a small-shared-memory kernel launched through the
driver's ``cuLaunchKernelEx``.

The grid is one block of 128 threads per SM (as many blocks as the GPU has SMs), so Kineto's
"blocks per SM" is exactly 1 and every launch that fits reads 1 x 128 / max threads per SM:
128 / 2048 = 6.25%, written 6, on an H100/H200; a launch Kineto thinks cannot fit reads 0.

Everything CUDA is imported inside the functions, so this module imports on a machine
without a GPU. The notebook runs it live on a GPU; `python tools/smem_cliff.py` records it.
"""
from __future__ import annotations

import gzip
import json
import os
import tempfile
import warnings
from pathlib import Path

from ..core import replay_set
from ..core.config import ROOT
from ..core.errors import TraceError
from ..core.tracefile import read_document
from ..sources.modes import resolve_mode
from .core import RANGE_EX, SMEM_AT_CAP, SMEM_OVER_CAP, SMEM_SMALL, THREADS

# the same trivial kernel for every launch: it touches the dynamic shared memory it was given
_KERNEL_SOURCE = r"""
extern "C" __global__ void smem_cliff_kernel(float* out, int n_floats) {
    extern __shared__ float smem[];
    if (n_floats > 0) {
        smem[threadIdx.x % n_floats] = (float)threadIdx.x;
        __syncthreads();
        if (threadIdx.x == 0) out[blockIdx.x] = smem[(blockDim.x - 1) % n_floats];
    }
}
"""
_KERNEL_NAME = "smem_cliff_kernel"


def _cuda_core():
    try:
        import cuda.core as core
        core.launch  # noqa: B018 - the stable namespace exists from cuda-core 0.4 on
    except (ImportError, AttributeError):
        import cuda.core.experimental as core
    return core


def _launcher_cuda_core(device_index: int, grid: int, smem: int):
    """A no-argument callable that launches the kernel with cuda.core (cuLaunchKernelEx)."""
    import numpy as np

    core = _cuda_core()
    dev = core.Device(device_index)
    dev.set_current()
    cc = dev.compute_capability
    arch = f"sm_{cc[0]}{cc[1]}"
    try:
        program = core.Program(_KERNEL_SOURCE, code_type="c++",
                               options=core.ProgramOptions(arch=arch))
        module = program.compile("cubin")
    except TypeError:  # cuda-core 0.1: options went to compile()
        program = core.Program(_KERNEL_SOURCE, "c++")
        module = program.compile("cubin", options=(f"-arch={arch}",))
    kernel = module.get_kernel(_KERNEL_NAME)
    stream = dev.create_stream()
    out = dev.allocate(4 * grid, stream=stream)
    n_floats = np.int32(smem // 4)

    def launch() -> None:
        try:  # cuda-core 0.2 on: launch(stream, config, kernel, *args)
            config = core.LaunchConfig(grid=grid, block=THREADS, shmem_size=smem)
            core.launch(stream, config, kernel, out, n_floats)
        except TypeError:  # cuda-core 0.1: launch(kernel, config, *args), stream in the config
            config = core.LaunchConfig(grid=grid, block=THREADS, stream=stream, shmem_size=smem)
            core.launch(kernel, config, out, n_floats)

    def sync() -> None:
        stream.sync()

    return launch, sync, f"cuda.core {getattr(core, '__version__', '?')}"


def _launcher_cuda_bindings(cupy_kernel, grid: int, smem: int):
    """The same, straight through cuda.bindings' cuLaunchKernelEx on CuPy's compiled kernel."""
    import ctypes

    import cupy

    try:
        from cuda.bindings import driver
    except ImportError:  # cuda-python before 12.6
        from cuda import cuda as driver
    out = cupy.zeros(grid, dtype=cupy.float32)
    function = driver.CUfunction(int(cupy_kernel.kernel.ptr))

    def launch() -> None:
        config = driver.CUlaunchConfig()
        config.gridDimX, config.gridDimY, config.gridDimZ = grid, 1, 1
        config.blockDimX, config.blockDimY, config.blockDimZ = THREADS, 1, 1
        config.sharedMemBytes = smem
        config.hStream = driver.CUstream(int(cupy.cuda.get_current_stream().ptr))
        config.numAttrs = 0
        args = ((int(out.data.ptr), smem // 4), (ctypes.c_void_p, ctypes.c_int))
        (err,) = driver.cuLaunchKernelEx(config, function, args, 0)
        if err != driver.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"cuLaunchKernelEx failed: {err}")

    def sync() -> None:
        cupy.cuda.get_current_stream().synchronize()

    return launch, sync, "cuda.bindings cuLaunchKernelEx"


def smem_cliff_events(repeats: int = 5, *, save_to: str | os.PathLike | None = None) -> list[dict]:
    """Profile the shared-memory cliff on the current GPU and return the trace's events.

    Launches, each inside ``torch.profiler.record_function``: the CuPy kernel with 49152 bytes
    of dynamic shared memory ("smem=49152"), with 49153 ("smem=49153", opt-in raised), with
    1024 ("smem=1024", the same small launch through cuLaunchKernel), and a small-shared-memory
    launch through cuLaunchKernelEx (``RANGE_EX``), ``repeats`` times each, on a grid of one
    128-thread block per SM. The cuLaunchKernelEx part uses cuda.core, else cuda.bindings, and
    is left out with a warning when neither works. ``save_to`` also writes the whole trace, with
    a "provenance" entry, as gzip JSON.
    """
    import cupy
    import numpy as np
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    if not torch.cuda.is_available():
        raise RuntimeError("smem_cliff_events needs a CUDA GPU")
    torch.cuda.init()
    device_index = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(device_index)
    grid = props.multi_processor_count   # one block per SM: "blocks per SM" reads exactly 1
    cupy.cuda.Device(device_index).use()

    kernel = cupy.RawKernel(_KERNEL_SOURCE, _KERNEL_NAME)
    kernel.compile()
    optin = int(cupy.cuda.runtime.getDeviceProperties(device_index)["sharedMemPerBlockOptin"])
    # opt in so that 49153 bytes is a launch that runs; Kineto does not look at this
    kernel.max_dynamic_shared_size_bytes = optin - int(kernel.shared_size_bytes)
    out = cupy.zeros(grid, dtype=cupy.float32)

    def cupy_launch(smem: int) -> None:
        kernel((grid,), (THREADS,), (out, np.int32(smem // 4)), shared_mem=smem)

    ex_launch = ex_sync = None
    ex_how = "not run"
    errors = []
    for make in (lambda: _launcher_cuda_core(device_index, grid, SMEM_SMALL),
                 lambda: _launcher_cuda_bindings(kernel, grid, SMEM_SMALL)):
        try:
            launch, sync, how = make()
            launch()   # warm up (and find out now whether it works at all)
            sync()
            ex_launch, ex_sync, ex_how = launch, sync, how
            break
        except Exception as exc:  # noqa: BLE001 - either path may be missing or differ
            errors.append(f"{type(exc).__name__}: {exc}")
    if ex_launch is None:
        warnings.warn("cuLaunchKernelEx launch left out (neither cuda.core nor cuda.bindings "
                      f"worked): {'; '.join(errors)}", RuntimeWarning, stacklevel=2)

    for smem in (SMEM_AT_CAP, SMEM_OVER_CAP, SMEM_SMALL):   # warm up outside the profile
        cupy_launch(smem)
    torch.zeros(1, device="cuda")   # torch's own context and allocator, before the profile
    cupy.cuda.get_current_stream().synchronize()
    torch.cuda.synchronize()

    from ..sources.capture import quiet_profiler_notes
    # torch 2.11 says its cycle note for this plain profile too (gpu_live_31: a stderr box on 07)
    with quiet_profiler_notes(), profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for smem in (SMEM_AT_CAP, SMEM_OVER_CAP, SMEM_SMALL):
            for _ in range(repeats):
                with record_function(f"smem={smem}"):
                    cupy_launch(smem)
        cupy.cuda.get_current_stream().synchronize()
        if ex_launch is not None:
            try:
                for _ in range(repeats):
                    with record_function(RANGE_EX):
                        ex_launch()
                ex_sync()
            except Exception as exc:  # noqa: BLE001 - keep the rest of the profile
                errors.append(f"{type(exc).__name__}: {exc}")
                warnings.warn(f"cuLaunchKernelEx launch failed while profiling: {exc}",
                              RuntimeWarning, stacklevel=2)
        torch.cuda.synchronize()

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "smem_cliff.json"
        prof.export_chrome_trace(str(path))
        trace = json.loads(path.read_text())
    events = trace["traceEvents"]

    if save_to is not None:
        trace["provenance"] = {
            "experiment": "smem_cliff", "gpu": torch.cuda.get_device_name(device_index),
            "capability": f"{props.major}.{props.minor}", "sm_count": grid,
            "threads_per_block": THREADS, "repeats": repeats, "cuLaunchKernelEx": ex_how,
            "cuLaunchKernelEx_errors": errors, "torch": torch.__version__,
            "cuda": torch.version.cuda, "cupy": cupy.__version__,
            "driver": cupy.cuda.runtime.driverGetVersion()}
        save_to = Path(save_to)
        save_to.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(save_to, "wt") as fh:
            json.dump(trace, fh)
    return events


# --- live or the recording ---------------------------------------------------------------------
SMEM_CLIFF = "smem_cliff"   # the experiment's recording, under <gpu>/experiments/


def _load_recording(path: Path | None = None, gpu: str | None = None) -> tuple[list[dict], dict]:
    path = path or replay_set.recording_path("experiment", SMEM_CLIFF, gpu)
    # the experiment's provenance is not a stage's, so not Profile.load: the raw document
    try:
        document = read_document(path, show_progress=False)
        return document["traceEvents"], document["provenance"]
    except (TraceError, OSError, EOFError, ValueError, KeyError) as err:
        raise TraceError(f"The recorded shared-memory experiment {path} is missing or corrupt "
                         f"({type(err).__name__}: {err}); restore it with `git checkout -- "
                         f"{path.relative_to(ROOT)}`, or run the experiment on a GPU with "
                         f"`python tools/smem_cliff.py`.") from err


def fetch_smem_cliff(mode: str = "auto", gpu: str | None = None, fresh: bool = False) -> tuple[list[dict], dict, str]:
    """The experiment's events, its provenance and a line saying where they come from: run live
    on a GPU with CuPy, else (or if CuPy is missing) the recording (`gpu`: that GPU's). Live, it
    runs once a session (kept in the session's cache, helpers.sources.live_cache) and is reused;
    `fresh=True` runs it again."""
    if gpu is None and resolve_mode(mode) == "live":
        from ..sources import live_cache
        kept = None if fresh else live_cache.kept_document("experiments", SMEM_CLIFF)
        if kept is not None and {"traceEvents", "provenance"} <= set(kept):
            prov = kept["provenance"]
            return kept["traceEvents"], prov, (f"Ran the experiment live on {prov.get('gpu')} earlier this "
                                               f"session: reused (fresh=True runs it again).")
        try:
            import cupy  # noqa: F401
        except ImportError:
            events, prov = _load_recording()
            return events, prov, (f"CuPy is not installed, so the experiment cannot run on this "
                                  f"GPU (pip install cupy-cuda12x or cupy-cuda13x): showing the "
                                  f"recording from {prov['gpu']} instead.")
        import torch

        try:
            events = smem_cliff_events()
        except Exception as err:  # noqa: BLE001 - a failed experiment must not sink the page
            events, prov = _load_recording()
            return events, prov, (f"The experiment failed on this GPU ({type(err).__name__}: "
                                  f"{err}): showing the recording from {prov['gpu']} instead.")
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        prov = {"gpu": torch.cuda.get_device_name(), "capability": f"{props.major}.{props.minor}",
                "sm_count": props.multi_processor_count, "torch": torch.__version__}
        live_cache.keep_document("experiments", SMEM_CLIFF, {"traceEvents": events, "provenance": prov})
        return events, prov, f"Ran the experiment live on {prov['gpu']}."
    events, prov = _load_recording(gpu=gpu)
    return events, prov, (f"Replaying the experiment recorded on {prov['gpu']} (sm "
                          f"{prov['capability']}, {prov['sm_count']} SMs) with torch "
                          f"{prov['torch']}, CuPy {prov.get('cupy', '?')}.")
