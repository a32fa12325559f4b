"""Reader pages carry no maintainer commands and no raw dumps (issue 29), read from the built book
(conftest's one build per run, or the `_build/html` that ATTN_PROFILED_BOOK_HTML names).

Every chapter page and every reference page a reader reads (not *Run it yourself*, the maintainers'
page, nor the API reference) is crawled whole: its prose, its folded notes and its outputs (the
generated code a page shows included), not the notebook's own code cells. None of them may show:

- a maintainer's command (`python tools/record_….py`) or the module that no longer exists
  (`helpers.profiling`): provenance is a folded "how this was recorded" note in the reader's terms;
- Inductor's metadata dicts (`triton_meta=`, `inductor_meta=`, `DeviceProperties(…)`,
  `'tt.divisibility'`) or a template's arguments as a Python dict (`template {'scalar_t': …}`);
- a Python object's repr (`<… object at 0x…>`), or a dict's repr in the prose.

Plain code: the standard library's HTML parser, nothing of helpers/. The first test plants each
kind of dump in a small page of its own and sees the crawl catch it.
"""
from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import BOOK_GROUP

pytestmark = BOOK_GROUP
BUILD = Path()

# the maintainers' pages: their commands belong there
NOT_READER_PAGES = {"book/run_it_yourself.html", "book/api.html"}

# anywhere on a reader's page, folded or not, prose, table or shown code
ANYWHERE = {
    "maintainer command": re.compile(r"python3? +tools/|tools/record_\w+\.py"),
    "module that no longer exists": re.compile(r"helpers\.profiling"),
    "Inductor metadata": re.compile(r"\b(?:triton_meta|inductor_meta) *=|DeviceProperties\(|'tt\.divisibility'"),
    "template arguments as a dict": re.compile(r"template *\{'|\{'scalar_t'"),
    "object repr": re.compile(r"<[\w.]+ object at 0x[0-9a-fA-F]+>"),
}
# in prose and tables (outside shown code): a dict's repr
IN_PROSE = {"dict repr": re.compile(r"\{'[A-Za-z_][\w ]*': ")}


class _Text(HTMLParser):
    """The article's text, in two parts: all of it (outputs and folded notes included), and the
    part outside <pre> (shown code). A notebook's own code cells (`cell_input`) are left out; text
    is joined as it is (syntax highlighting splits code into adjacent spans)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, bool, bool]] = []  # (tag, skip, in <pre>)
        self.all: list[str] = []
        self.prose: list[str] = []
        self.in_main = False

    def handle_starttag(self, tag, attrs):
        if tag in ("br", "wbr", "img", "meta", "link", "input", "hr"):
            return
        skip, pre = (self.stack[-1][1], self.stack[-1][2]) if self.stack else (False, False)
        classes = (dict(attrs).get("class") or "").split()
        if tag == "main":
            self.in_main = True
        skip = skip or tag in ("script", "style") or "cell_input" in classes
        self.stack.append((tag, skip, pre or tag == "pre"))

    def handle_endtag(self, tag):
        while self.stack:
            if self.stack.pop()[0] == tag:
                break
        if tag == "main":
            self.in_main = False

    def handle_data(self, data):
        if not self.in_main or (self.stack and self.stack[-1][1]):
            return
        self.all.append(data)
        if not (self.stack and self.stack[-1][2]):
            self.prose.append(data)


def dumps_in(markup: str) -> list[str]:
    """What a reader's page shows that it should not, in words (empty: nothing)."""
    parser = _Text()
    parser.feed(markup)
    everything, prose = "".join(parser.all), " ".join(parser.prose)
    found = []
    for what, pattern in ANYWHERE.items():
        for m in pattern.finditer(everything):
            found.append(f"{what}: …{everything[max(0, m.start() - 60):m.end() + 60]}…")
    for what, pattern in IN_PROSE.items():
        for m in pattern.finditer(prose):
            found.append(f"{what}: …{prose[max(0, m.start() - 60):m.end() + 60]}…")
    return found


def reader_pages() -> list[Path]:
    pages = sorted(BUILD.glob("notebooks/*.html")) + sorted(BUILD.glob("book/*.html"))
    return [p for p in pages if p.relative_to(BUILD).as_posix() not in NOT_READER_PAGES]


@pytest.fixture(autouse=True, scope="module")
def _built(book_build):
    global BUILD
    BUILD = book_build / "html"


def _page(body: str) -> str:
    return f"<html><body><main><article>{body}</article></main></body></html>"


PLANTED = {
    "maintainer command": "<p>To record them again: <code>python tools/record_ncu.py</code>.</p>",
    "module that no longer exists": "<table><tr><td>from helpers.profiling import ncu</td></tr></table>",
    "Inductor metadata": ("<div class='highlight'><pre><span>@triton_heuristics.pointwise(</span>\n    "
                          "<span class='n'>triton_meta</span><span class='o'>=</span>{<span>'signature'</span>: {}},"
                          "\n)</pre></div>"),
    "template arguments as a dict": "<p>the kernel's template {'scalar_t': 'float'}</p>",
    "object repr": "<pre>&lt;helpers.core.profile.Profile object at 0x7f3a2c1d9e50&gt;</pre>",
    "dict repr": "<details><summary>How</summary><p>the config {'num_warps': 4, 'num_stages': 3}</p></details>",
}


def test_the_crawl_catches_each_planted_dump():
    clean = _page("<p>Recorded with Nsight Compute on an H200: one forward after three warm-up calls.</p>"
                  "<div class='cell_input'><pre>from helpers import counters</pre></div>"
                  "<div class='highlight'><pre>size_hints={'x': 131072}</pre></div>")
    assert dumps_in(clean) == [], "a clean page (and a dict inside shown code) must pass"
    for what, body in PLANTED.items():
        found = dumps_in(_page(body))
        assert any(f.startswith(what + ":") for f in found), f"planted {what!r} not caught: {found}"
    # the notebook's own code cells are the reader's code, not a dump
    assert dumps_in(_page("<div class='cell_input'><pre>print({'a': 1})</pre></div>")) == []


def test_every_reader_page_is_plain():
    pages = reader_pages()
    assert len(pages) >= 18, f"only {len(pages)} reader pages in {BUILD}"
    bad = {p.relative_to(BUILD).as_posix(): found for p in pages
           if (found := dumps_in(p.read_text(encoding="utf-8")))}
    assert not bad, "\n".join(f"{page}: {f}" for page, found in bad.items() for f in found[:3])


@pytest.mark.parametrize("name", ["09_roofline", "11_training"])
def test_the_ncu_pages_say_how_they_were_recorded_in_a_fold(name):
    """The provenance is still there, in the reader's terms: folded (a <details>), naming the GPU
    the recordings come from, and no command."""
    markup = (BUILD / "notebooks" / f"{name}.html").read_text(encoding="utf-8")
    folds = re.findall(r"<details.*?</details>", markup, flags=re.S)
    text = [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", f)) for f in folds]
    assert any("recorded" in t.lower() and "Nsight Compute" in t for t in text) or \
        re.search(r"Nsight Compute's counters recorded on NVIDIA", markup), name
    if name == "09_roofline":
        how = [t for t in text if "How these were recorded" in t]
        assert how and "cudaProfilerStart" in how[0] and "warm-up" in how[0]


# --- a glued sentence pasted beside words it already ends with ("... a million tokens a million
# tokens"): three or more words said twice back to back within one paragraph ---------------------
DOUBLED = re.compile(r"\b([A-Za-z][\w’']*(?: [A-Za-z][\w’']*){2,}) \1\b")


class _Paragraphs(HTMLParser):
    """The text of each <p>, one string a paragraph (a fold's title and its body stay apart)."""

    def __init__(self):
        super().__init__()
        self.paragraphs, self._depth, self._text = [], 0, []

    def handle_starttag(self, tag, attrs):
        if tag == "p":
            self._depth += 1

    def handle_endtag(self, tag):
        if tag == "p" and self._depth:
            self._depth -= 1
            if not self._depth:
                self.paragraphs.append(re.sub(r"\s+", " ", "".join(self._text)))
                self._text = []

    def handle_data(self, data):
        if self._depth:
            self._text.append(data)


def doubled_in(markup: str) -> list[str]:
    parser = _Paragraphs()
    parser.feed(markup)
    return [m.group(0) for p in parser.paragraphs for m in DOUBLED.finditer(p)]


def test_no_paragraph_says_the_same_words_twice_in_a_row():
    assert doubled_in(_page("<p>only flash stays past a million tokens a million tokens (the table)</p>"))
    assert not doubled_in(_page("<p>only flash stays past a million tokens (the table)</p>"
                                "<details><summary>the same file</summary><p>the same file, drawn</p></details>"))
    bad = {p.relative_to(BUILD).as_posix(): found for p in reader_pages()
           if (found := doubled_in(p.read_text(encoding="utf-8")))}
    assert not bad, bad
