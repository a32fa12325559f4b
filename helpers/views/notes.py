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
