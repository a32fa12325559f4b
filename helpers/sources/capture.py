"""Profile a stage live on this machine's GPU with torch.profiler, as the article does."""
from __future__ import annotations

import datetime as dt
import json
import shlex
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, schedule

from ..core.profile import Profile, Provenance
from ..core.stages import DEFAULT_SHAPE, Shape, Stage, get_stage, reset_compiled

WARMUP_CALLS = 3
SCHEDULE = dict(wait=1, warmup=1, active=3)


def driver_version() -> str:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def device_provenance(stage: str, shape: Shape, command: str | None = None) -> dict:
    """GPU, driver and library versions of this process, as provenance fields."""
    props = torch.cuda.get_device_properties(0)
    return dict(
        stage=stage, shape=shape.as_dict(), gpu=props.name,
        capability=f"{props.major}.{props.minor}", sm_count=props.multi_processor_count,
        driver=driver_version(), torch=torch.__version__, cuda=str(torch.version.cuda),
        cudnn=str(torch.backends.cudnn.version()),
        date=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        command=command or " ".join(shlex.quote(a) for a in sys.argv))


def cuda_event_time_us(fn, repeats: int = 20) -> float:
    """Median GPU time of `fn` from CUDA events: the fallback when CUPTI sees nothing."""
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000)
    times.sort()
    return times[len(times) // 2]


def do_bench_us(fn) -> float | None:
    """triton.testing.do_bench's median, an independent timer; None where Triton is absent."""
    try:
        from triton.testing import do_bench
    except ImportError:
        return None
    return float(do_bench(fn, warmup=25, rep=200, return_mode="median")) * 1000


def _first_call(forward, compiled: bool) -> tuple[float, list[str]]:
    """Wall time of the first call, and for a compiled stage the code Inductor generated."""
    torch.cuda.synchronize()
    started = time.perf_counter()
    code: list[str] = []
    if compiled:
        import torch._inductor.config as inductor_config
        from torch._inductor.utils import run_and_get_code
        # no FX graph cache: a cache hit would skip the compile this call is meant to time,
        # and would return no generated code
        with inductor_config.patch(fx_graph_cache=False):
            _, code = run_and_get_code(forward)
    else:
        forward()
    torch.cuda.synchronize()
    return time.perf_counter() - started, list(code)


def _peak_memory(forward) -> tuple[int, int]:
    """Bytes allocated before one forward, and the most allocated during it."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    forward()
    torch.cuda.synchronize()
    return before, torch.cuda.max_memory_allocated()


def capture(stage: Stage | str, shape: Shape = DEFAULT_SHAPE, *, independent_timer: bool = True,
            activities=None, command: str | None = None) -> Profile:
    """Profile `stage` live: 3 warm-up calls, then schedule(wait=1, warmup=1, active=3).

    Beside the trace, the provenance records the first call's wall time (with compilation, for
    a torch.compile stage, whose generated code goes into `extra`), the set-up time outside the
    forward, and the memory one forward needs (peak allocated, and allocated before it). With
    `independent_timer` (the default, as the pages compare the two) triton's do_bench times the
    same forward too, where Triton is installed."""
    stage = get_stage(stage) if isinstance(stage, str) else stage
    stage.check(shape, "cuda" if torch.cuda.is_available() else "cpu")
    if stage.compiled:
        reset_compiled()  # so the first call below pays the whole compilation, as a reader's does
    inputs = stage.make_inputs(shape, "cuda")
    forward = lambda: stage.run(inputs)  # noqa: E731
    first_call_seconds, generated_code = _first_call(forward, stage.compiled)
    for _ in range(WARMUP_CALLS - 2):
        forward()
    memory_before, peak_memory = _peak_memory(forward)  # the last warm-up call

    activities = activities or [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.json"
        with profile(activities=activities, schedule=schedule(**SCHEDULE), record_shapes=True,
                     on_trace_ready=lambda p: p.export_chrome_trace(str(path))) as prof:
            # no synchronize between steps, as in the article: the CPU runs ahead, so kernels
            # launched in one step can finish in the next (attribution is by correlation id)
            for _ in range(sum(SCHEDULE.values())):
                forward()
                prof.step()
            torch.cuda.synchronize()
        document = json.loads(path.read_text())

    events = document["traceEvents"]
    fields = device_provenance(stage.name, shape, command)
    saw_gpu = any(e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") for e in events)
    if not saw_gpu:
        warnings.warn(f"The profiler recorded no GPU events for {stage.name}: CUPTI is unavailable "
                      f"or was not enabled, so kernels are missing from the trace. GPU time falls "
                      f"back to CUDA-event timing; kernel tables will be empty.", RuntimeWarning,
                      stacklevel=2)
    fields["cupti"] = saw_gpu
    fields |= {"peak_memory_bytes": peak_memory, "memory_before_bytes": memory_before,
               "first_call_seconds": first_call_seconds, "setup_seconds": inputs.get("setup_seconds")}
    if generated_code:
        fields["extra"] = {"generated_code": generated_code}
    if independent_timer or not saw_gpu:
        fields["cuda_event_time_us"] = cuda_event_time_us(forward)
    if independent_timer:
        fields["do_bench_us"] = do_bench_us(forward)
    inputs.clear()  # free the tensors before the next stage allocates its own
    torch.cuda.empty_cache()
    return Profile(events, Provenance(**fields))
