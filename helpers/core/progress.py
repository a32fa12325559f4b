"""A progress bar for what takes more than a moment: reading a large trace, profiling slow code.

tqdm draws it (an ipywidget in a notebook, text in a terminal). It appears only after `DELAY_S`
seconds, so a fast load or a fast profile shows nothing; `enabled=False` never shows one, and
`enabled=None` leaves the choice to the caller's rule (a file size, a number of calls).
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

DELAY_S = 1.0


class _Silent:
    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, text: str) -> None:
        pass


@contextmanager
def progress(total: float, description: str, unit: str = "it", enabled: bool = True,
             scale: bool = False) -> Iterator:
    """A bar with `update(n)`; a silent stand-in where it is not wanted or tqdm is missing."""
    if not enabled:
        yield _Silent()
        return
    try:
        from tqdm.auto import tqdm
    except ImportError:  # tqdm comes with the book's requirements; a bare environment still works
        yield _Silent()
        return
    bar = tqdm(total=total, desc=description, unit=unit, unit_scale=scale, delay=DELAY_S, leave=False)
    try:
        yield bar
    finally:
        bar.close()
