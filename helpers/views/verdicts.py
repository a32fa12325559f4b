"""A verdict: one claim, what a trace shows about it, and whether it holds on this GPU."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..core.article import ARTICLE_GPU


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


def lesson(verdicts: list[Verdict]) -> Verdict | None:
    """The one lesson a stage's trace teaches: the first claim that differs here, else the first
    that holds (a surprise teaches more than a confirmation)."""
    return next((v for v in verdicts if not v.holds), verdicts[0] if verdicts else None)
