"""Guess first, then look, for one question at a time: the question as static text (what the book
shows before the folded look), an answer box (live), and a line comparing the answer with the
measurement. The occupancy chapter, the flash chapter and the roofline chapter ask this way."""
from __future__ import annotations

import html

import ipywidgets as w
from IPython.display import HTML, Markdown, display


class Guess(w.VBox):
    """One question: its text as HTML (what the static book shows) and an answer box (live)."""

    def __init__(self, key: str, question: str, options: list[str] | None = None):
        self.key = key
        self.question = question
        if options:
            self.answer = w.RadioButtons(options=options, value=None,
                                         layout=w.Layout(width="auto"))
        else:
            self.answer = w.Text(placeholder="your guess", layout=w.Layout(width="200px"))
        super().__init__([self.answer])

    @property
    def value(self):
        v = self.answer.value
        return None if v in (None, "") else v


def ask(key: str, question: str, options: list[str] | None = None) -> Guess:
    """Show the question (static text) and return the answer box, for the look cell to read."""
    display(HTML(f"<div class='guess-card'><p><b>Guess first:</b> {question}</p></div>"))
    return Guess(key, question, options)


def verdict(guess: Guess | None, truth, unit: str = "", tolerance: float = 0.0,
            source: str = "the trace") -> Markdown | None:
    """A line comparing the reader's guess with the measurement; nothing if no guess was entered.

    A number is right when it is within ``tolerance`` of the truth, relatively (0: exactly): a
    ratio of bytes is a good guess at 20% off, a count of warps is not."""
    if guess is None or guess.value is None:
        return None
    given = str(guess.value).strip()
    try:
        number, want = float(given.rstrip("×x% ")), float(truth)
        right = abs(number - want) <= tolerance * abs(want) if tolerance else number == want
    except (TypeError, ValueError):
        right = given == str(truth)
    mark = "right" if right else "not quite"
    return Markdown(f"**You guessed {html.escape(given)}{unit}: {mark}.** "
                    f"{source[:1].upper() + source[1:]} says {html.escape(str(truth))}{unit}.")


def show_verdict(guess: Guess | None, truth, unit: str = "", tolerance: float = 0.0,
                 source: str = "the trace") -> None:
    v = verdict(guess, truth, unit, tolerance, source)
    if v is not None:
        display(v)
