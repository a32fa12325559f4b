"""Numbers for the prose: every figure in a sentence comes from the run, through myst-nb's glue."""
from __future__ import annotations

from IPython.display import Markdown

from ..profiling.profile import Profile


def glue(name: str, value) -> None:
    """myst-nb's glue where it is installed (the book build); a no-op in a bare kernel."""
    try:
        from myst_nb import glue as myst_glue
    except ImportError:
        return
    myst_glue(name, value, display=False)


def glue_summary(prof: Profile, prefix: str | None = None) -> dict:
    """Glue one stage's per-forward figures as `<stage>_gpu_events`, `<stage>_gpu_us`, ..."""
    s = prof.summary()
    prefix = prefix or prof.stage
    values = {
        "gpu_events": int(s["gpu_events"]), "kernels": int(s["kernels"]),
        "memcpys": int(s["memcpys"]), "memsets": int(s["memsets"]), "aten_ops": int(s["aten_ops"]),
        "gpu_us": round(float(s["gpu_time_us"]), 1), "cpu_us": round(float(s["cpu_time_us"]), 1),
        "gpu": prof.provenance.gpu, "torch": prof.provenance.torch,
    }
    if s["do_bench_us"] is not None:
        values["do_bench_us"] = round(float(s["do_bench_us"]), 1)
    for key, value in values.items():
        glue(f"{prefix}_{key}", value)
    return values


def glue_profiles(profiles) -> None:
    """glue_summary for each profile of a {stage: Profile} mapping."""
    for prof in profiles.values():
        glue_summary(prof)


def perfetto_note(prof: Profile) -> Markdown:
    """How to open this very trace in Perfetto."""
    where = (f"`{prof.trace_path.relative_to(prof.trace_path.parents[2])}`"
             if prof.trace_path else "the file `prof.save('trace.json.gz')` writes")
    return Markdown(
        f"**Open the raw trace in Perfetto.** The trace behind this page is {where}. "
        "Go to [ui.perfetto.dev](https://ui.perfetto.dev), choose *Open trace file*, and pick it: "
        "Perfetto reads the gzipped chrome trace as it is. Live, save yours with "
        "`prof.save('my_trace.json.gz')`. Find `attn_fwd` in a `ProfilerStep#` row, then follow the "
        "arrows from each `cudaLaunchKernel` / `cuLaunchKernelEx` to its kernel on the GPU stream.")
