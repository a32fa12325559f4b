"""The book as readers read it: each page's trace a file of the book, Markdown tables labelled.

1. The trace behind a page. helpers/views/perfetto.py puts the gzipped trace into the output as a
   data: URL, so that a live notebook hands over the trace it just took with no file server. A
   book page must not carry it: each one is written to ``_static/traces/<sha256[:12]>/<its file
   name>`` (the same bytes on two pages, one file; a live build's two captures of a stage, two
   files) and the link points there. Its file name stays the one a reader downloads.
2. Tables of the Markdown pages. helpers/views/render.py labels every cell of a notebook's
   DataFrame with its column, so that a phone shows a wide table as cards; a Markdown table gets
   the same labels here (``data-label``), and the same cards when it has three columns or more.
"""
from __future__ import annotations

import base64
import hashlib
import html
import re
from pathlib import Path

# --- 1. trace files ----------------------------------------------------------------------------

LINK = re.compile(r'(<a class=\'ap-trace-download\' download="([^"/\\]+)" href=")'
                  r'data:application/gzip;base64,([A-Za-z0-9+/=]*)(")')
FOLDER = "_static/traces"


def externalize_traces(app, context) -> None:
    body = context.get("body")
    if not body or "ap-trace-download" not in body:
        return

    def write(match: re.Match) -> str:
        data = base64.b64decode(match.group(3))
        rel = f"{FOLDER}/{hashlib.sha256(data).hexdigest()[:12]}/{match.group(2)}"
        target = Path(app.outdir) / rel
        if not target.is_file() or target.read_bytes() != data:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        return match.group(1) + context["pathto"](rel, 1) + match.group(4)

    context["body"] = LINK.sub(write, body)


# --- 2. Markdown tables ------------------------------------------------------------------------

DOCUTILS_TABLE = re.compile(r'<table class="table[^"]*">(.*?)</table>', re.S)
CELL_OPEN = re.compile(r"<td(?=[\s>])")
ROW = re.compile(r"<tr[^>]*>.*?</tr>", re.S)
TAGS = re.compile(r"<[^>]+>")


def label_markdown_tables(context) -> None:
    body = context.get("body")
    if not body or '<table class="table' not in body:
        return

    def label(match: re.Match) -> str:
        inner = match.group(1)
        if "<thead>" not in inner:
            return match.group(0)
        head, rest = inner.split("</thead>", 1)
        headers = [html.unescape(TAGS.sub("", h)).strip() for h in re.findall(r"<th[^>]*>(.*?)</th>", head, re.S)]

        def row(r: re.Match) -> str:
            names = iter(headers)
            return CELL_OPEN.sub(lambda _: f'<td data-label="{html.escape(next(names, ""))}"', r.group(0))

        cards = " ap-cards" if len(headers) >= 3 else ""
        opening = match.group(0)[:match.group(0).index(">") + 1].replace('class="table', f'class="table ap-table{cards}', 1)
        return opening + head + "</thead>" + ROW.sub(row, rest) + "</table>"

    context["body"] = DOCUTILS_TABLE.sub(label, body)


def on_page(app, pagename, templatename, context, doctree) -> None:
    if app.builder.format != "html":
        return
    externalize_traces(app, context)
    label_markdown_tables(context)


def setup(app):
    app.connect("html-page-context", on_page)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
