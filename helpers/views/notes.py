"""Why a page replays what it could have measured live: one folded note, in the reader's terms.

A measurement that could not run here (no GPU, no Nsight Compute, no access to the Hub) is not an
error of the page: the page shows the recording instead and says so in one line. The reason and
the way to run it live sit folded under that line, never as an exception's text.
"""
from __future__ import annotations

import html

from IPython.display import HTML


def not_live(what: str, why: str, how: str = "") -> HTML:
    """A folded note: `what` is replayed (the line a reader sees), `why` it could not be measured
    here and `how` to measure it live (folded under it)."""
    body = f"<p>{html.escape(why)}</p>" + (f"<p>{html.escape(how)}</p>" if how else "")
    return HTML(f'<details class="not-live"><summary>{html.escape(what)} '
                f'<span class="not-live-why">Why not live?</span></summary>{body}</details>')


def show_counters(result) -> None:
    """How a page shows where its Nsight Compute counters come from: live, one line; replayed, the
    line with why they are not live folded under it (a core `Counters`)."""
    from IPython.display import display
    if result.mode == "live":
        print(result.banner())
    else:
        display(not_live(result.banner(), result.why_not_live(),
                         "On a machine with an NVIDIA GPU and Nsight Compute's ncu on PATH, the page "
                         "measures its own counters (Run it yourself says how to record a set)."))
    for note in result.notes:
        print(f"  {note}")


def how_recorded(lines: list[str], summary: str = "How this was recorded") -> HTML:
    """A folded note of how a recording was made (its tool, its build, its settings), one item a
    line, for the reader who wants it: never unfolded in a page's prose, never a Python repr."""
    items = "".join(f"<li>{html.escape(line)}</li>" for line in lines if line)
    return HTML(f'<details class="how-recorded"><summary>{html.escape(summary)}</summary><ul>{items}</ul></details>')
