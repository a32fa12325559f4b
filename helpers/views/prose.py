"""Numbers for the prose: every figure in a sentence comes from the run, through myst-nb's glue."""
from __future__ import annotations

import pandas as pd
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


def glue_timer(profiles: dict) -> dict:
    """Glue what chapter 8's timer table teaches: the stages the book's one definition calls bound
    by the CPU (`timer_cpu_bound`), and the profiler's overhead shown on one stage bound by the GPU
    whose profiled CPU time exceeds do_bench's whole time per call (`timer_example_*`)."""
    from ..core.bound import LINE, of_call
    bounds = {name: of_call(p.summary()) for name, p in profiles.items()}
    cpu = [n for n, b in bounds.items() if b is not None and b.cpu_bound]
    values = {"line_pct": f"{LINE:.0%}", "cpu_bound": ", ".join(cpu) or "none",
              "cpu_bound_count": len(cpu)}
    # the clearest overhead: profiled CPU time per call over do_bench's whole call, on a GPU-bound stage
    over = {n: float(profiles[n].summary()["cpu_time_us"]) / b.wall_us for n, b in bounds.items()
            if b is not None and not b.cpu_bound}
    over = {n: r for n, r in over.items() if r > 1}
    if over:
        name = max(over, key=over.get)
        s = profiles[name].summary()
        values |= {"example_stage": name, "example_cpu_us": round(float(s["cpu_time_us"]), 1),
                   "example_bench_us": round(bounds[name].wall_us, 1),
                   "example_gpu_us": round(float(s["gpu_time_us"]), 1)}
    else:
        values |= dict.fromkeys(["example_stage", "example_cpu_us", "example_bench_us", "example_gpu_us"],
                                "not measured")
    for key, value in values.items():
        glue(f"timer_{key}", value)
    return values


def glue_async(prof: Profile, prefix: str | None = None) -> dict:
    """Glue what one forward's timeline shows about asynchronous launch, in µs from the start of
    `attn_fwd` on the CPU: when the CPU finished issuing (`<stage>_async_cpu_done_us`), when the
    first GPU event started (`_async_gpu_start_us`) and when the last one ended (`_async_gpu_done_us`),
    and the forward's memset: its size, the op and the call that made it."""
    prefix = prefix or prof.stage
    ops, gpu = prof.cpu_ops(), prof.gpu_events()
    top = ops[ops["depth"] == 0].iloc[0]
    t0 = float(top["start_us"])
    values = {"async_cpu_done_us": round(float(top["end_us"]) - t0, 1),
              "async_gpu_start_us": round(float(gpu["start_us"].min()) - t0, 1),
              "async_gpu_done_us": round(float(gpu["end_us"].max()) - t0, 1)}
    # the GPU may still be running the previous forward's work when this one's is queued
    earlier = [st for st in prof.steps if st < prof.forward_step]
    if earlier:
        before = prof.gpu_events(earlier[-1])
        values["async_prev_gpu_done_us"] = round(float(before["end_us"].max()) - t0, 1)
    # the first launch call returns long before its GPU event starts: the queue at work
    first = gpu.sort_values("start_us").iloc[0]
    values["async_first_queued_us"] = round(float(first["start_us"]) - float(first["launch_start_us"]), 1)
    memsets = gpu[gpu["category"] == "memset"]
    if len(memsets):
        m = memsets.iloc[0]
        values |= {"memset_bytes": int(m["bytes"]) if pd.notna(m["bytes"]) else "not recorded",
                   "memset_op": str(m["aten_op"]), "memset_call": str(m["launched_by"])}
    for key, value in values.items():
        glue(f"{prefix}_{key}", value)
    return values
