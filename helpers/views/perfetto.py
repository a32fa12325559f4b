"""The trace behind a page, one click away: a download link and an "Open in Perfetto" button.

The output carries the gzipped Kineto trace itself, as a data: URL, so that it works wherever the
notebook runs: live in JupyterLab or Colab the button hands over the trace just taken; in replay,
the recorded file, byte for byte. The static book keeps no trace inside its pages:
book/_ext/reading.py writes each one into the build (_static/traces/) and points the link
there.

The button opens ui.perfetto.dev in a new tab and hands it the trace with Perfetto's documented
postMessage protocol (perfetto.dev/docs/visualization/deep-linking-to-perfetto-ui): PING until the
tab answers PONG, then {perfetto: {buffer, title, fileName}}. The trace goes from one tab to the
other inside the reader's browser; Perfetto reads it locally.
"""
from __future__ import annotations

import base64
import html

from IPython.display import HTML

from ..core.profile import Profile

PERFETTO = "https://ui.perfetto.dev"
MIME = "application/gzip"

# defined once per page (a page may show several traces); fetch() reads the link's href, a data:
# URL or a file of the book alike. The tab is opened before anything is awaited: browsers allow
# a new tab only in the click itself. PING waits until the tab has left about:blank (same origin
# as this page): posting to it before would log an origin mismatch.
OPENER_JS = """window.apOpenInPerfetto = window.apOpenInPerfetto || async function (button) {
  const ORIGIN = "%(origin)s";
  const box = button.closest(".ap-trace");
  const link = box.querySelector("a.ap-trace-download");
  const status = box.querySelector(".ap-perfetto-status");
  const say = (text) => { if (status) status.textContent = text; };
  const tab = window.open(ORIGIN + "/#!/");
  if (!tab) { say("The browser blocked the new tab: allow pop-ups for this page, or download the trace and open it in Perfetto."); return; }
  let buffer;
  try { buffer = await (await fetch(link.href)).arrayBuffer(); }
  catch (err) { say("Could not read the trace: " + err); return; }
  let answered = false, timer = null;
  const stop = () => { clearInterval(timer); window.removeEventListener("message", onMessage); };
  const onMessage = (event) => {
    // the answer must come from the tab we opened AND from Perfetto's origin: that tab may have been
    // sent elsewhere, whose PONG would make the page say "Sent" while nothing was sent
    if (event.source !== tab || event.origin !== ORIGIN || event.data !== "PONG" || answered) return;
    answered = true;
    stop();
    tab.postMessage({perfetto: {buffer: buffer, title: link.dataset.title, fileName: link.download}}, ORIGIN);
    say("Sent to Perfetto, in the new tab.");
  };
  window.addEventListener("message", onMessage);
  const crossOrigin = () => { try { return tab.location.href === undefined; } catch (err) { return true; } };
  timer = setInterval(() => { if (tab.closed) { stop(); say("The Perfetto tab was closed."); }
                              else if (crossOrigin()) tab.postMessage("PING", ORIGIN); }, 100);
  say("Waiting for Perfetto to answer…");
  setTimeout(() => { if (!answered) { stop(); say("Perfetto did not answer: download the trace and open it there."); } }, 60000);
};""" % {"origin": PERFETTO}


def trace_bytes(prof: Profile) -> bytes:
    """The gzipped Kineto trace the profile hands (`Profile.trace_bytes`: the recorded file in
    replay, the trace just taken live)."""
    return prof.trace_bytes()


def trace_file_name(prof: Profile) -> str:
    return f"{prof.stage}__{prof.shape.key}.json.gz"


def trace_links(prof: Profile, note: str = "", name: str | None = None) -> HTML:
    """A download link to this page's trace and a button that opens it in Perfetto; `note`, HTML,
    follows them; `name` is the file name a reader downloads (default `<stage>__<shape>.json.gz`)."""
    data = trace_bytes(prof)
    name = name or trace_file_name(prof)
    p = prof.provenance
    title = f"{prof.stage} {prof.shape.key} ({p.mode}, {p.gpu}, torch {p.torch})"
    where = (f"recorded on {p.gpu} on {p.date[:10]} with torch {p.torch}" if p.mode == "replay"
             else f"taken just now on {p.gpu} with torch {p.torch}")
    href = f"data:{MIME};base64,{base64.b64encode(data).decode()}"
    e = html.escape
    return HTML(
        f"<div class='ap-trace'><p><b>The trace behind this page</b>, {e(where)}: "
        f"<a class='ap-trace-download' download=\"{e(name)}\" href=\"{href}\" data-title=\"{e(title)}\">"
        f"<code>{e(name)}</code></a> ({len(data) / 1024:.1f} KiB, a gzipped Kineto chrome trace) "
        f"<button type='button' class='ap-perfetto' onclick='apOpenInPerfetto(this)'>Open in Perfetto</button></p>"
        f"<p class='ap-perfetto-status' aria-live='polite'></p>{note}"
        f"<script>{OPENER_JS}</script></div>")
