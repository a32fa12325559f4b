"""Your own code through the book's lens: `profile_code(fn, *args, **kwargs)` profiles any callable
live, as every stage is profiled, and returns the same `Profile`.

Three warm-up calls, then `schedule(wait=1, warmup=1, active=steps)`, each call inside
`record_function(annotation)`; no synchronize between steps (the CPU may run ahead, as it does in
your training loop). CUDA activity is recorded where CUDA is present; on a machine without a GPU
the trace holds the CPU side only.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import inspect
import json
import shlex
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any, Callable

import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule

from ..core import trace
from .capture import SCHEDULE, WARMUP_CALLS, driver_version
from ..core.profile import Profile, Provenance
from ..core.progress import progress as progress_bar


def _where(fn: Callable) -> str:
    """Where the callable is defined, file:line, for the provenance; '' if Python can't tell."""
    try:
        target = inspect.unwrap(getattr(fn, "forward", fn) if isinstance(fn, torch.nn.Module) else fn)
        return f"{inspect.getsourcefile(target)}:{inspect.getsourcelines(target)[1]}"
    except (TypeError, OSError):
        return ""


def _device_facts() -> dict:
    if not torch.cuda.is_available():
        return dict(gpu="no GPU (CPU only)", capability="unknown", sm_count="unknown", driver="unknown",
                    cuda="unknown", cudnn="unknown")
    props = torch.cuda.get_device_properties(0)
    return dict(gpu=props.name, capability=f"{props.major}.{props.minor}",
                sm_count=props.multi_processor_count, driver=driver_version(),
                cuda=str(torch.version.cuda), cudnn=str(torch.backends.cudnn.version()))


def profile_code(fn: Callable, *args: Any, annotation: str = "my_code", steps: int = 3,
                 no_grad: bool = False, warmup_calls: int = WARMUP_CALLS, record_shapes: bool = True,
                 progress: bool | None = None, quiet: bool = False, profiler_options: dict | None = None,
                 **kwargs: Any) -> Profile:
    """Profile `fn(*args, **kwargs)` live and return its `Profile`.

    `annotation` names the `record_function` region around each call (the CPU tables look inside
    it); `steps` active profiler steps, one call each; `no_grad=True` runs every call under
    `torch.no_grad()`; `profiler_options` go to `torch.profiler.profile` as they are (`with_stack`,
    `profile_memory`, `experimental_config`, ...). The keyword arguments this function takes are
    not passed to `fn`: to pass
    one of the same name, wrap `fn` with `functools.partial`. A progress bar shows when the calls
    take more than a moment (`progress=False`: never)."""
    if not callable(fn):
        raise TypeError(f"profile_code needs a callable, got {type(fn).__name__}: pass the function "
                        f"itself (profile_code(model, x)), not its result (profile_code(model(x))).")
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    if not annotation or not isinstance(annotation, str):
        raise ValueError(f"annotation must be a non-empty string, got {annotation!r}")
    cuda = torch.cuda.is_available()
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    grad = torch.no_grad if no_grad else contextlib.nullcontext
    plan = {**SCHEDULE, "active": steps}
    calls = warmup_calls + sum(plan.values())
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])

    with progress_bar(calls, f"profiling {annotation}", "call", enabled=progress is not False) as bar, \
            tempfile.TemporaryDirectory() as tmp:
        for _ in range(warmup_calls):
            with grad():
                fn(*args, **kwargs)
            bar.update()
        sync()
        path = Path(tmp) / "trace.json"
        with profile(activities=activities, schedule=schedule(**plan), record_shapes=record_shapes,
                     on_trace_ready=lambda p: p.export_chrome_trace(str(path)),
                     **(profiler_options or {})) as prof:
            for _ in range(sum(plan.values())):
                with grad(), record_function(annotation):
                    fn(*args, **kwargs)
                prof.step()
                bar.update()
            sync()
        document = json.loads(path.read_text())

    events = document.pop("traceEvents")
    saw_gpu = any(e.get("cat") in trace.GPU_CATEGORIES for e in events)
    if cuda and not saw_gpu:
        warnings.warn(f"The profiler recorded no GPU events for {annotation}: the code ran nothing on "
                      f"the GPU, or CUPTI is unavailable. The GPU views will have nothing to show.",
                      RuntimeWarning, stacklevel=2)
    name = getattr(fn, "__qualname__", type(fn).__name__)
    provenance = Provenance(
        stage=annotation, shape={}, torch=torch.__version__,
        date=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        command=" ".join(shlex.quote(a) for a in sys.argv), cupti=saw_gpu, source="code",
        extra={"function": name, "defined_at": _where(fn), "annotation": annotation,
               "no_grad": no_grad, "steps": steps, "warmup_calls": warmup_calls},
        **_device_facts())
    result = Profile(events, provenance, None, annotation, document)
    if not quiet:
        print(result.banner())
    return result
