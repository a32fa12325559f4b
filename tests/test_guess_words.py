"""The guesses accept what the book itself says (helpers/views/guess.py's judge, no browser).

The expectations are the book's reading, typed in tests/test_guess_js.py (BOOK_PHRASES: the words
the chapters' prose uses for each stage's kernels; READER_UNITS: the units the number fields show,
with their sizes), never read from guess.WORDS or guess.UNITS; the keys are computed from the
replay set's traces. test_guess_js.py holds the browser's judge to the same verdicts.
"""
from __future__ import annotations

import pytest

from helpers import profile_stage
from helpers.views import guess
from test_guess_js import BOOK_PHRASES, FOREIGN_UNITS, READER_UNITS


@pytest.fixture(scope="module")
def kernel_keys() -> dict[str, dict]:
    return {s: guess.kernels_key(profile_stage(s, mode="replay", quiet=True)) for s in BOOK_PHRASES}


@pytest.mark.parametrize("stage", sorted(BOOK_PHRASES))
def test_a_stages_kernels_accept_the_books_words_for_them(kernel_keys, stage):
    key = kernel_keys[stage]
    for text in BOOK_PHRASES[stage]["right"]:
        got = guess.judge(key, text)
        assert got.get("verdict") == "right", (stage, text, got)
    for text in BOOK_PHRASES[stage]["wrong"]:
        got = guess.judge(key, text)
        # a word of the book is never "not a kernel kind": it is judged, and here judged wrong
        assert got["valid"] and got["verdict"] == "wrong", (stage, text, got)
    # "fused" for a kernel the book calls fused is never "not in the trace"
    fused = [a for a in key["answer"] if a["kind"] in ("fused", "attention")]
    if fused:
        text = ", ".join("fused" if a in fused else a["kind"] for a in key["answer"])
        assert guess.judge(key, text)["verdict"] == "right", (stage, text)


@pytest.mark.parametrize("unit", sorted(READER_UNITS))
def test_a_number_field_accepts_the_unit_it_shows_converted(unit):
    answer, tolerance = 4.0625, 0.01  # tight: a wrong factor (GiB as 1e9 bytes) lands outside
    key = guess.number_key("u", "How many?", answer, tolerance=tolerance, unit=unit, decimals=2)
    for spelling, factor in READER_UNITS[unit]:
        inside, outside = answer / factor, answer * (1 + tolerance) * 1.01 / factor
        assert guess.judge(key, f"{inside!r}{spelling}")["verdict"] == "right", (unit, spelling)
        assert guess.judge(key, f"{inside:,.7g}{spelling}")["verdict"] == "right", (unit, spelling)
        assert guess.judge(key, f"{outside!r}{spelling}")["verdict"] == "wrong", (unit, spelling)
    for foreign in FOREIGN_UNITS:
        if foreign.strip() == unit.strip():
            continue
        got = guess.judge(key, f"4{foreign}")
        assert not got["valid"] and unit.strip() in got["message"], (unit, foreign, got)
    # an exact key: the count in its unit, singular or plural, and bare
    exact = guess.number_key("e", "How many?", 5, unit=unit)
    assert guess.judge(exact, f"5{READER_UNITS[unit][0][0]}")["verdict"] == "right"
    assert guess.judge(exact, "5")["verdict"] == "right"
    assert guess.judge(exact, f"6{READER_UNITS[unit][0][0]}")["verdict"] == "wrong"


def test_both_micro_characters_and_us_read_as_microseconds():
    key = guess.number_key("t", "How long?", 96.0, tolerance=0.05, unit=" µs")
    for text in ("96 \u00b5s", "96\u03bcs", "96 us", "0.096 ms", "96000 ns", "96", "96 μs"):
        assert guess.judge(key, text)["verdict"] == "right", text
    assert guess.judge(key, "96 ms")["verdict"] == "wrong"


def test_a_tie_the_page_names_accepts_every_tied_answer():
    options = ["naive", "inplace", "sdpa_math", "sdpa_flash"]
    key = guess.choice_key("t", "Which first?", options, "sdpa_math", accepted=["naive", "inplace"])
    assert [guess.judge(key, o)["verdict"] for o in options] == ["right", "right", "right", "wrong"]
    with pytest.raises(ValueError):
        guess.choice_key("t", "Which first?", options, "naive", accepted=["nowhere"])


def test_the_browsers_judge_has_no_table_of_its_own():
    # the words, units and status words reach js/guess.js in each key, from the one table in
    # Python: a second copy typed into the script would drift from it unseen
    script = (guess.HERE / guess.SCRIPT).read_text()
    literals = set(__import__("re").findall(r'"([^"\\]*)"|\'([^\'\\]*)\'', script))
    literals = {a or b for a, b in literals}
    spellings = ({*guess.WORDS, *guess.ALIASES} | {u for units in guess.UNITS.values() for u in units}
                 | {s for s in guess.STATUSES.values() if s})
    typed = sorted(w for w in spellings if w in literals and len(w) > 1
             and w not in ("kernels",))  # the question type, not a unit
    assert not typed, f"js/guess.js types its own: {typed}"
    for character in ("µ", "μ", "×"):
        assert character not in script, character
