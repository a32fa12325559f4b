"""The "Your own model" chapter: guess first, then look, on code nobody here wrote.

The guess is about a whole step, not a list of kernels: how many GPU events it launches, and
whether the CPU or the GPU bounds it. The look is computed from the trace (`breakdown`).
Each function is handed the experiment's Profile (a Session's `own_model(name)`, live or its
recording): this module never imports sources and reads no file.
"""
from __future__ import annotations

import pandas as pd
from IPython.display import Markdown, display

from .core import get_experiment
from ..core.profile import Profile
from ..breakdown import views as breakdown
from ..views.guess import Question, Questions, choice_key, kernel_table_id, number_key
from ..views.prose import glue

BOUNDS = ("CPU", "GPU")
# a count of GPU events per step is judged right this close (relatively): a guess from the code
EVENTS_TOLERANCE = 0.1


def bound_of(prof: Profile, step: int | None = None) -> str:
    """'CPU' or 'GPU' (or 'other GPU work'), as the computed verdict has it."""
    return breakdown.step_bound(prof, step).by


def code_card(name: str) -> Markdown:
    """The code one step runs, and the line that changed."""
    e = get_experiment(name)
    return Markdown(f"**{e.title}** (`{e.name}`): {e.what_changed}.\n\n```python\n{e.code}\n```")


def questions(name: str, prof: Profile, events_by: tuple[str, str] | None = None,
              bound_by: tuple[str, str] = ("", "")) -> Questions:
    """Guess first: the step's GPU events (right within EVENTS_TOLERANCE) and what bounds it, each
    judged in the reader's browser against the trace's last step (views/guess.py). ``events_by``
    and ``bound_by``: the (id, label) of the outputs that explain each answer (default for the
    events: the step's kernel table)."""
    e = get_experiment(name)
    events = int(prof.per_step.set_index("step").loc[prof.forward_step, "gpu_events"])
    bound = bound_of(prof)
    options = [*BOUNDS, *([bound] if bound not in BOUNDS else [])]
    return Questions([
        Question(number_key(f"{name}-events", f"{e.title}: how many GPU events will one step launch?",
                            events, tolerance=EVENTS_TOLERANCE, unit=" events",
                            explained_by=events_by or ("#" + kernel_table_id(prof.stage), "the kernel table"))),
        Question(choice_key(f"{name}-bound", "What bounds the step: the CPU issuing the work, or the GPU running it?",
                            options, bound, breakdown.verdict(prof), explained_by=bound_by)),
    ])


def glue_step(prof: Profile, prefix: str) -> dict:
    """Glue the last step's figures as `<prefix>_gpu_events`, `<prefix>_busy_pct`, ..."""
    step = prof.forward_step
    b = breakdown.gpu_breakdown(prof).set_index("step").loc[step]
    s = prof.per_step.set_index("step").loc[step]
    top = breakdown.top_kernels(prof, n=1).iloc[0]
    per_op = breakdown.kernels_per_op(prof, n=None)
    k = prof.kernels(step)
    values = {
        "gpu_events": int(s["gpu_events"]), "kernels": int(s["kernels"]),
        "gpu_us": round(float(s["gpu_time_us"]), 1), "cpu_us": round(float(s["cpu_time_us"]), 1),
        "step": int(step), "busy_us": round(float(b["busy_us"]), 1),
        "span_us": round(float(b["span_us"]), 1), "busy_pct": round(float(b["busy_pct"]), 1),
        "idle_pct": round(float(b["idle_pct"]), 1), "host_wait_pct": round(float(b["host_wait_pct"]), 1),
        "other_wait_pct": round(float(b["other_wait_pct"]), 1), "verdict": breakdown.verdict(prof),
        "bound": bound_of(prof), "top_kind": top["kind"], "top_pct": float(top["% of GPU time"]),
        "aten_ops": int(s["aten_ops"]), "gpu": prof.provenance.gpu,
        # the op that launched the most GPU time (the outermost: the line of code), and how many
        # ops launched anything at all
        "top_op": per_op.index[0], "launching_ops": len(per_op),
        "launching_ops_words": f"{len(per_op)} op" + ("" if len(per_op) == 1 else "s"),
        "median_kernel_us": round(float(k.loc[k["category"] == "kernel", "dur_us"].median()), 1),
        "threads": int(prof.cpu_ops(step)["tid"].nunique()),
    }
    # what to do next, said for the verdict the step has (never the other verdict's advice)
    values["next"] = (
        "the kernels are longer but not yet long enough to hide the CPU's issue time: a bigger batch, "
        "fewer Python ops per step (the fast path, torch.compile) or the step replayed as one graph (chapter 8b) "
        "would close the gap"
        if values["bound"] == "CPU" else
        f"the top kernel is where to look next: here a {values['top_kind']} "
        f"({values['top_pct']:.1f}% of the GPU time)" if values["bound"] == "GPU" else
        "the GPU waits on other GPU work: look at the streams and synchronizations between its kernels")
    for key, value in values.items():
        glue(f"{prefix}_{key}", value)
    return values


def kernel_change(before: Profile, after: Profile, prefix: str) -> dict:
    """Glue how the last steps' kernels differ (`<prefix>_<name>`): the kernel names only one side
    launches, split-K matmuls and their reduce kernels among the new ones, and the memsets."""
    def names(p: Profile) -> dict[str, int]:
        k = p.kernels(p.forward_step)
        return k.loc[k["category"] == "kernel", "name"].value_counts().to_dict()
    a, b = names(before), names(after)
    new = {n: c for n, c in b.items() if n not in a}
    memsets = [int((p.kernels(p.forward_step)["category"] == "memset").sum()) for p in (before, after)]
    kernels = [sum(a.values()), sum(b.values())]
    values = {"kernels_before": kernels[0], "kernels_after": kernels[1],
              "new_names": len(new), "gone_names": len([n for n in a if n not in b]),
              # counted as the names are (a name once), with their launches beside
              "split_k": sum(1 for n in new if "splitK" in n),
              "split_k_launches": sum(c for n, c in new.items() if "splitK" in n),
              "memsets_before": memsets[0], "memsets_after": memsets[1],
              "same": "the same kernels" if a == b else "not the same kernels"}
    values["names_sentence"] = _names_sentence(values)
    for key, value in values.items():
        glue(f"{prefix}_{key}", value)
    return values


def _names_sentence(v: dict) -> str:
    """What changed among the kernel names, with a form for no change, no split-K among the new
    names, one and several (10 reads it before the memsets)."""
    if v["same"] == "the same kernels":
        return "For the bigger matrices cuBLAS keeps the same kernels"
    new, gone = v["new_names"], v["gone_names"]
    names = (f"{new} kernel name{' appears' if new == 1 else 's appear'} only at this batch, "
             f"{gone} only at the small one")
    k, launches = v["split_k"], v["split_k_launches"]
    split = ("no new name is a matmul split along its inner dimension (splitK)" if not k else
             f"{k} of those new names ({launches} launch{'' if launches == 1 else 'es'}) "
             f"{'is a matmul' if k == 1 else 'are matmuls'} split along the inner dimension (splitK) and "
             f"the kernels that add the parts back up")
    return f"For the bigger matrices cuBLAS picks other matmul kernels ({names}); {split}"


def overview(prof: Profile | None) -> None:
    """A model's step in three views: the breakdown with its verdict, the top kernels, the ops."""
    if prof is None:
        display(Markdown("*Nothing to show here: see the line above.*"))
        return
    display(breakdown.compare([prof]))
    display(breakdown.top_kernels(prof, n=8))
    display(breakdown.kernels_per_op(prof, n=8))


def timeline_explorer(prof: Profile):
    """Live: pick a step and a window of it, and redraw the timeline (the static book shows one)."""
    import ipywidgets as w

    from ..views.charts import timeline
    steps = w.Dropdown(options=prof.steps, value=prof.forward_step, description="step")
    end = float(breakdown.gpu_breakdown(prof).set_index("step").loc[prof.forward_step, "end_us"]
                - prof.cpu_ops(prof.forward_step)["start_us"].min())
    span = w.FloatRangeSlider(value=(0.0, end), min=0.0, max=end, step=max(end / 1000, 0.1),
                              description="µs", layout=w.Layout(width="95%"), readout_format=",.0f")
    out = w.Output()

    def draw(_=None) -> None:
        out.clear_output(wait=True)
        with out:
            display(timeline(prof, steps.value, window=tuple(span.value)))

    button = w.Button(description="Draw", button_style="primary", icon="refresh")
    button.on_click(draw)
    return w.VBox([w.HBox([steps, button]), span, out])
