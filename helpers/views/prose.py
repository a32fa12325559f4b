"""Numbers for the prose: every figure in a sentence comes from the run, through myst-nb's glue."""
from __future__ import annotations

from IPython.display import HTML

from ..core.profile import Profile
from .perfetto import trace_links


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
    # what one forward needed at its peak, beyond what it started with (the provenance records it)
    needed = prof.forward_memory_bytes
    values["forward_mib"] = "not recorded" if needed is None else f"{needed / 2**20:,.0f}"
    for key, value in values.items():
        glue(f"{prefix}_{key}", value)
    return values


def glue_profiles(profiles) -> None:
    """glue_summary for each profile of a {stage: Profile} mapping."""
    for prof in profiles.values():
        glue_summary(prof)


def perfetto_note(prof: Profile) -> HTML:
    """The trace behind the page, to download or to open in Perfetto, and what to look for there."""
    return trace_links(prof, note=(
        "<p>Perfetto reads the gzipped trace as it is, in your browser (it may first ask you to "
        "confirm that this page may open a trace). Live, save yours with "
        "<code>prof.save('my_trace.json.gz')</code>. Find <code>attn_fwd</code> in a "
        "<code>ProfilerStep#</code> row, then follow the arrows from each <code>cudaLaunchKernel</code> / "
        "<code>cuLaunchKernelEx</code> to its kernel on the GPU stream.</p>"))
