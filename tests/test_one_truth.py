"""One truth per page (issue 21): each stage's lesson in the closing table is its chapter's own,
named in the registry and backed by a verdict computed from the trace."""
from __future__ import annotations

import pytest

from helpers import claims, closing_stages, profile_stages, tables
from helpers.core.stages import STAGES


@pytest.fixture(scope="module")
def closing():
    names = closing_stages(mode="replay")
    profiles = profile_stages(names, mode="replay")
    return profiles, claims.revealed(profiles)


def test_every_stage_names_its_lesson_and_the_claim_behind_it():
    for name, stage in STAGES.items():
        assert stage.lesson, f"{name} has no lesson in the registry"
        assert stage.lesson_claim, f"{name} names no claim behind its lesson"


def test_each_lesson_is_backed_by_its_own_verdict(closing):
    profiles, revealed = closing
    frame = tables.at_a_glance(profiles, revealed)
    for name in profiles:
        v = tables.stage_lesson(name, revealed)
        assert v is not None and v.claim.startswith(STAGES[name].lesson_claim), name
        assert frame.loc[name, "the chapter's lesson"] == STAGES[name].lesson
        assert frame.loc[name, "verdict from the trace"].startswith(v.verdict)
    # the naive chapter's lesson is the hidden copy, not trivia about another stage's launch path
    assert "Memcpy" in tables.stage_lesson("naive", revealed).evidence
    # no two stages share a lesson sentence
    lessons = list(frame["the chapter's lesson"])
    assert len(set(lessons)) == len(lessons)
