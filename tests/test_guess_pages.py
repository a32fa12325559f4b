"""Every question of the built book, answered in headless Chromium as a reader answers it.

On each page with a question, at 1400×900 (dark theme too) and 390×844: a right guess and a wrong
guess each get the verdict the page's own answer key implies (``guess.judge`` on the key read
from the page, so no verdict is typed in here); the reader's own words appear in the comparison;
the keyboard alone can guess and reveal; every link of a reveal lands on an element of the page;
bad input gets a message and no verdict; no console error, nothing fetched from outside the book.
Then the closing chapter lists the guesses just made, chapter by chapter, and clears them.

The book is the one tests/test_browser.py builds (or ATTN_PROFILED_BOOK_HTML).
"""
from __future__ import annotations

import json
import re

import pytest

from helpers.views.guess import STORAGE_KEY, judge
from test_browser import LAPTOP, PAGES, PHONE, book, last_visit, page_params, server, shoot, visit  # noqa: F401 (fixtures)
from test_guess_js import right_text, wrong_text  # a reader's right and wrong answers, one definition

pytestmark = pytest.mark.browser

QUESTION_PAGES = sorted(p for p in PAGES if p.startswith("notebooks/"))


def keys_of(page) -> list[dict]:
    return [json.loads(t) for t in page.locator("[data-apq] > .apq-data").all_text_contents()]


def guess_by_keyboard(page, key: dict, text: str) -> None:
    root = page.locator(f'[data-apq="{key["id"]}"]')
    if key["type"] == "choice":
        root.locator(f'input[type=radio][value="{text}"]').focus()
        page.keyboard.press("Space")
        page.keyboard.press("Tab")
        assert page.evaluate("() => document.activeElement.className") == "apq-look"
        page.keyboard.press("Enter")
    else:
        root.locator("input.apq-input").focus()
        page.keyboard.press("Control+A")
        page.keyboard.type(text)
        page.keyboard.press("Enter")


def guess_by_mouse(page, key: dict, text: str) -> None:
    root = page.locator(f'[data-apq="{key["id"]}"]')
    if key["type"] == "choice":
        root.locator(f'input[type=radio][value="{text}"]').check()
    else:
        root.locator("input.apq-input").fill(text)
    root.locator("button.apq-look").click()


def questions_in(book, path: str) -> int:
    """The questions a built page holds, counted in its HTML (one data-apq="<id>" each)."""
    return (book / path).read_text(encoding="utf-8").count('data-apq="')


def test_the_book_asks_enough_questions(book):
    # at least 12 in each half of the pages (every other page), as a reader meets them
    for half in (0, 1):
        assert sum(questions_in(book, p) for p in QUESTION_PAGES[half::2]) >= 12, half


@pytest.mark.parametrize("size", [LAPTOP, PHONE], ids=["laptop", "phone"])
@pytest.mark.parametrize("path", page_params(QUESTION_PAGES))
def test_every_question_of_the_page(last_visit, book, path, size):
    """In the page's load group, last: the page as test_page loaded it (dark on a laptop, light on
    a phone), every question answered; the load is then closed (last_visit), not shared on."""
    expected = questions_in(book, path)
    if not expected:
        return
    v = last_visit(path, "dark" if size == LAPTOP else "light", size)
    page = v.page
    keys = keys_of(page)
    assert len(keys) == expected, (path, len(keys), expected)
    assert page.locator("[data-apq]").count() == page.locator("[data-apq][data-apq-mounted]").count(), path
    for key in keys:
        root = page.locator(f'[data-apq="{key["id"]}"]')
        root.scroll_into_view_if_needed()
        assert root.locator(".apq-result").is_hidden(), (path, key["id"], "answered before the guess")
        # every link a reveal can show lands on this page
        for href in {key["explainedBy"]["href"], *(a["href"] for a in (key["answer"] if key["type"] == "kernels" else []))}:
            assert page.locator(f"[id='{href[1:]}']").count() == 1, (path, key["id"], href)
        for text, how in ((wrong_text(key), guess_by_mouse), (right_text(key), guess_by_keyboard)):
            how(page, key, text)
            want = judge(key, text)
            assert root.get_attribute("data-apq-verdict") == want["verdict"], (path, key["id"], text)
            shown = root.locator(".apq-result").inner_text()
            for item in want["items"]:
                assert item["guess"] in shown, (path, key["id"], item)
        assert judge(key, right_text(key))["verdict"] == "right"
        # the mismatch of the wrong guess links to what explains it, and the link lands there
        how = guess_by_mouse
        how(page, key, wrong_text(key))
        link = root.locator("tr:not(.apq-matched) a.apq-why").first
        target = link.get_attribute("href")[1:]
        link.click()
        assert page.evaluate("() => document.activeElement.id") == target, (path, key["id"])
        # bad input: a message, never a verdict
        if key["type"] != "choice":
            bad = "gemmm" if key["type"] == "kernels" else "twelve"
            root.locator("input.apq-input").fill(bad)
            root.locator("button.apq-look").click()
            assert root.locator(".apq-message").inner_text() == judge(key, bad)["message"]
            assert root.locator(".apq-result").is_hidden()
        # just reveal, by keyboard
        root.locator("button.apq-reveal").focus()
        page.keyboard.press("Enter")
        assert root.get_attribute("data-apq-verdict") == "revealed"
        assert key["answerText"] in root.locator(".apq-result").inner_text()
    assert page.evaluate("() => document.documentElement.scrollWidth") <= size[0], path
    shoot(page, book.parent / "screenshots" / f"apq__{path.split('/')[-1]}__{size[0]}.png")
    assert not v.problems, (path, v.problems)


def test_the_closing_chapter_shows_the_readers_guesses(visit):
    v = visit("notebooks/02_inplace.html")
    key = keys_of(v.page)[0]
    guess_by_mouse(v.page, key, "gemm, softmax, gemm")
    verdict = judge(key, "gemm, softmax, gemm")["verdict"]
    # the same browser, the closing chapter
    v.page.goto(v.base + "/notebooks/08_at_a_glance.html", wait_until="load")
    card = v.page.locator("[data-apq-scorecard] .apq-score")
    card.locator("table").wait_for()
    text = card.inner_text()
    assert "gemm, softmax, gemm" in text and key["question"] in text and key["answerText"] in text
    chapter = v.page.evaluate("(k) => JSON.parse(localStorage.getItem(k))", STORAGE_KEY)[key["id"]]["chapter"]
    assert re.match(r"2\.", chapter), chapter
    assert {"right": "Right.", "wrong": "Not quite."}[verdict] in text
    v.page.locator("[data-apq-scorecard] button.apq-clear").click()
    assert "No guesses kept" in card.inner_text()
    # a return visit to the chapter: nothing kept, nothing answered
    v.page.goto(v.base + "/notebooks/02_inplace.html", wait_until="load")
    assert v.page.locator(f'[data-apq="{key["id"]}"] .apq-result').is_hidden()
    assert not v.problems, v.problems


def test_the_book_loads_the_questions_script_once_and_it_is_the_helpers_own(book):
    # static_book shares the script and stylesheet every question inlines (one file each)
    from helpers.views import guess as guess_module
    js, css = (guess_module.HERE / guess_module.SCRIPT).read_text(), (guess_module.HERE / guess_module.STYLESHEET).read_text()
    assert (book / "_static" / "attention_profiled_guess.js").read_text() == js
    assert (book / "_static" / "attention_profiled_guess.css").read_text() == css
    asked = 0
    for page in (book / "notebooks").glob("*.html"):
        text = page.read_text()
        questions = text.count("data-apq=")
        assert js not in text and css not in text, page.name
        if questions:
            assert 'src="../_static/attention_profiled_guess.js"' in text, page.name
        asked += questions
    assert asked > 0
