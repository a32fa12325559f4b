"""The "Your own model" chapter: guess first, then look, on code nobody here wrote.

The guess is about a whole step, not a list of kernels: how many GPU events it launches, and
whether the CPU or the GPU bounds it. The look is computed from the trace (`breakdown`).
"""
from __future__ import annotations

import html
from dataclasses import dataclass

import ipywidgets as w
import pandas as pd
from IPython.display import HTML, Markdown, display

from ..sources.own_model import (EXPERIMENTS, available, get_experiment, make_step,  # noqa: F401 - the chapter's API
                                   profile_experiment, recording)
from ..core.profile import Profile
from ..views import breakdown
from ..views.prose import glue

BOUNDS = ("CPU", "GPU")


@dataclass(frozen=True)
class StepGuess:
    """What the reader expects of one step: its GPU events, and what bounds it."""

    gpu_events: int
    bound: str

    def __post_init__(self) -> None:
        if self.bound not in BOUNDS:
            raise ValueError(f"bound must be 'CPU' or 'GPU', got {self.bound!r}")
        if self.gpu_events < 0:
            raise ValueError(f"a step launches 0 GPU events or more, not {self.gpu_events}")


def default_guess(name: str) -> StepGuess:
    e = get_experiment(name)
    return StepGuess(e.guess_events, e.guess_bound)


def bound_of(prof: Profile, step: int | None = None) -> str:
    """'CPU' or 'GPU' (or 'other GPU work'), as the computed verdict has it."""
    text = breakdown.verdict(prof, step)
    return "CPU" if text.startswith("bound by the CPU") else "GPU" if text.startswith("bound by the GPU") \
        else "other GPU work"


def compare(guess: StepGuess, prof: Profile) -> pd.DataFrame:
    """The guess against the trace's last step, item by item; each mismatch says what to look at."""
    events = int(prof.per_step.set_index("step").loc[prof.forward_step, "gpu_events"])
    bound = bound_of(prof)
    top = breakdown.top_kernels(prof, n=1).iloc[0]
    rows = [
        {"item": "GPU events per step", "you guessed": guess.gpu_events, "the trace says": events,
         "verdict": "match" if guess.gpu_events == events else
         f"mismatch: {events - guess.gpu_events:+d} events (the kernel table below lists them)"},
        {"item": "bound by", "you guessed": guess.bound, "the trace says": bound,
         "verdict": "match" if guess.bound == bound else f"mismatch: {breakdown.verdict(prof)}"},
        {"item": "where the GPU time goes", "you guessed": "—",
         "the trace says": f"{top['kind']}: {top['% of GPU time']}%",
         "verdict": f"the busiest kernel reads as {top['reads as']}, launched by {top['launched by']}"},
    ]
    return pd.DataFrame(rows).set_index("item")


def code_card(name: str) -> Markdown:
    """The code one step runs, and the line that changed."""
    e = get_experiment(name)
    return Markdown(f"**{e.title}** (`{e.name}`): {e.what_changed}.\n\n```python\n{e.code}\n```")


def guess_card(name: str) -> HTML:
    """The stand-in guess, as text: what the static book shows before the folded look."""
    e = get_experiment(name)
    return HTML(f"<div class='guess-card'><p><b>The guess:</b> about {e.guess_events} GPU events per "
                f"step, bound by the <b>{e.guess_bound}</b>.</p><p>{html.escape(e.guess_reason)}.</p></div>")


class StepGuessForm(w.VBox):
    """A number, CPU or GPU, and a button that reveals the look."""

    def __init__(self, name: str, prof: Profile):
        self.prof = prof
        start = default_guess(name)
        self.events = w.BoundedIntText(value=start.gpu_events, min=0, max=1_000_000,
                                       description="GPU events:")
        self.bound = w.ToggleButtons(options=list(BOUNDS), value=start.bound, description="bound by:")
        self.button = w.Button(description="Look at the trace", button_style="primary", icon="eye",
                               layout=w.Layout(width="max-content"))
        self.output = w.Output()
        self.button.on_click(self._look)
        super().__init__([self.events, self.bound, self.button, self.output])

    @property
    def guess(self) -> StepGuess:
        return StepGuess(int(self.events.value), self.bound.value)

    def _look(self, _button=None) -> None:
        self.output.clear_output()
        with self.output:
            display(compare(self.guess, self.prof))


def guess_form(name: str, prof: Profile) -> StepGuessForm:
    """Show the guess as text (for the book) and as a form (for a live kernel)."""
    display(guess_card(name))
    return StepGuessForm(name, prof)


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
        "span_us": round(float(b["span_us"]), 1), "busy_pct": round(float(b["busy_pct"]), 1),
        "idle_pct": round(float(b["idle_pct"]), 1), "host_wait_pct": round(float(b["host_wait_pct"]), 1),
        "other_wait_pct": round(float(b["other_wait_pct"]), 1), "verdict": breakdown.verdict(prof),
        "bound": bound_of(prof), "top_kind": top["kind"], "top_pct": float(top["% of GPU time"]),
        "aten_ops": int(s["aten_ops"]), "gpu": prof.provenance.gpu,
        # the op that launched the most GPU time (the outermost: the line of code), and how many
        # ops launched anything at all
        "top_op": per_op.index[0], "launching_ops": len(per_op),
        "median_kernel_us": round(float(k.loc[k["category"] == "kernel", "dur_us"].median()), 1),
        "threads": int(prof.cpu_ops(step)["tid"].nunique()),
    }
    for key, value in values.items():
        glue(f"{prefix}_{key}", value)
    return values


def profile(name: str, mode: str = "auto") -> Profile | None:
    """The experiment's Profile (live or replayed, with its banner); None, with the reason, where
    it has none here (the Hugging Face model, without transformers and without a recording)."""
    if not available(name):
        e = get_experiment(name)
        print(f"{e.title} ({name}): no recording here, and it cannot run live"
              + (f" ({e.needs} is not installed)." if e.needs else " (no CUDA GPU)."))
        return None
    return profile_experiment(name, mode)


def overview(prof: Profile | None) -> None:
    """A model's step in three views: the breakdown with its verdict, the top kernels, the ops."""
    if prof is None:
        display(Markdown("*Nothing to show here: see the line above.*"))
        return
    display(breakdown.compare([prof]))
    display(breakdown.top_kernels(prof, n=8))
    display(breakdown.kernels_per_op(prof, n=8))


def timeline_explorer(prof: Profile) -> w.VBox:
    """Live: pick a step and a window of it, and redraw the timeline (the static book shows one)."""
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
