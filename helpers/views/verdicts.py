"""A verdict: one claim, what a trace shows about it, and whether it holds on this GPU."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Mapping

import pandas as pd

from ..core.article import ARTICLE_GPU
from ..core.measured_on import mixed, sides


@dataclass(frozen=True)
class Verdict:
    claim: str        # what the article teaches
    evidence: str     # what this trace shows, with numbers from it
    holds: bool
    difference: str = ""
    article: str = ""  # the article's own figure for the claim, shown only in its labelled column

    @property
    def verdict(self) -> str:
        return "holds" if self.holds else f"differs: {self.difference}"


def table(verdicts: list[Verdict]) -> pd.DataFrame:
    frame = pd.DataFrame({"the article": [v.claim for v in verdicts],
                          "this trace": [v.evidence for v in verdicts],
                          "verdict": [v.verdict for v in verdicts]})
    if any(v.article for v in verdicts):
        frame[ARTICLE_GPU] = [v.article or None for v in verdicts]
    return frame


# --- the verdict registry: each stage's verdicts, registered beside the code that judges them ---

@dataclass(frozen=True)
class Judge:
    """What judges one stage's claims: `judge(profile, *needed, **optional)` -> verdicts (a None,
    a claim its trace cannot judge, is left out)."""

    stage: str
    judge: Callable[..., list[Verdict | None]]
    needs: tuple[str, ...] = ()      # the stages it compares against, each handed as a Profile
    optional: tuple[str, ...] = ()   # handed by keyword, as a Profile where there is one, else None

    def ready(self, profiles: Mapping) -> bool:
        """Whether `profiles` holds the stage and every stage it needs."""
        return all(name in profiles for name in (self.stage, *self.needs))

    def __call__(self, profiles: Mapping) -> list[Verdict]:
        given = self.judge(profiles[self.stage], *(profiles[n] for n in self.needs),
                           **{n: profiles.get(n) for n in self.optional})
        out = [v for v in given if v is not None]
        # live, a stage this GPU cannot run is its recording from another GPU: every comparison
        # with it says which GPU each side ran on, never silently one GPU against another
        used = {n: profiles.get(n) for n in (self.stage, *self.needs, *self.optional)}
        if mixed(used):
            note = f"Two GPUs: {sides(used)}. "
            out = [replace(v, evidence=note + v.evidence) for v in out]
        return out


VERDICTS: dict[str, Judge] = {}   # stage name -> its judge, in the order they were registered


def verdict(stage: str, needs: tuple[str, ...] = (), optional: tuple[str, ...] = ()) -> Callable:
    """Register the decorated function as the judge of `stage`'s claims; it is handed the stage's
    Profile, then one Profile per name in `needs`, then each of `optional` by keyword (None where
    absent). A stage's verdicts are one decorated function:

        @verdict("inplace", needs=("naive",))
        def inplace_verdicts(inplace, naive): return [memcpy_gone(inplace, naive), ...]"""
    from ..core.stages import get_stage
    for name in (stage, *needs, *optional):
        get_stage(name)   # a name the registry does not know fails here, at import, not on a page
    def register(judge: Callable) -> Callable:
        if stage in VERDICTS and VERDICTS[stage].judge.__qualname__ != judge.__qualname__:
            raise ValueError(f"stage {stage!r} already has its verdicts: {VERDICTS[stage].judge.__qualname__}")
        VERDICTS[stage] = Judge(stage, judge, tuple(needs), tuple(optional))
        return judge
    return register
