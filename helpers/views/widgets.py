"""ipywidgets for the live notebooks: the guess form. Each has a static counterpart for the book."""
from __future__ import annotations

import html

import ipywidgets as w
import pandas as pd
from IPython.display import HTML, display

from ..sources.modes import profile_stage, resolve_mode
from ..core.names import KINDS
from ..core.profile import Profile
from ..sources.replay import recorded_shapes
from ..core.stages import DEFAULT_SHAPE, DTYPES, Shape
from .guesses import Guess, compare, default_guess

GUESSABLE = [k for k in KINDS if k != "unknown"]


class GuessForm(w.VBox):
    """How many GPU events, which kinds in order, faster or slower; a button reveals the look."""

    def __init__(self, stage: str, prof: Profile, previous: Profile | None = None):
        self.prof, self.previous = prof, previous
        start = default_guess(stage)
        self.kinds = w.Text(value=", ".join(start.kinds), description="kernels:",
                            layout=w.Layout(width="95%"),
                            placeholder="kinds in launch order, e.g. gemm, softmax, gemm")
        self.speed = w.ToggleButtons(options=["faster", "slower"], value="faster",
                                     description=f"than {previous.stage}:" if previous else "",
                                     layout=w.Layout(display="flex" if previous else "none"))
        self.button = w.Button(description="Look at the trace", button_style="primary", icon="eye",
                               layout=w.Layout(width="max-content"))
        self.message = w.HTML()
        self.output = w.Output()
        self.button.on_click(self._look)
        hint = w.HTML(f"<small>Kinds: {', '.join(GUESSABLE)}</small>")
        super().__init__([self.kinds, hint, self.speed, self.button, self.message, self.output])

    @property
    def guess(self) -> Guess:
        kinds = tuple(k.strip() for k in self.kinds.value.split(",") if k.strip())
        return Guess(kinds, (self.speed.value == "faster") if self.previous else None)

    def _look(self, _button=None) -> None:
        self.output.clear_output()
        try:
            table = compare(self.guess, self.prof, self.previous)
        except ValueError as err:  # a typo in the kinds: say so, keep the form usable
            self.message.value = f"<b>{html.escape(str(err))}</b>"
            return
        self.message.value = ""
        with self.output:
            display(table)


def guess_card(stage: str, previous: str | None = None) -> HTML:
    """The stand-in guess, as text: what the static book shows before the folded look."""
    g = default_guess(stage)
    speed = f" It will be <b>faster</b> than {previous}." if previous and g.faster_than_previous else ""
    items = "".join(f"<li><code>{html.escape(k)}</code></li>" for k in g.kinds)
    return HTML(f"<div class='guess-card'><p><b>The guess:</b> {g.count} GPU events per forward, "
                f"one per line of code, in this order:</p><ol>{items}</ol><p>{speed}</p></div>")


def guess_form(stage: str, prof: Profile, previous: Profile | None = None) -> GuessForm:
    """Show the guess as text (for the book) and as a form (for a live kernel)."""
    display(guess_card(stage, previous.stage if previous else None))
    return GuessForm(stage, prof, previous)


def sweep(stages, shapes, mode: str = "auto") -> pd.DataFrame:
    """Profile every stage at every shape, with a progress bar; one summary row per pair."""

    bar = w.IntProgress(min=0, max=len(stages) * len(shapes), description="profiling")
    display(bar)
    rows = []
    for shape in shapes:
        for stage in stages:
            prof = profile_stage(stage, shape, mode, quiet=True)
            rows.append({"stage": stage, **shape.as_dict(), **prof.summary().drop("stage").to_dict()})
            bar.value += 1
    bar.description = "done"
    return pd.DataFrame(rows)


def shape_explorer(stages) -> w.VBox:
    """Pick a shape and re-profile the stages. Live: any shape; in replay: the recorded ones."""
    out = w.Output()
    if resolve_mode() == "live":
        controls = {name: w.IntText(value=getattr(DEFAULT_SHAPE, name), description=name)
                    for name in ("batch", "heads", "seq", "head_dim")}
        controls["dtype"] = w.Dropdown(options=sorted(DTYPES), value=DEFAULT_SHAPE.dtype, description="dtype")
        read = lambda: Shape(**{k: c.value for k, c in controls.items()})  # noqa: E731
        boxes = list(controls.values())
    else:
        common = set.intersection(*(set(recorded_shapes(s)) for s in stages))
        options = [(s.key, s) for s in sorted(common, key=lambda s: (s.head_dim, s.seq))]
        pick = w.Dropdown(options=options, value=DEFAULT_SHAPE, description="recorded")
        read = lambda: pick.value  # noqa: E731
        boxes = [pick, w.HTML("<small>In replay the shapes are those recorded on the GPU.</small>")]
    button = w.Button(description="Profile", button_style="primary", icon="play")

    def run(_=None):
        out.clear_output()
        with out:
            try:
                shape = read()
                table = sweep(stages, [shape])
            except (ValueError, RuntimeError) as err:  # bad shape, backend unavailable: say why
                print(err)
                return
            display(table.set_index("stage")[["gpu_events", "gpu_time_us", "cpu_time_us", "do_bench_us"]])

    button.on_click(run)
    return w.VBox(boxes + [button, out])
