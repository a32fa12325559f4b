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


def _names(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def glue_timer(profiles: dict) -> dict:
    """Glue what chapter 8's timer table teaches, through the book's one definition
    (`helpers.core.bound.of_call`, the same as the table's *bound* column):

    * `timer_verdicts`: one sentence naming the stages bound by the CPU, those about even (with the
      line and the loop's spread) and how many are bound by the GPU; where no stage has the
      caller's timer, the one line that says so (`bound.NO_TIMER`);
    * `timer_timed`: how many of the stages the caller's timer timed ("every one of the 11 stages");
    * `timer_cpu_bound` / `timer_cpu_bound_count` / `timer_even`: the lists behind it;
    * `timer_overhead`: the profiler's overhead shown on the GPU-bound stage whose profiled CPU
      time most exceeds the loop's whole time per call (`timer_example_*`), or why none can."""
    from ..core.bound import CPU, EVEN, GPU, LINE, NO_TIMER, of_call
    bounds = {name: of_call(p.summary()) for name, p in profiles.items()}
    timed = {n: b for n, b in bounds.items() if b is not None}
    cpu = [n for n, b in timed.items() if b.by == CPU]
    even = [n for n, b in timed.items() if b.by == EVEN]
    gpu = [n for n, b in timed.items() if b.by == GPU]
    untimed = [n for n, b in bounds.items() if b is None]
    n = len(bounds)
    timed_words = (f"every one of the {n} stages" if len(timed) == n else
                   f"no stage of the {n}" if not timed else f"{len(timed)} of the {n} stages")
    values = {"line_pct": f"{LINE:.0%}", "timed": timed_words, "cpu_bound": _names(cpu) if cpu else "no stage",
              "cpu_bound_count": len(cpu), "even": _names(even) if even else "no stage"}
    if not timed:
        values["verdicts"] = NO_TIMER[0].upper() + NO_TIMER[1:] + ", so no stage here is called bound by either."
    else:
        parts = []
        parts.append(f"bound by the CPU: {_names(cpu)}" if cpu else "no stage is bound by the CPU")
        if even:
            parts.append("about even, the line inside the loop's own spread: " + _names(
                [f"{n} (line {timed[n].line_us:,.1f} µs, loop {timed[n].spread[0]:,.1f}–{timed[n].spread[1]:,.1f} µs)"
                 for n in even]))
        parts.append(f"bound by the GPU: {_names(gpu)}" if gpu else "no stage is bound by the GPU")
        sentence = "; ".join(parts)
        values["verdicts"] = sentence[0].upper() + sentence[1:] + "."
        if untimed:
            values["verdicts"] += (f" No verdict for {_names(untimed)}: the caller's timer did not time "
                                   f"{'it' if len(untimed) == 1 else 'them'}; do_bench's figure decides nothing.")
    # the clearest overhead: profiled CPU time per call over the loop's whole call, on a GPU-bound stage
    over = {n: float(profiles[n].summary()["cpu_time_us"]) / b.wall_us for n, b in timed.items() if b.by == GPU}
    over = {n: r for n, r in over.items() if r > 1}
    if over:
        name = max(over, key=over.get)
        s = profiles[name].summary()
        ex = {"example_stage": name, "example_cpu_us": round(float(s["cpu_time_us"]), 1),
              "example_loop_us": round(timed[name].wall_us, 1), "example_gpu_us": round(timed[name].busy_us, 1)}
        values |= ex
        values["overhead"] = (
            f"{name} shows it best. Its profiled forward spends {ex['example_cpu_us']:,.1f} µs on the CPU, yet a "
            f"loop of unprofiled calls pays {ex['example_loop_us']:,.1f} µs per call in all: the CPU cannot take "
            f"{ex['example_cpu_us']:,.1f} µs per call when nobody is recording it. Unprofiled, its CPU keeps ahead "
            f"of its {ex['example_gpu_us']:,.1f} µs of GPU work, and the stage is bound by the GPU.")
    else:
        values |= dict.fromkeys(["example_stage", "example_cpu_us", "example_loop_us", "example_gpu_us"],
                                "not measured")
        values["overhead"] = ("Here no stage bound by the GPU has a profiled CPU time longer than the loop's "
                              "whole time per call, so no stage shows it by itself." if timed else
                              "Without the caller's timer this recording cannot set the profiled CPU time "
                              "against an unprofiled call's.")
    for key, value in values.items():
        glue(f"timer_{key}", value)
    return values


def glue_bound(prof: Profile, prefix: str | None = None) -> dict:
    """Glue one call's bound as a sentence a page can end a paragraph with, `<stage>_call_bound`
    (the book's one definition, `helpers.core.bound.of_call`): what a loop pays per call, the GPU's
    busy time in it and the verdict; without the caller's timer, the one line that says so, with
    do_bench's cold call beside it."""
    from ..core.bound import NO_TIMER, of_call
    s, prefix = prof.summary(), prefix or prof.stage
    b = of_call(s)
    if b is not None:
        text = (f"a loop of back-to-back calls pays {b.wall_us:,.1f} µs per call without the profiler "
                f"({b.spread_text}), and the GPU is busy {b.busy_us:,.1f} µs of it: {b.words}")
    else:
        bench = s["do_bench_us"]
        text = NO_TIMER + ("" if bench is None else f" (do_bench, one cold call: {float(bench):,.1f} µs)")
    glue(f"{prefix}_call_bound", text)
    return {"call_bound": text}


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


def glue_pinned_cost(profiles: dict) -> dict:
    """Glue `timer_pinned`: what entering sdpa_kernel(...) on every call costs a loop. A pinned
    stage's code enters the context manager inside each call, and the caller's timer times that
    code as it is; the dispatched stage (nothing pinned) runs the same kernels as the pinned stage
    SDPA picks, so where their kernel names match, the two loops differ by that line alone.
    One sentence for: no dispatched or untimed stage, no pinned twin, a difference inside the
    loops' spreads, a pinned loop dearer, and a pinned loop cheaper."""
    from ..core.bound import of_call
    from ..core.stages import PINNED_BACKENDS, STAGES

    def names(name: str) -> tuple[str, ...]:
        p = profiles[name]
        return tuple(p.kernels(p.forward_step)["name"])

    auto = next((n for n in profiles if STAGES.get(n) is not None and STAGES[n].dispatched), None)
    twins = [] if auto is None else [n for n in PINNED_BACKENDS if n in profiles and names(n) == names(auto)]
    timed = {n: of_call(profiles[n].summary()) for n in ([auto] + twins if auto else [])}
    from ..core.measured_on import marks
    other = marks({n: profiles[n] for n in ([auto] + twins if auto else [])})
    if auto is not None and twins and (auto in other or twins[0] in other):
        name = auto if auto in other else twins[0]
        text = (f"Here {name} was {other[name]}: two GPUs' loops cannot price entering sdpa_kernel(...) on "
                "every call.")
    elif auto is None or not twins:
        text = ("Here no pinned stage runs the very kernels that SDPA picks by itself, so this recording cannot "
                "separate what entering sdpa_kernel(...) costs from a different kernel's time.")
    elif any(b is None for b in timed.values()):
        text = ("Without the caller's timer for both, this recording cannot price entering sdpa_kernel(...) "
                "on every call.")
    else:
        twin, a = twins[0], timed[auto]
        t = timed[twin]
        both = (f"{auto} launches the same kernels as {twin}, with nothing pinned: its loop pays "
                f"{a.wall_us:,.1f} µs per call ({a.spread_text}), {twin}'s {t.wall_us:,.1f} µs ({t.spread_text}).")
        overlap = t.spread[0] <= a.spread[1] and a.spread[0] <= t.spread[1]
        if overlap:
            text = (f"{both} The two spreads overlap: entering sdpa_kernel(...) on every call, as {twin}'s code does, "
                    "costs nothing this timer can see here.")
        elif t.wall_us > a.wall_us:
            text = (f"{both} The one line the two loops do not share is {twin}'s `with sdpa_kernel(...)`, entered on "
                    f"every call as its code does: about {t.wall_us - a.wall_us:,.1f} µs per call on this host. Pin a "
                    "backend once, outside the loop, and a caller does not pay it.")
        else:
            text = (f"{both} Here the pinned loop is the cheaper by {a.wall_us - t.wall_us:,.1f} µs per call: "
                    f"choosing a backend at each call costs {auto} more than entering sdpa_kernel(...) costs {twin}.")
    glue("timer_pinned", text)
    return {"pinned": text}
