"""Each page's trace, a file of the book: the download link and the Perfetto button serve it.

helpers/pages/perfetto.py puts the gzipped trace into the output as a data: URL, so that a live
notebook hands over the trace it just took with no file server. A book page must not carry it:
here each one is written to ``_static/traces/<sha256[:12]>/<its file name>`` (the same bytes on
two pages, one file; a live build's two captures of a stage, two files) and the link points
there. Its file name stays the one a reader downloads.
"""
from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

LINK = re.compile(r'(<a class=\'ap-trace-download\' download="([^"/\\]+)" href=")'
                  r'data:application/gzip;base64,([A-Za-z0-9+/=]*)(")')
FOLDER = "_static/traces"


def externalize_traces(app, pagename, templatename, context, doctree) -> None:
    body = context.get("body")
    if app.builder.format != "html" or not body or "ap-trace-download" not in body:
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


def setup(app):
    app.connect("html-page-context", externalize_traces)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
