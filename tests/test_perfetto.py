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

from conftest import ROOT, raw_document
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
