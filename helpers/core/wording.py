"""Words for a set of names and for a place against a line, with a form for none, one, several
and a tie, so that a glued sentence holds for any recording (never "none", an empty list or a
stage compared with itself).

`names(["a", "b", "c"])` is "a, b and c"; `sentence_for` picks the form by how many names there
are; `place(x, line)` says which side of a line a value sits and whether it is near it, by one
threshold (`NEAR`)."""
from __future__ import annotations

from typing import Sequence

# a value within NEAR of a line (relative) sits "just" left or right of it; further, plainly left
# or right. One threshold for every page that places a point against a ridge or a line.
NEAR = 0.10


def names(items: Sequence[str], conjunction: str = "and") -> str:
    """"a", "a and b", "a, b and c": the names as prose reads them. Empty: an empty string, which
    a caller must never glue (`sentence_for` has a form for none)."""
    items = [str(i) for i in items]
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} {conjunction} {items[-1]}"


def sentence_for(items: Sequence[str], *, none: str, one: str, several: str, every: str | None = None,
                 total: int | None = None) -> str:
    """The sentence for `items`, by how many there are: `none` when empty; `one` ({name}) for one;
    `several` ({names}) for more; `every` ({names}) when all `total` of them are listed and there are
    several (a tie of all). Every form is the caller's; this picks one and fills it."""
    items = list(items)
    if not items:
        return none
    if len(items) == 1:
        return one.format(name=items[0], names=items[0])
    if every is not None and total is not None and len(items) == total:
        return every.format(names=names(items))
    return several.format(names=names(items))


def place(value: float, line: float, near: float = NEAR) -> str:
    """Which side of `line` `value` sits: "right of", "just right of", "on", "just left of" or
    "left of" (left: smaller). "just" within `near` of the line (relative); "on" when equal."""
    if value == line:
        return "on"
    gap = value / line - 1 if line else float("inf")
    side = "right of" if gap > 0 else "left of"
    return f"just {side}" if abs(gap) <= near else side


def percent_from(value: float, line: float) -> str:
    """How far `value` is from `line`, in percent of the line and which way, as prose prints it:
    "13% above", "4% below", "less than 1% below"."""
    gap = 100 * (value / line - 1)
    way = "above" if gap > 0 else "below"
    return f"less than 1% {way}" if abs(gap) < 0.5 else f"{abs(gap):.0f}% {way}"
