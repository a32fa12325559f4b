"""Jargon is taught before it is used (issue 21): on every page of the book, the first use of each
glossary term in the page's prose is a link to its entry in the glossary. Read from the built book
(conftest's one build per run, or the `_build/html` that ATTN_PROFILED_BOOK_HTML names).

- The terms are the built glossary's own (`<dt id="term-…">`), never a list typed here; a term is
  found in its usual forms (a plural, `launched`; a lowercase term capitalised at a sentence's
  start), as a whole word.
- Prose is what the page's authors wrote around the code: paragraphs, lists, notes and folds.
  Code, tables, the cells' inputs and outputs (charts, questions, banners), headings, a fold's
  or note's title and the bibliography are not prose; nor is a word inside another link (it cannot
  hold a second one) or inside the link of a longer term (`launch` in *asynchronous launch*).
- *holds* and *differs* are English verbs too: they are terms where the page writes them as the
  book's verdicts (emphasised, quoted or linked).

A page's prose links each term once (a reference table may link its cells too), and no heading
holds a link.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from conftest import BOOK_GROUP, ROOT, require

bs4 = require("bs4", "beautifulsoup4")

pytestmark = BOOK_GROUP
GLOSSARY = "book/glossary"
BUILD = Path()  # the built book's html folder, set from the run's one build below


@pytest.fixture(autouse=True, scope="module")
def _built(book_build):
    global BUILD
    BUILD = book_build / "html"


def toc_pages() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return [toc["root"]] + [c["file"] for part in toc.get("parts", []) for c in part["chapters"]]


# the API reference is the docstrings, generated (book/api.md): a reference, not prose that teaches
PAGES = [p for p in toc_pages() if p not in (GLOSSARY, "book/api")]

# not prose: code, tables, the cells (inputs and their outputs), headings and titles, navigation,
# the bibliography, the book's question forms
NOT_PROSE = ("pre, code, table, div.cell, h1, h2, h3, h4, h5, h6, summary, .admonition-title, "
             "nav, .headerlink, .citation-list, .citation, script, style, svg, .js-plotly-plot, [data-apq]")
VERBS = {"holds", "differs"}  # terms only where written as the book's verdicts


def soup(name: str):
    return bs4.BeautifulSoup((BUILD / f"{name}.html").read_text(encoding="utf-8"), "html.parser")


def glossary_terms() -> dict[str, str]:
    """{anchor: term} from the built glossary page: each `<dt id="term-…">`'s own text."""
    terms = {}
    for dt in soup(GLOSSARY).select('dt[id^="term-"]'):
        text = "".join(s for s in dt.find_all(string=True, recursive=False)).strip() or dt.get_text()
        terms[dt["id"]] = re.sub(r"\s+", " ", text.replace("¶", "")).strip()
    assert len(terms) >= 10, f"the built glossary has only {len(terms)} terms"
    return terms


def surface(term: str) -> re.Pattern:
    """The term in its usual forms, as a whole word: `backend (SDPA)` as `backend`; the last word
    in its plural or past forms; words apart by spaces, a line break or a hyphen; a lowercase term
    capitalised at a sentence's start. Acronyms and names keep their case."""
    words = re.sub(r"\s*\(.*?\)", "", term).split()
    parts = [re.escape(w) for w in words]
    if term not in VERBS:
        parts[-1] += r"(?:s|es|ed|ing)?" if words[-1][-1].isalpha() else ""
    if words[0][0].islower():
        parts[0] = f"[{words[0][0]}{words[0][0].upper()}]" + parts[0][1:]
    return re.compile(r"(?<![\w-])" + r"[\s\u00a0-]+".join(parts) + r"(?![\w-])")


def glossary_anchor(a) -> str | None:
    """The glossary anchor a link points to (`…glossary.html#term-kernel` → `term-kernel`)."""
    if a is None:
        return None
    m = re.search(r"glossary\.html#(term-[^\"'#]+)$", a.get("href", ""))
    return m.group(1) if m else None


def prose_nodes(page):
    """The page's prose, as text nodes in reading order."""
    article = page.select_one("article.bd-article") or page.body
    skipped = {id(tag) for tag in article.select(NOT_PROSE)}
    for node in article.find_all(string=True):
        if isinstance(node, (bs4.Comment, bs4.Doctype)) or not node.strip():
            continue
        if any(id(p) in skipped for p in node.parents):
            continue
        yield node


def as_verdict(node, start: int, end: int) -> bool:
    """A verdict word written as one: emphasised, quoted or linked."""
    if any(p.name in ("em", "strong", "a") for p in node.parents):
        return True
    text = str(node)
    return start > 0 and end < len(text) and text[start - 1] in "\"“'‘" and text[end] in "\"”'’"


def first_uses(page, terms: dict[str, str]) -> dict[str, tuple[str, str | None, str]]:
    """Per term anchor, its first use in the page's prose: (the words, the glossary anchor the
    enclosing link points to or None, the words around it)."""
    patterns = {anchor: surface(term) for anchor, term in terms.items()}
    found: dict[str, tuple[str, str | None, str]] = {}
    for node in prose_nodes(page):
        text = str(node)
        link = node.find_parent("a")
        target = glossary_anchor(link)
        for anchor, pattern in patterns.items():
            if anchor in found:
                continue
            for m in pattern.finditer(text):
                if link is not None and target is None:
                    break  # inside another link: it cannot hold a second one
                if target is not None and target != anchor:
                    break  # part of a longer term's link (launch in asynchronous launch)
                if terms[anchor] in VERBS and not as_verdict(node, m.start(), m.end()):
                    continue
                around = re.sub(r"\s+", " ", node.parent.get_text() if node.parent else text)[:160]
                found[anchor] = (m.group(0), target, around)
                break
    return found


def glossary_links(page) -> list[tuple[str, list[str], bool]]:
    """Every link to the glossary in the article: (its anchor, its enclosing tags' names, whether
    it sits in prose). A reference table may link its own cells: it is not prose."""
    article = page.select_one("article.bd-article") or page.body
    skipped = {id(tag) for tag in article.select(NOT_PROSE)}
    return [(glossary_anchor(a), [p.name for p in a.parents], not any(id(p) in skipped for p in a.parents))
            for a in article.find_all("a") if glossary_anchor(a)]


@pytest.fixture(scope="module")
def terms() -> dict[str, str]:
    return glossary_terms()


@pytest.mark.parametrize("name", PAGES)
def test_a_term_is_linked_to_the_glossary_at_its_first_use(name, terms):
    unlinked = [f"{terms[anchor]!r} first used as {words!r}, not linked: …{around}…"
                for anchor, (words, target, around) in first_uses(soup(name), terms).items()
                if target != anchor]
    assert not unlinked, f"{name}:\n" + "\n".join(unlinked)


@pytest.mark.parametrize("name", PAGES)
def test_a_page_links_a_term_once_and_never_in_a_heading(name, terms):
    links = glossary_links(soup(name))
    anchors = [anchor for anchor, _, prose in links if prose]
    twice = sorted({terms.get(a, a) for a in anchors if anchors.count(a) > 1})
    assert not twice, f"{name} links these terms more than once in its prose: {twice}"
    in_headings = [terms.get(a, a) for a, parents, _ in links if {"h1", "h2", "h3", "h4", "h5", "h6"} & set(parents)]
    assert not in_headings, f"{name} links terms inside headings: {in_headings}"


def test_the_terms_come_from_the_built_glossary(terms):
    """The glossary the tests read is the book's: every term its source defines is a `<dt>`."""
    source = (ROOT / "book" / "glossary.md").read_text(encoding="utf-8")
    block = source.split("```{glossary}", 1)[1].split("\n```", 1)[0]
    defined = [line.strip() for line in block.splitlines() if line and not line[0].isspace()]
    # Sphinx's smart quotes curl a term's apostrophe (caller’s timer) in the built page
    assert sorted(defined) == sorted(t.replace("\u2019", "'") for t in terms.values())
