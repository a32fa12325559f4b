"""Profile a stage live on this machine's GPU with torch.profiler, as the article does."""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

import json
import shlex
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Callable

import torch
from torch.profiler import ProfilerActivity, profile, schedule

from ..core import config
from ..core.errors import TraceError
from .provenance import device_facts, driver_version, now  # noqa: F401  (driver_version: re-exported)
from .timers import caller_loop
from ..core.profile import Profile, Provenance
from ..core.stages import DEFAULT_SHAPE, Shape, Stage, get_stage, reset_compiled

WARMUP_CALLS = 3
SCHEDULE = dict(wait=1, warmup=1, active=3)
# torch.profiler's note that a schedule's cycle drops the events of the cycle before: true and
# meant here (one cycle is kept), and on a live page it was a stderr box above every chart
_PROFILER_CYCLE_NOTE = "Warning: Profiler clears events at the end of each cycle"


@contextmanager
def quiet_profiler_notes():
    """torch.profiler's cycle note hidden, and nothing else: every capture of the book runs in it
    (torch 2.11 says it for a plain `with profile():` too, as the shared-memory experiment's)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_PROFILER_CYCLE_NOTE, category=UserWarning)
        yield


def _forward(stage: Stage, inputs: dict) -> object:
    return stage.run(inputs)


@dataclass(frozen=True)
class Step:
    """What `capture` profiles once per profiler step, and what it records beside the trace: handed
    to it by the chapter that owns the step (capture knows no chapter). The default is one forward;
    the training chapter hands its training step (helpers.training.sources_step.TRAINING_STEP)."""

    name: str = "forward"
    run: Callable[[Stage, dict], object] = _forward          # one call, on the stage's inputs
    prepare: Callable[[dict], object] | None = None          # the inputs set up once, before the first call
    beside: Callable[[Stage, dict], dict] | None = None      # recorded beside the trace: provenance `extra`
    keeps_code: bool = True   # a compiled stage's first call keeps Inductor's code (a forward's, not a step's)


FORWARD = Step()


def device_provenance(stage: str, shape: Shape, command: str | None = None) -> dict:
    """GPU, driver and library versions of this process, as provenance fields."""
    return dict(stage=stage, shape=shape.as_dict(), **device_facts(), date=now(),
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
    """triton.testing.do_bench's median: one cold-L2 call at a time (it zeroes a 256 MB buffer
    before each), the launch work hidden behind the flush; None where Triton is absent."""
    try:
        from triton.testing import do_bench
    except ImportError:
        return None
    return float(do_bench(fn, warmup=25, rep=200, return_mode="median")) * 1000


def _first_call(forward, compiled: bool, timed_compile: bool = True) -> tuple[float, list[str]]:
    """Wall time of the first call, and for a compiled stage the code Inductor generated.

    `timed_compile`: the compile a page shows (its time and its code) runs in empty caches
    (`cold_compile_caches`), since a cache hit would skip the compile this call is meant to time
    and would return no generated code; what it compiled then joins the shared caches. Any other
    compile (another shape: a sweep) uses the shared caches, so that a graph compiled before in
    this or an earlier process is not compiled again."""
    torch.cuda.synchronize()
    code: list[str] = []
    if compiled and timed_compile:
        from torch._inductor.utils import run_and_get_code
        with cold_compile_caches():
            started = time.perf_counter()
            _, code = run_and_get_code(forward)
            torch.cuda.synchronize()
            seconds = time.perf_counter() - started
        return seconds, list(code)
    started = time.perf_counter()
    forward()
    torch.cuda.synchronize()
    return time.perf_counter() - started, list(code)


def _shared_cache_dirs() -> tuple[Path, Path]:
    """This process's Inductor cache folder and the Triton cache folder its compiles use (what
    `torch._inductor.runtime.cache_dir_utils` decides: TORCHINDUCTOR_CACHE_DIR, TRITON_CACHE_DIR)."""
    from torch._inductor.runtime.cache_dir_utils import cache_dir, triton_cache_dir
    device = torch.cuda.current_device() if torch.cuda.is_available() else 0
    return Path(cache_dir()), Path(triton_cache_dir(device))


@contextmanager
def cold_compile_caches():
    """A compile that pays everything, then is not paid again.

    Inside, every PT2 cache this compile could hit is empty: Inductor's FX graph cache, the
    AOTAutograd cache and Triton's kernel cache point at a new folder, and the in-memory caches
    are cleared, so the time a page shows is a cold compile's (the whole compilation, as a
    reader's first call pays it). On leaving, what the compile wrote there joins this machine's
    shared caches, so that the same graph compiled again, in ncu's profiled process, a later
    page or a training step, is a cache hit instead of a second full compile."""
    import shutil
    from torch._inductor.utils import clear_caches

    shared, shared_triton = _shared_cache_dirs()
    fresh = Path(tempfile.mkdtemp(prefix="cold_compile_"))
    clear_caches()
    try:
        with config.environment(TORCHINDUCTOR_CACHE_DIR=str(fresh), TRITON_CACHE_DIR=str(fresh / "triton")):
            yield
    finally:
        clear_caches()
        # the fresh folder stays: the modules this compile loaded live in it
        for part in fresh.iterdir():
            target = shared_triton if part.name == "triton" else shared / part.name
            if part.is_dir():
                shutil.copytree(part, target, dirs_exist_ok=True)


def _peak_memory(forward) -> tuple[int, int]:
    """Bytes allocated before one forward, and the most allocated during it."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    forward()
    torch.cuda.synchronize()
    return before, torch.cuda.max_memory_allocated()


def profile_steps(step: Callable[[], object], plan: dict, activities, sync: Callable[[], None],
                  record_shapes: bool = True, on_step: Callable[[], None] | None = None,
                  profiler_options: dict | None = None) -> dict:
    """The one capture loop: `step()` once per profiler step under `schedule(**plan)`, then the
    chrome trace torch.profiler wrote, as a document. Stages (`capture`), any callable
    (`profile_code`) and the recording tools all profile through it."""
    with tempfile.TemporaryDirectory() as tmp, quiet_profiler_notes():
        path = Path(tmp) / "trace.json"
        with profile(activities=activities, schedule=schedule(**plan), record_shapes=record_shapes,
                     on_trace_ready=lambda p: p.export_chrome_trace(str(path)),
                     **(profiler_options or {})) as prof:
            # no synchronize between steps, as in the article: the CPU runs ahead, so kernels
            # launched in one step can finish in the next (attribution is by correlation id)
            for _ in range(sum(plan.values())):
                step()
                prof.step()
                if on_step is not None:
                    on_step()
            sync()
        return json.loads(path.read_text())


def capture(stage: Stage | str, shape: Shape = DEFAULT_SHAPE, *, independent_timer: bool = True,
            activities=None, command: str | None = None, step: Step = FORWARD,
            timed_compile: bool | None = None) -> Profile:
    """Profile `stage` live: 3 warm-up calls, then schedule(wait=1, warmup=1, active=3).

    Beside the trace, the provenance records the first call's wall time (with compilation, for
    a torch.compile stage, whose generated code goes into `extra`), the set-up time outside the
    forward, and the memory one forward needs (peak allocated, and allocated before it). With
    `independent_timer` (the default, as the pages compare the two) triton's do_bench times the
    same forward too, where Triton is installed, and the caller's timer (`timers.caller_loop`:
    N back-to-back calls between two CUDA events, / N, 7 repeats) records what a loop pays per
    call: the wall time of the book's one "bound by" verdict (`helpers.core.bound`).

    `step` is what each profiled call runs (`Step`): one forward by default; the training chapter
    hands its training step (the forward under autograd in record_function("attn_fwd"), then the
    backward with a fixed grad_output in record_function("attn_bwd"), and beside it what autograd
    kept between the two, in `extra`): the memory fields are then those of the whole step.

    A torch.compile stage's first call is the compile a page times (`timed_compile`, default:
    at the article's shape, the one whose first call and generated code the pages show): it
    compiles in empty caches (`cold_compile_caches`, whose entries then join the shared ones) and
    keeps the generated code. At any other shape (a sweep) the shared caches are used and no code is
    kept: `first_call_seconds` there may be a cache hit."""
    stage = get_stage(stage) if isinstance(stage, str) else stage
    stage.check(shape, "cuda" if torch.cuda.is_available() else "cpu")
    if stage.compiled:
        reset_compiled()  # so the first call below pays the whole compilation, as a reader's does
    inputs = stage.make_inputs(shape, "cuda")
    if step.prepare is not None:
        step.prepare(inputs)
    forward = lambda: step.run(stage, inputs)  # noqa: E731
    # a step that is no forward (a training step compiles forward and backward) keeps no code (and
    # the FX graph cache stays on, so that a second process compiling the same graphs is quick)
    timed_compile = shape == DEFAULT_SHAPE if timed_compile is None else timed_compile
    first_call_seconds, generated_code = _first_call(forward, stage.compiled and step.keeps_code, timed_compile)
    for _ in range(WARMUP_CALLS - 2):
        forward()
    memory_before, peak_memory = _peak_memory(forward)  # the last warm-up call

    activities = activities or [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    document = profile_steps(forward, SCHEDULE, activities, torch.cuda.synchronize)

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
    if step.beside is not None:
        fields["extra"] = fields.get("extra", {}) | step.beside(stage, inputs)
    if not saw_gpu:   # shown only in place of the kernels' time CUPTI did not record
        fields["cuda_event_time_us"] = cuda_event_time_us(forward)
    if independent_timer:
        fields["do_bench_us"] = do_bench_us(forward)
        loop = caller_loop(forward)
        fields |= {"loop_us": loop["loop_us"], "loop_calls": loop["loop_calls"], "timers": "live"}
    inputs.clear()  # free the tensors before the next stage allocates its own
    torch.cuda.empty_cache()
    return Profile(events, Provenance(**fields))


def _device_key() -> tuple[str, str]:
    """The GPU and torch a cached measurement belongs to (config.cache_dir's two keys)."""
    return torch.cuda.get_device_name(), torch.__version__


def capture_cached(stage: str, shape: Shape = DEFAULT_SHAPE, *, fresh: bool = False) -> Profile:
    """`capture`, kept in the session's cache (config.cache_dir, one per GPU and torch) so that
    every page of a session shows the same measurement of a stage, and a later page reuses the
    forward an earlier one profiled instead of profiling it again (08 and 09 then profile
    nothing). The first capture of a torch.compile stage pays its compilation, as a reader's
    first call does, so the first-call time it records is the same whichever page came first.
    `fresh` profiles again and replaces the cached measurement."""
    from ..core import config
    path = config.cache_dir(*_device_key()) / "profiles" / f"{stage}__{shape.key}.json.gz"
    if path.exists() and not fresh:
        try:
            return Profile.load(path, mode="live")
        except TraceError:
            pass   # a broken cache entry is captured again
    prof = capture(stage, shape)
    prof.save(path)
    return prof
