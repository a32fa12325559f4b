"""ipywidgets for the live notebooks: the guess form. Each has a static counterpart for the book."""
from __future__ import annotations

import html

import ipywidgets as w
from IPython.display import HTML, display

from .guesses import Guess, compare, default_guess
from .kernel_names import KINDS
from .profile import Profile

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
        self.button = w.Button(description="Look at the trace", button_style="primary", icon="eye")
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
