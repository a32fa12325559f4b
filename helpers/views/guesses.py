"""Guess first, then look: a reader's guess about a forward, compared item by item with the trace."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pandas as pd

from ..core.names import KINDS
from ..core.profile import Profile
from ..core.stages import get_stage


@dataclass(frozen=True)
class Guess:
    """What the reader expects one forward to launch, and whether it beats the previous stage."""

    kinds: tuple[str, ...]
    faster_than_previous: bool | None = None

    def __post_init__(self) -> None:
        unknown = [k for k in self.kinds if k not in KINDS]
        if unknown:
            raise ValueError(f"Unknown kernel kind(s) {unknown}; pick from {', '.join(KINDS)}")

    @property
    def count(self) -> int:
        return len(self.kinds)


def default_guess(stage: str) -> Guess:
    """The guess a reader makes from the code alone: one kernel per line, each faster than the last."""
    s = get_stage(stage)
    return Guess(tuple(s.guess_kinds), None if stage == "naive" else True)


def _describe(event) -> str:
    launched = f", launched by {event.top_aten_op}" if isinstance(event.top_aten_op, str) else ""
    via = f" through {event.launched_by}" if isinstance(event.launched_by, str) else ""
    article = "an" if event.kind[0] in "aeiou" else "a"
    return f"{article} {event.kind} you did not guess{launched}{via}"


def compare(guess: Guess, prof: Profile, previous: Profile | None = None) -> pd.DataFrame:
    """One row per item of the guess: what was guessed, what the trace says, and the verdict."""
    events = prof.kernels()
    rows = [{"item": "GPU events per forward", "you guessed": guess.count, "the trace says": len(events),
             "verdict": "match" if guess.count == len(events) else
             f"mismatch: {len(events) - guess.count:+d} events"}]
    guessed, seen = Counter(guess.kinds), Counter(events["kind"])
    for kind in sorted(set(guessed) | set(seen), key=lambda k: KINDS.index(k)):
        g, s = guessed[kind], seen[kind]
        if g == s:
            verdict = "match"
        elif s > g:
            extra = events[events["kind"] == kind].iloc[g:]
            verdict = "mismatch: " + "; ".join(_describe(e) for e in extra.itertuples())
        else:
            verdict = f"mismatch: you guessed {g} {kind}, the trace has {s}"
        rows.append({"item": f"{kind} kernels", "you guessed": g, "the trace says": s, "verdict": verdict})
    if previous is not None and guess.faster_than_previous is not None:
        now, before = prof.summary()["gpu_time_us"], previous.summary()["gpu_time_us"]
        faster = now < before
        rows.append({
            "item": f"faster than {previous.stage} on the GPU",
            "you guessed": "faster" if guess.faster_than_previous else "slower",
            "the trace says": f"{'faster' if faster else 'slower'}: {now:.1f} µs vs {before:.1f} µs",
            "verdict": "match" if faster == guess.faster_than_previous else
            f"mismatch: it is {before / now:.2f}× the speed of {previous.stage}"})
    return pd.DataFrame(rows)


def mismatches(guess: Guess, prof: Profile, previous: Profile | None = None) -> list[str]:
    table = compare(guess, prof, previous)
    return [v.removeprefix("mismatch: ") for v in table["verdict"] if v.startswith("mismatch")]
