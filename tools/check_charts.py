"""Every plotly chart of a built book, checked as Chromium draws it (issue 28).

    python tools/check_charts.py _build/html            # a table of every chart, both widths
    python tools/check_charts.py _build/html --failing  # only the charts that fail

Each page of the build is opened in headless Chromium (Debian's /usr/bin/chromium, through
Playwright) at 1400×900 and at 390×844, and every chart's drawn state is read from the page: the
plotly div's `_fullLayout` (each axis's type and its range after autorange, the annotations and
shapes), `calcdata` (every point as drawn) and the SVG (tick labels, title, legend, modebar).
The checks, written here in plain code, know nothing of the helpers that made the charts (this
file imports none of them):

- points: every trace's points lie inside the drawn axis ranges;
- extent: no axis runs more than one decade (log) or 50% (linear) past its data together with
  its reference lines, annotations and shapes;
- placed: each annotation and shape on a log axis sits within one decade of the data, and an
  annotation written beside a line (plotly.py's add_hline/add_vline with a text) sits
  where the line is drawn. On a log axis plotly reads an annotation's coordinate in log10 units
  and a shape's in data units: a value given in the wrong units lands decades away;
- categories: every category of a categorical axis has its tick label (none skipped);
- title, legend and modebar: the title and the legend lie inside the chart; at 390 px the modebar
  (the toolbar) covers no title, neither as the chart is fitted nor the moment a folded chart is
  opened, before any script of the book has fitted it (read in the same task that opens the
  folds: the toolbar a reader's tap shows then is what a style rule, not a fit, decides); no
  axis title overlaps another, the title or the legend.

tests/test_charts_drawn.py runs the same checks over the test session's build.
"""
from __future__ import annotations

import argparse
import math
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

LAPTOP, PHONE = (1400, 900), (390, 844)
SIZES = (LAPTOP, PHONE)
# Debian's headless shell of Chromium where installed (half the CPU per page), else the full browser
CHROMIUM = next((p for p in ("/usr/bin/chromium-headless-shell", "/usr/bin/chromium") if Path(p).exists()),
                "/usr/bin/chromium")
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run"]
LOG_SLACK = 1.0      # decades an axis (or a reference mark) may run past the data on a log axis
LINEAR_SLACK = 0.5   # the share of the data's span it may run past on a linear axis
EDGE_PX = 1.5        # how far a box may poke out of the chart (sub-pixel rounding)

# The drawn state of every chart on the page, read in the browser and handed to Python as JSON.
# Values stay as plotly holds them ("c" units: numbers for linear and log axes, category indices,
# ms for dates); the checks below convert them.
PROBE_JS = r"""() => {
  const rect = (el) => { if (!el) return null; const r = el.getBoundingClientRect();
    return (r.width || r.height) ? {l: r.left, t: r.top, r: r.right, b: r.bottom} : null; };
  const visible = (el) => !!el && getComputedStyle(el).display !== 'none' && getComputedStyle(el).visibility !== 'hidden';
  const plain = (s) => String(s || '').replace(/<br>/g, ' ').replace(/<[^>]+>/g, '');
  const union = (boxes) => { boxes = boxes.filter(Boolean); if (!boxes.length) return null;
    return {l: Math.min(...boxes.map((b) => b.l)), t: Math.min(...boxes.map((b) => b.t)),
            r: Math.max(...boxes.map((b) => b.r)), b: Math.max(...boxes.map((b) => b.b))}; };
  const num = (v) => (typeof v === 'number' && isFinite(v)) ? v : null;
  return [...document.querySelectorAll('.plotly-graph-div')].map((gd, index) => {
    const fl = gd._fullLayout;
    if (!fl) return {index, title: '', error: 'never drawn'};
    const gdr = gd.getBoundingClientRect();
    const axes = {};
    for (const key of Object.keys(fl)) {
      if (!/^[xy]axis\d*$/.test(key)) continue;
      const ax = fl[key];
      if (!ax || !ax._id || !ax.range) continue;
      const id = ax._id;
      const labels = [...gd.querySelectorAll('g.' + id + 'tick > text')]
        .filter((t) => visible(t) && t.textContent.trim()).map((t) => ({text: t.textContent, box: rect(t)}));
      const titleEl = gd.querySelector('.g-' + id + 'title');
      axes[id] = {
        key, type: ax.type, range: ax.range.map((r) => (ax.type === 'date' ? ax.r2l(r) : +r)),
        user_range: !!(gd.layout[key] && gd.layout[key].range), visible: ax.visible !== false,
        showticklabels: ax.showticklabels !== false, categories: (ax._categories || []).map(String),
        labels, title_box: rect(titleEl), title: plain(ax.title && ax.title.text),
      };
    }
    const traces = (gd.calcdata || []).map((cd) => {
      const t = cd[0] && cd[0].trace;
      if (!t || t.visible !== true || !t.xaxis) return null;
      const out = {type: t.type, name: plain(t.name), xaxis: t.xaxis, yaxis: t.yaxis,
                   orientation: t.orientation || 'v', x: [], y: []};
      if (t.type === 'bar' || t.type === 'histogram') {
        // a bar runs from its base (s0) to its end (s1) along its size axis, at position p
        const h = t.orientation === 'h';
        for (const d of cd) {
          const p = num(d.p), s0 = num(d.s0 !== undefined ? d.s0 : d.b), s1 = num(d.s1 !== undefined ? d.s1 : d.s);
          if (p === null || s1 === null) continue;
          for (const s of (s0 === null ? [s1] : [s0, s1])) { out.x.push(h ? s : p); out.y.push(h ? p : s); }
        }
      } else if (t.type === 'heatmap') {
        const c = cd[0];
        for (const v of (c.x || [])) if (num(v) !== null) out.x.push(v);
        for (const v of (c.y || [])) if (num(v) !== null) out.y.push(v);
        out.grid = true;
      } else {
        for (const d of cd) {
          const x = num(d.x), y = num(d.y);
          if (x === null || y === null) continue;
          out.x.push(x); out.y.push(y);
        }
      }
      return out;
    }).filter(Boolean);
    const annotations = (fl.annotations || []).filter((a) => a.visible !== false).map((a, i) => ({
      index: i, text: plain(a.text), xref: a.xref, yref: a.yref, x: a.x, y: a.y,
      // what the annotation had before plotly cleaned it: a category as its name
      given_x: (gd.layout.annotations || [])[a._index] ? gd.layout.annotations[a._index].x : a.x,
      given_y: (gd.layout.annotations || [])[a._index] ? gd.layout.annotations[a._index].y : a.y,
    }));
    const shapes = (fl.shapes || []).filter((s) => s.visible !== false).map((s) => ({
      type: s.type, xref: s.xref, yref: s.yref, x0: s.x0, x1: s.x1, y0: s.y0, y1: s.y1,
      xsizemode: s.xsizemode || 'scaled', ysizemode: s.ysizemode || 'scaled'}));
    const titleEl = gd.querySelector('.g-gtitle');
    const legend = gd.querySelector('.legend');
    const modebar = gd.querySelector('.modebar-container') || gd.querySelector('.modebar');
    const modebarShown = !!modebar && visible(modebar) && (gd._context || {}).displayModeBar !== false;
    const early = (window.__apUnfitted || [])[index] || null;
    return {
      index, id: gd.id, title: plain(fl.title && fl.title.text), width: gdr.width, height: gdr.height,
      box: rect(gd), title_box: rect(titleEl),
      // the legend's entries as drawn (its background box runs wider than they do)
      legend_box: fl.showlegend && legend ? union([...legend.querySelectorAll('.traces')].map(rect)) : null,
      modebar_box: modebarShown ? rect(modebar.querySelector('.modebar') || modebar) : null,
      unfitted: early,
      axes, traces, annotations, shapes,
    };
  });
}"""


OPEN_FOLDS_JS = r"""() => {
  document.querySelectorAll('details').forEach(d => d.open = true);
  const rect = (el) => { if (!el) return null; const r = el.getBoundingClientRect();
    return (r.width || r.height) ? {l: r.left, t: r.top, r: r.right, b: r.bottom} : null; };
  const visible = (el) => !!el && getComputedStyle(el).display !== 'none' && getComputedStyle(el).visibility !== 'hidden';
  window.__apUnfitted = [...document.querySelectorAll('.plotly-graph-div')].map((gd) => {
    const modebar = gd.querySelector('.modebar-container') || gd.querySelector('.modebar');
    const shown = !!modebar && visible(modebar) && (gd._context || {}).displayModeBar !== false;
    return {modebar_box: shown ? rect(modebar.querySelector('.modebar') || modebar) : null,
            title_box: rect(gd.querySelector('.g-gtitle'))};
  });
}"""


# --- the checks, in plain Python -----------------------------------------------------------------

def _linear(value, axis: dict):
    """A value in plotly's "c" units (as calcdata holds it) on the axis's linear scale: log10 on a
    log axis; None where the axis cannot draw it."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str):
        if axis["type"] == "category":
            return axis["categories"].index(value) if value in axis["categories"] else None
        try:
            value = float(value)
        except ValueError:
            return None
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    if axis["type"] == "log":
        return math.log10(value) if value > 0 else None
    return float(value)


def _annotation_linear(value, axis: dict):
    """Where plotly draws an annotation's coordinate: on a log axis it is already log10."""
    if axis["type"] == "log":
        try:
            return float(value)
        except (TypeError, ValueError):
            return None
    return _linear(value, axis)


def _shape_linear(value, axis: dict):
    """Where plotly draws a shape's coordinate: data units, also on a log axis."""
    return _linear(value, axis)


def _axis_id(ref: str | None) -> str | None:
    """'x', 'x2', … for a data reference ('x2', not 'x2 domain' or 'paper')."""
    return ref if ref and ref[0] in "xy" and " " not in ref else None


def _slack(lo: float, hi: float, axis: dict) -> float:
    if axis["type"] == "log":
        return LOG_SLACK
    if axis["type"] == "category":
        return 1.0  # half a category each side is plotly's own padding
    span = hi - lo
    return LINEAR_SLACK * (span if span > 0 else max(abs(hi), 1.0))


def _overlap(a: dict | None, b: dict | None, px: float = 1.0) -> bool:
    return bool(a and b and min(a["r"], b["r"]) - max(a["l"], b["l"]) > px
                and min(a["b"], b["b"]) - max(a["t"], b["t"]) > px)


def _inside(inner: dict | None, outer: dict | None) -> bool:
    return not inner or not outer or (inner["l"] >= outer["l"] - EDGE_PX and inner["r"] <= outer["r"] + EDGE_PX
                                      and inner["t"] >= outer["t"] - EDGE_PX and inner["b"] <= outer["b"] + EDGE_PX)


def _fmt(v: float, axis: dict) -> str:
    return f"1e{v:.3g}" if axis["type"] == "log" else f"{v:.4g}"


def check_chart(chart: dict, width: int) -> list[str]:
    """What is wrong with one drawn chart, in words (empty: nothing)."""
    if chart.get("error"):
        return [chart["error"]]
    problems = []
    axes = chart["axes"]
    data: dict[str, list[float]] = {a: [] for a in axes}       # the data, per axis, in linear units
    marks: dict[str, list[tuple[str, float]]] = {a: [] for a in axes}  # annotations and shapes
    for t in chart["traces"]:
        for ref, values in ((t["xaxis"], t["x"]), (t["yaxis"], t["y"])):
            axis = axes.get(ref)
            if axis is None:
                continue
            linear = [v for v in (_linear(v, axis) for v in values) if v is not None]
            data[ref] += linear
            lo, hi = sorted(axis["range"])
            if axis["user_range"] and t["type"] == "bar" and t["orientation"] == ("h" if ref[0] == "x" else "v"):
                continue  # a window chosen on purpose: bars may run past it (checked by extent)
            tol = 1e-9 * max(hi - lo, 1e-12) + (0.5 if axis["type"] == "category" else 0)
            out = [v for v in linear if v < lo - tol or v > hi + tol]
            if out:
                problems.append(f"points: {len(out)} of {t['name'] or t['type']}'s points lie outside {ref}'s "
                                f"range [{_fmt(lo, axis)}, {_fmt(hi, axis)}] (e.g. {_fmt(out[0], axis)})")
    for a in chart["annotations"]:
        for c in "xy":
            ref = _axis_id(a[c + "ref"])
            if ref in axes:
                v = _annotation_linear(a[c], axes[ref])
                if v is not None:
                    marks[ref].append((f"annotation '{a['text'][:40]}'", v))
    for s in chart["shapes"]:
        for c in "xy":
            ref = _axis_id(s[c + "ref"])
            if ref in axes and s[c + "sizemode"] != "pixel":
                for end in ("0", "1"):
                    v = _shape_linear(s[c + end], axes[ref])
                    if v is not None:
                        marks[ref].append((f"{s['type']} shape", v))
    for ref, axis in axes.items():
        if not axis["visible"] or not data[ref]:
            continue
        lo, hi = min(data[ref]), max(data[ref])
        slack = _slack(lo, hi, axis)
        # placed: on a log axis, a reference mark within a decade of the data (a value in the wrong
        # units lands decades away); on a linear axis a mark may stand apart (100%), and the
        # axis may run to it
        for what, v in dict.fromkeys(marks[ref]) if axis["type"] == "log" else ():
            if v < lo - slack or v > hi + slack:
                problems.append(f"placed: {what} sits at {ref} = {_fmt(v, axis)}, far from the data "
                                f"[{_fmt(lo, axis)}, {_fmt(hi, axis)}]" +
                                (" (on a log axis plotly reads an annotation in log10 units)"
                                 if axis["type"] == "log" and what.startswith("annotation") else ""))
        # extent: the drawn range no further past the data and its marks than the slack
        near = [v for _, v in marks[ref] if axis["type"] != "log" or lo - slack <= v <= hi + slack]
        elo, ehi = min([lo] + near), max([hi] + near)
        slack = _slack(elo, ehi, axis)
        rlo, rhi = sorted(axis["range"])
        if rhi > ehi + slack or rlo < elo - slack:
            problems.append(f"extent: {ref} runs [{_fmt(rlo, axis)}, {_fmt(rhi, axis)}] around data and marks in "
                            f"[{_fmt(elo, axis)}, {_fmt(ehi, axis)}]")
    # placed: the text of a line (add_hline/add_vline) where the line is drawn
    for a in chart["annotations"]:
        for c in "xy":
            ref = _axis_id(a[c + "ref"])
            if ref not in axes:
                continue
            for s in chart["shapes"]:
                if s["type"] != "line" or s[c + "ref"] != ref or s[c + "0"] != s[c + "1"]:
                    continue
                if s[c + "0"] != a["given_" + c]:
                    continue
                at_text = _annotation_linear(a[c], axes[ref])
                at_line = _shape_linear(s[c + "0"], axes[ref])
                if at_text is not None and at_line is not None and abs(at_text - at_line) > 1e-6 * max(1, abs(at_line)):
                    problems.append(f"placed: annotation '{a['text'][:40]}' is drawn at {ref} = "
                                    f"{_fmt(at_text, axes[ref])}, its line at {_fmt(at_line, axes[ref])}")
    # categories: every category labelled
    for ref, axis in axes.items():
        if axis["type"] != "category" or not axis["visible"] or not axis["showticklabels"]:
            continue
        lo, hi = sorted(axis["range"])
        shown = [c for i, c in enumerate(axis["categories"]) if lo <= i <= hi]
        labelled = {lab["text"] for lab in axis["labels"]}
        missing = [c for c in shown if c not in labelled and c.replace("<", "").strip() not in labelled]
        if shown and len(axis["labels"]) < len(shown):
            problems.append(f"categories: {ref} labels {len(axis['labels'])} of its {len(shown)} categories"
                            + (f" (not '{missing[0][:30]}')" if missing else ""))
    # title, legend, modebar
    box = chart["box"]
    if not _inside(chart["title_box"], box):
        problems.append(f"title: runs out of the chart ({chart['title_box']} in {box})")
    if not _inside(chart["legend_box"], box):
        problems.append(f"legend: runs out of the chart ({chart['legend_box']} in {box})")
    if width <= PHONE[0] and _overlap(chart["modebar_box"], chart["title_box"]):
        problems.append("modebar: the toolbar covers the title")
    early = chart.get("unfitted") or {}
    if width <= PHONE[0] and _overlap(early.get("modebar_box"), early.get("title_box")):
        problems.append("modebar: the toolbar covers the title when its fold is opened, before the chart is fitted")
    texts = [("title", chart["title_box"]), ("legend", chart["legend_box"])] + \
            [(f"{ref} title '{a['title'][:30]}'", a["title_box"]) for ref, a in axes.items() if a["visible"]]
    for i, (name_a, a) in enumerate(texts):
        for name_b, b in texts[i + 1:]:
            if _overlap(a, b, 2.0) and "title" in name_a + name_b and not (name_a == "title" and name_b == "legend"):
                problems.append(f"overlap: the {name_a} and the {name_b} overlap")
            elif name_a == "title" and name_b == "legend" and _overlap(a, b, 2.0):
                problems.append("overlap: the title and the legend overlap")
    return problems


# --- the pages ------------------------------------------------------------------------------------

def chart_pages(html: Path) -> list[str]:
    """Every page of the build that holds a plotly chart (by its div in the HTML)."""
    pages = []
    for path in sorted(html.rglob("*.html")):
        rel = path.relative_to(html).as_posix()
        if rel.startswith(("_static/", "_sources/", "_downloads/")):
            continue
        if "plotly-graph-div" in path.read_text(encoding="utf-8", errors="replace"):
            pages.append(rel)
    return pages


def open_page(browser, base: str, page: str, size: tuple[int, int]):
    """The page at one size, offline (nothing outside the book is fetched), every chart drawn
    and fitted to its width."""
    context = browser.new_context(viewport={"width": size[0], "height": size[1]})
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(
        (base + "/", "data:", "blob:")) else route.abort())
    p = context.new_page()
    p.goto(f"{base}/{page}", wait_until="load")
    p.wait_for_function("() => [...document.querySelectorAll('.plotly-graph-div')].every(gd => gd._fullLayout)",
                        timeout=30000)
    open_folds(p)
    return context, p


def open_folds(p) -> list[int]:
    """Open every fold (charts in folded outputs are fitted when opened), then wait for every fit;
    the indices of the folds that were closed, for close_folds."""
    closed = p.evaluate("() => [...document.querySelectorAll('details')].flatMap((d, i) => d.open ? [] : [i])")
    # in the same task that opens them (no event, observer or timer of the page runs in between)
    # each chart's toolbar and title are read as they are drawn the moment its fold opens
    p.evaluate(OPEN_FOLDS_JS)
    try:
        p.wait_for_function("() => [...document.querySelectorAll('.plotly-graph-div')].every(gd => "
                            "!gd.checkVisibility() || gd.getAttribute('data-fit-width') == String(gd.clientWidth))",
                            timeout=15000)
    except Exception:  # a chart without the book's fit script: read it as it is
        pass
    return closed


def probe_open_page(p) -> list[dict]:
    """The drawn state of every chart of a page already loaded (its charts drawn), read with every
    fold open; the folds are closed again after, so that a page shared with other checks (the
    browser tests load each page once) is left as it was."""
    closed = open_folds(p)
    try:
        return p.evaluate(PROBE_JS)
    finally:
        p.evaluate("(closed) => { const all = document.querySelectorAll('details');"
                   " closed.forEach(i => { all[i].open = false; }); }", closed)


def check_pages(browser, base: str, pages: list[str], sizes=SIZES) -> list[dict]:
    """One row per chart and size: page, width, chart index, title, problems."""
    rows = []
    for page in pages:
        for size in sizes:
            context, p = open_page(browser, base, page, size)
            try:
                charts = p.evaluate(PROBE_JS)
            finally:
                context.close()
            for chart in charts:
                rows.append({"page": page, "width": size[0], "chart": chart["index"], "title": chart["title"],
                             "problems": check_chart(chart, size[0]), "drawn": chart})
    return rows


class Server:
    """`python -m http.server` over a build, on a free local port."""

    def __init__(self, html: Path):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc = subprocess.Popen([sys.executable, "-m", "http.server", str(self.port), "--bind", "127.0.0.1",
                                      "--directory", str(html)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.base = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{self.base}/index.html", timeout=2).close()
                return
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    self.close()
                    raise RuntimeError("python -m http.server did not start")
                time.sleep(0.2)

    def close(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("html", type=Path, help="a built book's _build/html")
    parser.add_argument("--failing", action="store_true", help="list only the charts that fail")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright
    pages = chart_pages(args.html)
    server = Server(args.html)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
            rows = check_pages(browser, server.base, pages)
            browser.close()
    finally:
        server.close()
    failing = [r for r in rows if r["problems"]]
    charts = {(r["page"], r["chart"]) for r in rows}
    bad = {(r["page"], r["chart"]) for r in failing}
    print(f"{'page':<34} {'px':>4} {'#':>2}  {'title':<48} result")
    for r in rows:
        if args.failing and not r["problems"]:
            continue
        verdict = "ok" if not r["problems"] else r["problems"][0]
        print(f"{r['page'][:34]:<34} {r['width']:>4} {r['chart']:>2}  {r['title'][:48]:<48} {verdict}")
        for extra in r["problems"][1:]:
            print(f"{'':<34} {'':>4} {'':>2}  {'':<48} {extra}")
    print(f"\n{len(charts)} charts on {len(pages)} pages, {len(rows)} drawn (at {SIZES[0][0]} and {SIZES[1][0]} px): "
          f"{len(bad)} charts fail ({len(failing)} drawings)")
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
