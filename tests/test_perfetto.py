"""The trace behind a page: the bytes the link and the button carry, live and in replay, and how
the book turns them into a file of the build (book/_ext/reading.py). The button itself, in
Chromium with a stand-in for ui.perfetto.dev, is tested in test_browser.py."""
import base64
import dataclasses
import gzip
import importlib.util
import json
import re
from types import SimpleNamespace

import pytest

from conftest import LAUNCH_ARGS, ROOT, raw_document
from helpers import Profile, perfetto, profile_stage

DATA_URL = re.compile(r"download=\"([^\"]+)\" href=\"data:application/gzip;base64,([A-Za-z0-9+/=]+)\"")


def load_reading():
    spec = importlib.util.spec_from_file_location("reading", ROOT / "book" / "_ext" / "reading.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def replayed():
    return profile_stage("naive", mode="replay", quiet=True)


def test_in_replay_the_page_carries_the_recorded_file_as_it_is(replayed):
    out = perfetto.trace_links(replayed).data
    name, data = DATA_URL.search(out).groups()
    assert base64.b64decode(data) == replayed.trace_path.read_bytes()
    assert name == replayed.trace_path.name
    assert "onclick='apOpenInPerfetto(this)'" in out and "window.apOpenInPerfetto" in out


def test_live_the_page_carries_the_trace_just_taken(replayed):
    # a live profile has no file: its events, written the way Profile.save writes them
    live = Profile(replayed.events, dataclasses.replace(replayed.provenance, mode="live"))
    name, data = DATA_URL.search(perfetto.trace_links(live).data).groups()
    document = json.loads(gzip.decompress(base64.b64decode(data)))
    assert document["traceEvents"] == raw_document(replayed.trace_path)["traceEvents"]
    assert document["provenance"]["stage"] == "naive" and document["provenance"]["mode"] == "live"
    assert name == replayed.trace_path.name  # the same name a replayed trace of that stage has


def test_the_opener_speaks_perfettos_protocol():
    js = perfetto.OPENER_JS
    # PING until PONG, then one message {perfetto: {buffer, title, fileName}} to Perfetto's origin
    assert 'postMessage("PING", ORIGIN)' in js and 'event.data !== "PONG"' in js
    assert re.search(r"postMessage\(\{perfetto: \{buffer: buffer, title: [^,]+, fileName: [^}]+\}\}, ORIGIN\)", js)
    assert 'const ORIGIN = "https://ui.perfetto.dev"' in js
    # the tab is opened in the click itself, before anything is awaited
    assert js.index("window.open(") < js.index("await")


def test_the_book_writes_each_trace_into_the_build_and_links_it(tmp_path, replayed):
    reading = load_reading()
    html = perfetto.trace_links(replayed).data
    context = {"body": f"<p>before</p>{html}<p>after</p>",
               "pathto": lambda rel, resource: f"../{rel}"}
    reading.externalize_traces(SimpleNamespace(outdir=str(tmp_path)), context)
    body = context["body"]
    assert "data:application/gzip" not in body
    href = re.search(r"class='ap-trace-download' download=\"[^\"]+\" href=\"([^\"]+)\"", body).group(1)
    assert href.startswith("../_static/traces/") and href.endswith(replayed.trace_path.name)
    assert (tmp_path / href.removeprefix("../")).read_bytes() == replayed.trace_path.read_bytes()
    assert body.startswith("<p>before</p>") and body.endswith("<p>after</p>")


def test_markdown_tables_get_their_column_labels():
    reading = load_reading()
    table = ('<table class="table">\n<thead>\n<tr class="row-odd"><th class="head"><p>GPU</p></th>'
             '<th class="head"><p>compute <em>capability</em></p></th><th class="head"><p>flash</p></th></tr>\n'
             '</thead>\n<tbody>\n<tr class="row-even"><td><p>T4</p></td><td><p>7.5</p></td><td><p>no</p></td></tr>\n'
             '<tr class="row-odd"><td><p>H200</p></td><td><p>9.0</p></td><td><p>yes</p></td></tr>\n</tbody>\n</table>')
    context = {"body": table}
    reading.label_markdown_tables(context)
    labels = re.findall(r'<td data-label="([^"]*)">', context["body"])
    assert labels == ["GPU", "compute capability", "flash"] * 2
    assert 'class="table ap-table ap-cards"' in context["body"]


# --- the button in Chromium: Perfetto's answer, and another origin's ----------------------------

BOOK = "https://book.test/page.html"
EVIL = "https://elsewhere.test/"
# a stand-in for ui.perfetto.dev: it answers PING with PONG and keeps what it is sent
HONEST = """<script>window.received = null;
window.addEventListener("message", (e) => {
  if (e.data === "PING") e.source.postMessage("PONG", e.origin);
  else if (e.data && e.data.perfetto) { window.received = e.data.perfetto; console.log("received " + e.data.perfetto.buffer.byteLength); }
});</script>"""
# a Perfetto tab sent elsewhere: the other origin answers PONG, unasked, again and again
REDIRECT = f"<script>location.replace({EVIL!r});</script>"
IMPOSTOR = """<script>setInterval(() => { if (window.opener) { window.opener.postMessage("PONG", "*");
  console.log("pong"); } }, 50);</script>"""


def open_in_perfetto(browser, html: str, perfetto_page: str) -> tuple[str, int | None, int]:
    """Click the page's button with `perfetto_page` served as ui.perfetto.dev: the page's status
    once the tab has answered (or tried to), the bytes the tab received (None: nothing), and how
    many PONGs it sent unasked."""
    context = browser.new_context()
    pages = {BOOK: f"<!DOCTYPE html><html><body>{html}</body></html>", perfetto.PERFETTO + "/": perfetto_page,
             EVIL: IMPOSTOR}
    context.route("**/*", lambda route: route.fulfill(body=pages[route.request.url.split("#")[0]],
                                                      content_type="text/html; charset=utf-8")
                  if route.request.url.split("#")[0] in pages else route.abort())
    page = context.new_page()
    page.goto(BOOK)
    logged: list[str] = []
    with context.expect_page() as new:
        page.click("button.ap-perfetto")
    tab = new.value
    tab.on("console", lambda m: logged.append(m.text))
    status = page.locator(".ap-perfetto-status")
    # until the page says it sent the trace, or the impostor has PONGed ten times
    for _ in range(400):
        if status.inner_text().startswith("Sent") or logged.count("pong") >= 10:
            break
        page.wait_for_timeout(50)
    text = status.inner_text()
    received = tab.evaluate("() => window.received ? window.received.buffer.byteLength : null")
    context.close()
    return text, received, logged.count("pong")


@pytest.mark.browser
def test_the_button_hands_the_trace_to_perfetto_only(browser, replayed):
    html = perfetto.trace_links(replayed).data
    text, received, _ = open_in_perfetto(browser, html, HONEST)
    assert text == "Sent to Perfetto, in the new tab." and received == replayed.trace_path.stat().st_size
    # the tab sent to another origin answers PONG: the page does not believe it, and sends nothing
    text, received, pongs = open_in_perfetto(browser, html, REDIRECT)
    assert pongs >= 10 and received is None
    assert text == "Waiting for Perfetto to answer…"
