"""The static book asks nothing of the network, runs no script twice, and never shows stale outputs.

Nine small jobs, each of which a default Jupyter Book 1.x build gets wrong here:

1. Vendored browser libraries. MathJax and plotly.js are kept in ``book/_vendor`` (the npm
   files, byte for byte; JavaScript stored as .xz) and written into ``_static/vendor/`` at build
   time, each checked against the sha256 in ``book/_vendor/manifest.json``. ``_config.yml``
   points Sphinx's ``mathjax_path`` at them; a build whose config loads any library from a URL
   fails. myst-nb's ``nb_ipywidgets_js`` is empty: no page loads the ipywidgets manager.
2. Inline scripts once. Sphinx 7.4 registers an inline script added during ``builder-inited``
   twice (once with the filename ``None``, once with ``''``), so sphinx-thebe's
   ``const THEBE_JS_URL = ...`` ran twice and threw "Identifier 'THEBE_JS_URL' has already been
   declared" on every page. Scripts and stylesheets are de-duplicated per page, and MathJax is
   dropped from pages with no math of their own.
3. A launch button for the GPU Space. Notebook pages get a "GPU Space" entry beside Colab in
   sphinx-book-theme's launch menu (``attention_profiled_space_url``). Pages whose source is not
   an .ipynb (a MyST text notebook) keep their download buttons but lose the Colab link, which
   cannot open Markdown.
4. Re-execution when what the notebooks import changes. Sphinx re-reads (and so myst-nb
   re-executes) a notebook only when the notebook file changes, so editing ``helpers/`` left
   every page showing the old helper's outputs. A fingerprint of the execution inputs
   (``attention_profiled_execution_inputs``: helpers/, the replay set, requirements.txt, and
   whether this machine has an NVIDIA device, i.e. live or replay) is an env-rebuild config
   value: when it changes Sphinx re-reads every page, so every notebook runs again. In
   ``cache`` execution mode the jupyter-cache is cleared too.
5. Every notebook executed. After reading, any page that is a notebook (an .ipynb, or Markdown
   with a kernelspec) without a successful execution record is a warning, and so, under -W, a
   failed build: a page can never silently show unexecuted cells.
6. No saved widget state. nbclient saves the state of every widget the kernel still holds (a
   live progress bar, the live shape form), and myst-nb embeds all of it in the page. The book
   draws no widget (its questions and calculator are their own outputs' JavaScript), so every
   page drops that state, and the views that would have needed it render as nothing.
7. A failed build stays failed. With ``-W --keep-going`` Sphinx saves its environment even when
   warnings failed the build, so the next build found nothing to re-read and succeeded, pages
   still broken. After a build with warnings the saved environment is deleted (as Sphinx does
   itself after an exception): the next build reads, executes and reports everything again.
8. Font Awesome, only the icons the book shows. pydata-sphinx-theme loads ``fontawesome.js``,
   every free icon as SVG (1.4 MB, 530 KB gzipped, the largest file of every first visit once the
   widget manager was gone), to draw some twenty icons (the header's buttons, the arrows). After
   the build its icon packs are cut down to the icons the built pages and the theme's scripts
   name (``fa-<name>``, aliases included); the library code around them is kept as it is, so the
   icons are drawn exactly as before. tests/test_browser.py checks that every icon is drawn.
9. The questions' script and stylesheet, once. Each guess-first question is a self-contained
   output (helpers/views/guess.py inlines ``js/guess.js`` and ``js/guess.css``, so it works in
   JupyterLab and Colab too); a chapter of six questions carried six copies. In the built pages
   each copy becomes a reference to one file under ``_static/`` (identical bytes, checked), which
   a reader's browser loads once for the whole book.
"""
from __future__ import annotations

import hashlib
import json
import lzma
import os
import re
from pathlib import Path

from sphinx.errors import ExtensionError
from sphinx.util import logging

logger = logging.getLogger(__name__)

VENDOR = Path(__file__).resolve().parent.parent / "_vendor"
VENDOR_PREFIX = "vendor/"  # under _static
FINGERPRINT_STAMP = "attention_profiled_inputs.sha256"


# --- 1. vendored libraries --------------------------------------------------------------------

def _manifest() -> dict:
    return json.loads((VENDOR / "manifest.json").read_text())


def _vendored_paths() -> set[str]:
    return {VENDOR_PREFIX + f["path"] for f in _manifest()["files"]}


def check_offline_config(app, config) -> None:
    """The libraries a page loads must be the vendored ones, never a URL."""
    vendored = _vendored_paths()
    # and the book's own static files (book/_static)
    for folder in config.html_static_path:
        root = Path(app.confdir) / folder
        vendored |= {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}
    wanted = {"mathjax_path": [config.mathjax_path],
              "nb_ipywidgets_js": list(config.nb_ipywidgets_js or {})}
    for key, paths in wanted.items():
        for path in paths:
            if "://" in path or path.startswith("//"):
                logger.warning(f"[static_book] {key} loads {path} from the network; point it at "
                               f"the vendored copy under _static/{VENDOR_PREFIX}")
            elif path not in vendored:
                logger.warning(f"[static_book] {key} names {path}, which book/_vendor does not "
                               f"provide (vendored: {', '.join(sorted(vendored))})")


def _sha256_file(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def write_vendored_files(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    static = Path(app.outdir) / "_static"
    for entry in _manifest()["files"]:
        target = static / VENDOR_PREFIX / entry["path"]
        if _sha256_file(target) == entry["sha256"]:
            continue  # already there from an earlier build
        data = (VENDOR / "files" / entry["stored"]).read_bytes()
        if entry["stored"].endswith(".xz"):
            data = lzma.decompress(data)
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            raise ExtensionError(f"book/_vendor/files/{entry['stored']} does not match the sha256 in "
                                 f"book/_vendor/manifest.json; re-run book/_vendor/fetch.py")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    licenses = static / VENDOR_PREFIX / "licenses"
    licenses.mkdir(parents=True, exist_ok=True)
    for path in sorted((VENDOR / "licenses").glob("*")):
        (licenses / path.name).write_bytes(path.read_bytes())


# --- 2. every script and stylesheet once per page ----------------------------------------------

def _asset_key(asset) -> tuple:
    attrs = getattr(asset, "attributes", {}) or {}
    return (getattr(asset, "filename", asset) or "", tuple(sorted(attrs.items())))


def dedupe_assets(app, pagename, templatename, context, doctree) -> None:
    """Each script and stylesheet once; MathJax only where the page itself has math.

    Sphinx counts a page as having equations when any page of its toctree has some, so the root
    page loaded 1.1 MB of MathJax for the glossary's one formula. The book's toctree only links
    to its children, so a page needs MathJax for its own math alone."""
    math = app.env.get_domain("math") if app is not None else None
    if math is not None and not math.data.get("has_equations", {}).get(pagename):
        scripts = context.get("script_files")
        if isinstance(scripts, list):
            scripts[:] = [a for a in scripts if not (getattr(a, "filename", "") or "").endswith(
                app.config.mathjax_path) and "window.MathJax" not in (getattr(a, "attributes", {}) or {}).get("body", "")]
    for key in ("script_files", "css_files"):
        assets = context.get(key)
        if not isinstance(assets, list):
            continue
        seen, unique = set(), []
        for asset in assets:
            k = _asset_key(asset)
            if k not in seen:
                seen.add(k)
                unique.append(asset)
        assets[:] = unique


# --- 3. the GPU Space in the launch menu ---------------------------------------------------------

def add_space_button(app, pagename, templatename, context, doctree) -> None:
    group = next((b for b in context.get("header_buttons", [])
                  if isinstance(b, dict) and b.get("label") == "launch-buttons"), None)
    if group is None:
        return
    if context.get("page_source_suffix") != ".ipynb":
        # a MyST text notebook: Colab (and the Space's JupyterLab) open .ipynb files only
        group["buttons"] = [b for b in group["buttons"] if b.get("text") != "Colab"]
    elif app.config.attention_profiled_space_url:
        group["buttons"].append({
            "type": "link",
            "text": "GPU Space",
            "tooltip": "Run the notebooks on your own Hugging Face GPU Space",
            "icon": "fas fa-microchip",
            "url": app.config.attention_profiled_space_url,
            "label": "launch-gpu-space-button",
        })
    if not group["buttons"]:
        context["header_buttons"].remove(group)


# --- 4. re-execute when the notebooks' inputs change -------------------------------------------

def _fingerprint(root: Path, inputs: list[str]) -> str:
    digest = hashlib.sha256()
    for item in inputs:
        path = root / item
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for f in files:
            if "__pycache__" in f.parts or f.suffix == ".pyc" or not f.exists():
                continue
            digest.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
    # live (an NVIDIA device is present) or replay: the same notebook shows different outputs
    devices = sorted(p for p in os.listdir("/dev") if p.startswith("nvidia")) if os.path.isdir("/dev") else []
    digest.update(("devices:" + ",".join(devices) + ";cuda:" +
                   os.environ.get("CUDA_VISIBLE_DEVICES", "<unset>")).encode())
    return digest.hexdigest()


def set_fingerprint(app, config) -> None:
    fingerprint = _fingerprint(Path(app.srcdir), list(config.attention_profiled_execution_inputs))
    config.attention_profiled_inputs_fingerprint = fingerprint
    if config.nb_execution_mode == "cache":
        cache_dir = Path(config.nb_execution_cache_path or Path(app.outdir).parent / ".jupyter_cache")
        stamp = cache_dir / FINGERPRINT_STAMP
        if cache_dir.exists() and (not stamp.exists() or stamp.read_text() != fingerprint):
            from jupyter_cache import get_cache
            logger.info("[static_book] execution inputs changed: clearing the jupyter cache")
            get_cache(str(cache_dir)).clear_cache()
        cache_dir.mkdir(parents=True, exist_ok=True)
        stamp.write_text(fingerprint)


# --- 5. every notebook executed ------------------------------------------------------------------

def check_executed(app, env) -> None:
    from myst_nb.sphinx_ import NbMetadataCollector

    for docname in sorted(env.found_docs):
        is_notebook = (Path(env.doc2path(docname)).suffix == ".ipynb"
                       or "kernelspec" in env.metadata.get(docname, {}))
        if not is_notebook:
            continue
        try:
            data = NbMetadataCollector.get_exec_data(env, docname)
        except KeyError:
            data = None
        if not data or not data.get("succeeded"):
            reason = (data or {}).get("error") or f"execution mode is {app.config.nb_execution_mode!r}"
            logger.warning(f"[static_book] {docname} was not executed ({reason}); the book shows "
                           f"every notebook with the outputs of this build", location=docname)


# --- 6. no widget state ----------------------------------------------------------------------

def prune_widget_state(app, doctree) -> None:
    """Drop the page's saved widget state: no page loads the widget manager (see above)."""
    files = getattr(app.env, "nb_metadata", {}).get(app.env.docname, {}).get("js_files", {})
    for key in [k for k in files if k.startswith("ipywidgets_")]:
        del files[key]


# --- 7. a failed build stays failed --------------------------------------------------------------

def forget_failed_build(app, exception) -> None:
    if exception is None and getattr(app, "keep_going", False) and getattr(app, "_warncount", 0):
        from sphinx.application import ENV_PICKLE_FILENAME
        envfile = Path(app.doctreedir) / ENV_PICKLE_FILENAME
        if envfile.is_file():
            envfile.unlink()
            logger.info("[static_book] the build had warnings: its saved environment is deleted, "
                        "so the next build starts afresh")


# --- 8. Font Awesome: the icons the book shows ----------------------------------------------------

FONTAWESOME = Path("_static") / "scripts" / "fontawesome.js"
ICON_NAME = re.compile(r"\bfa-([a-z0-9-]+)")
# an icon of a pack: name: [width, height, [aliases...], "unicode", path or [paths]]
ICON_ENTRY = re.compile(r'(?:"([^"]+)"|([A-Za-z_$][\w$]*)|(\d+)):\[\d+,\d+,\[([^\]]*)\],"[0-9a-f]+",')


def _object_end(text: str, start: int) -> int:
    """The index just past the object literal opening at ``start`` (strings hold no quotes here)."""
    depth, i, in_string = 0, start, False
    while True:
        ch = text[i]
        if in_string:
            in_string = ch != '"'
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1


def _entries(body: str) -> list[tuple[str, set[str], str]]:
    """The icons of a pack's object literal: (name, names it answers to, its source text)."""
    out, i = [], 1
    while i < len(body) - 1:
        m = ICON_ENTRY.match(body, i)
        if m is None:
            raise ValueError(f"unexpected Font Awesome pack at {body[i:i + 60]!r}")
        name = m.group(1) or m.group(2) or m.group(3)
        aliases = {a.strip('"') for a in m.group(4).split(",") if a.startswith('"')}
        end = _object_end(body, m.end() - len(m.group(0)) + m.group(0).index("["))
        out.append((name, {name, *aliases}, body[i:end]))
        i = end + 1  # the comma between entries
    return out


def subset_fontawesome(script: str, wanted: set[str]) -> str:
    """``script`` with each icon pack (``var p={...}``) holding only the icons named in ``wanted``."""
    out, pos = [], 0
    for m in re.finditer(r"var p=\{", script):
        start = m.end() - 1
        end = _object_end(script, start)
        kept = [text for name, names, text in _entries(script[start:end]) if names & wanted]
        out.append(script[pos:start] + "{" + ",".join(kept) + "}")
        pos = end
    if not out:
        raise ValueError("no icon pack found in fontawesome.js")
    return "".join(out) + script[pos:]


def trim_fontawesome(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    target = out / FONTAWESOME
    if not target.is_file():
        return
    # the theme's file, kept beside the output (not in it): a rebuild may find the subset in place
    original = out.parent / "fontawesome.full.js"
    if "svg-inline--fa" in target.read_text(errors="replace") and len(target.read_bytes()) > 500_000:
        original.write_bytes(target.read_bytes())  # the theme's own, freshly copied by this build
    wanted: set[str] = set()
    for page in out.rglob("*.html"):
        wanted |= set(ICON_NAME.findall(page.read_text(errors="replace")))
    for script in (out / "_static").rglob("*.js"):
        if script.name == "fontawesome.js" or "vendor" in script.parts:
            continue
        wanted |= set(ICON_NAME.findall(script.read_text(errors="replace")))
    target.write_text(subset_fontawesome(original.read_text(), wanted))


# --- 9. the questions' assets, shared ---------------------------------------------------------------

GUESS_ASSETS = Path(__file__).resolve().parents[2] / "helpers" / "views" / "js"
GUESS_STATIC = "attention_profiled_guess"  # _static/attention_profiled_guess.{js,css}


def share_guess_assets(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    script, style = (GUESS_ASSETS / "guess.js").read_text(), (GUESS_ASSETS / "guess.css").read_text()
    inline_script, inline_style = f"<script>{script}</script>", f"<style>{style}</style>"
    (out / "_static" / f"{GUESS_STATIC}.js").write_text(script)
    (out / "_static" / f"{GUESS_STATIC}.css").write_text(style)
    for page in out.rglob("*.html"):
        text = page.read_text()
        if inline_script not in text and inline_style not in text:
            continue
        static = os.path.relpath(out / "_static", page.parent).replace(os.sep, "/")
        text = (text.replace(inline_script, f'<script src="{static}/{GUESS_STATIC}.js"></script>')
                    .replace(inline_style, f'<link rel="stylesheet" href="{static}/{GUESS_STATIC}.css">'))
        page.write_text(text)


def setup(app):
    app.add_config_value("attention_profiled_space_url", "", "html")
    app.add_config_value("attention_profiled_execution_inputs",
                         ["helpers", "notebooks/traces", "requirements.txt"], "env")
    app.add_config_value("attention_profiled_inputs_fingerprint", "", "env")
    app.connect("config-inited", set_fingerprint)
    app.connect("config-inited", check_offline_config)
    app.connect("env-check-consistency", check_executed)
    app.connect("doctree-read", prune_widget_state)
    app.connect("html-page-context", add_space_button, priority=600)
    app.connect("html-page-context", dedupe_assets, priority=999)
    app.connect("build-finished", write_vendored_files)
    app.connect("build-finished", share_guess_assets)
    app.connect("build-finished", trim_fontawesome)
    app.connect("build-finished", forget_failed_build)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
