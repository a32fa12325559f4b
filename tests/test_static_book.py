"""book/_ext/static_book.py without a build: vendored files, asset de-duplication, launch menu,
the execution-inputs fingerprint, and the offline configuration."""
from __future__ import annotations

import hashlib
import json
import lzma
from types import SimpleNamespace

import pytest
import yaml

from conftest import ROOT, load_static_book, require

require("sphinx.errors", "Sphinx")  # the GPU machine has no Sphinx (a bare `sphinx` namespace is not enough)

static_book = load_static_book()

VENDOR = ROOT / "book" / "_vendor"
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())


def test_vendored_files_are_the_npm_files_listed_in_the_manifest():
    manifest = json.loads((VENDOR / "manifest.json").read_text())
    # no ipywidgets embed manager, no RequireJS: the book draws no widget (views/guess.py)
    assert {p["name"] for p in manifest["packages"]} == {"mathjax", "plotly.js-cartesian-dist-min"}
    stored = {str(p.relative_to(VENDOR / "files")) for p in (VENDOR / "files").rglob("*") if p.is_file()}
    assert stored == {f["stored"] for f in manifest["files"]}, "files and manifest disagree"
    for entry in manifest["files"]:
        data = (VENDOR / "files" / entry["stored"]).read_bytes()
        if entry["stored"].endswith(".xz"):
            data = lzma.decompress(data)
        assert len(data) == entry["bytes"] and hashlib.sha256(data).hexdigest() == entry["sha256"], entry["path"]
    versions = {p["name"]: p["version"] for p in manifest["packages"]}
    assert versions["mathjax"].startswith("3.")
    assert any(f["path"] == "mathjax/LICENSE" for f in manifest["files"])
    assert any(f["path"] == "plotly/LICENSE" for f in manifest["files"])


def test_the_plotly_bundle_is_the_version_plotly_py_writes_for():
    from plotly.offline import get_plotlyjs_version
    import importlib.util
    spec = importlib.util.spec_from_file_location("plotly_js", ROOT / "book" / "_ext" / "plotly_js.py")
    plotly_js = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plotly_js)
    assert plotly_js.vendored_version() == get_plotlyjs_version()
    entry = next(f for f in json.loads((VENDOR / "manifest.json").read_text())["files"]
                 if f["path"] == "plotly/plotly-cartesian.min.js")
    head = lzma.decompress((VENDOR / "files" / entry["stored"]).read_bytes())[:200].decode()
    assert f"v{get_plotlyjs_version()}" in head and "cartesian" in head


def test_the_config_loads_nothing_from_a_cdn():
    config = CONFIG["sphinx"]["config"]
    vendored = static_book._vendored_paths()
    assert config["mathjax_path"] in vendored
    # empty, not absent (absent, myst-nb loads its widget manager from a CDN): no page loads one
    assert config["nb_ipywidgets_js"] == {}
    assert config["html_context"]["default_mode"] in ("auto", "light", "dark")


def test_execution_is_forced_and_errors_fail_the_build():
    assert CONFIG["execute"]["execute_notebooks"] in ("force", "cache")
    assert CONFIG["execute"]["allow_errors"] is False
    assert CONFIG["sphinx"]["config"]["nb_execution_raise_on_error"] is True


class Asset:
    def __init__(self, filename, **attributes):
        self.filename, self.attributes = filename, attributes


def test_inline_scripts_registered_twice_appear_once():
    thebe = "const THEBE_JS_URL = 'x'"
    context = {"script_files": [Asset(None, body=thebe), Asset("a.js"), Asset("", body=thebe),
                                Asset("a.js"), Asset("b.js", defer="defer")], "css_files": []}
    static_book.dedupe_assets(None, "page", "page.html", context, None)
    assert [(a.filename or "", a.attributes.get("body")) for a in context["script_files"]] == [
        ("", thebe), ("a.js", None), ("b.js", None)]


def launch_context(suffix: str) -> dict:
    colab = {"type": "link", "text": "Colab", "url": "https://colab.research.google.com/github/o/r/blob/main/x"}
    return {"page_source_suffix": suffix,
            "header_buttons": [{"label": "download-buttons", "buttons": []},
                               {"label": "launch-buttons", "buttons": [colab]}]}


def test_notebook_pages_get_the_gpu_space_and_text_notebooks_lose_colab():
    app = SimpleNamespace(config=SimpleNamespace(attention_profiled_space_url="https://huggingface.co/spaces/a/b"))
    context = launch_context(".ipynb")
    static_book.add_space_button(app, "notebooks/x", "page.html", context, None)
    launch = context["header_buttons"][1]["buttons"]
    assert [b["text"] for b in launch] == ["Colab", "GPU Space"]
    assert launch[1]["url"] == "https://huggingface.co/spaces/a/b"
    context = launch_context(".md")
    static_book.add_space_button(app, "book/x", "page.html", context, None)
    assert [b["label"] for b in context["header_buttons"]] == ["download-buttons"]


def test_the_fingerprint_follows_every_execution_input(tmp_path):
    (tmp_path / "helpers").mkdir()
    (tmp_path / "helpers" / "tables.py").write_text("x = 1\n")
    (tmp_path / "helpers" / "__pycache__").mkdir()
    (tmp_path / "notebooks" / "traces").mkdir(parents=True)
    (tmp_path / "notebooks" / "traces" / "a.json.gz").write_bytes(b"\x1f\x8b")
    (tmp_path / "requirements.txt").write_text("torch\n")
    inputs = ["helpers", "notebooks/traces", "requirements.txt"]
    first = static_book._fingerprint(tmp_path, inputs)
    (tmp_path / "helpers" / "__pycache__" / "tables.cpython-311.pyc").write_bytes(b"noise")
    assert static_book._fingerprint(tmp_path, inputs) == first, "bytecode is not an input"
    for path, change in (("helpers/tables.py", "x = 2\n"), ("requirements.txt", "torch==2\n")):
        (tmp_path / path).write_text(change)
        changed = static_book._fingerprint(tmp_path, inputs)
        assert changed != first, f"{path} changed and the fingerprint did not"
        first = changed
    (tmp_path / "notebooks" / "traces" / "b.json.gz").write_bytes(b"\x1f\x8b")
    assert static_book._fingerprint(tmp_path, inputs) != first, "a new trace is an input"


def test_the_fingerprint_is_an_env_rebuild_config_value():
    registered = {}
    app = SimpleNamespace(add_config_value=lambda name, default, rebuild: registered.update({name: rebuild}),
                          connect=lambda *a, **k: None)
    static_book.setup(app)
    # Sphinx re-reads every document (so myst-nb re-executes every notebook) when an "env" value changes
    assert registered["attention_profiled_inputs_fingerprint"] == "env"
    assert registered["attention_profiled_execution_inputs"] == "env"


def test_a_cdn_in_the_config_is_a_warning(monkeypatch):
    warnings = []
    monkeypatch.setattr(static_book.logger, "warning", lambda msg, *a, **k: warnings.append(msg))
    app = SimpleNamespace(confdir=str(ROOT))
    config = SimpleNamespace(mathjax_path="https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-chtml.js",
                             nb_ipywidgets_js={}, html_static_path=["book/_static"])
    static_book.check_offline_config(app, config)
    assert len(warnings) == 1 and "network" in warnings[0]


def test_a_build_with_warnings_forgets_its_environment(tmp_path):
    from sphinx.application import ENV_PICKLE_FILENAME
    envfile = tmp_path / ENV_PICKLE_FILENAME
    envfile.write_bytes(b"pickle")
    ok = SimpleNamespace(keep_going=True, _warncount=0, doctreedir=str(tmp_path))
    static_book.forget_failed_build(ok, None)
    assert envfile.exists()
    failed = SimpleNamespace(keep_going=True, _warncount=3, doctreedir=str(tmp_path))
    static_book.forget_failed_build(failed, None)
    assert not envfile.exists(), "the next build would find nothing to re-read, and pass"


def test_no_page_keeps_widget_state():
    # a page whose kernel made widgets (a live progress bar) keeps no state and loads no manager
    files = {"ipywidgets_state": ("", {"body": "{}"}), "ipywidgets_0": ("x.js", {}), "other": ("y.js", {})}
    env = SimpleNamespace(docname="p", nb_metadata={"p": {"js_files": files}})
    static_book.prune_widget_state(SimpleNamespace(env=env), None)
    assert set(files) == {"other"}


def test_fontawesome_keeps_only_the_icons_named():
    # two packs in the shape fontawesome.js has them, an icon with an alias, a path array
    script = ('(()=>{var p={monero:[496,512,[],"f3d0","M352 384h1z"],github:[496,512,[],"f09b","M1 2z"]};d("fab",p)}'
              '();(()=>{var p={0:[320,512,[],"30","M0 0z"],"magnifying-glass":[512,512,[128269,"search"],"f002","M4 2z"],'
              'rocket:[512,512,[],"f135",["M1z","M2z"]],"arrow-up":[384,512,[8593],"f062","M2 1z"]};d("fas",p)})();lib()')
    out = static_book.subset_fontawesome(script, {"search", "rocket", "solid", "lg"})
    assert 'var p={};d("fab",p)' in out
    assert '"magnifying-glass":[512,512,[128269,"search"],"f002","M4 2z"]' in out
    assert 'rocket:[512,512,[],"f135",["M1z","M2z"]]' in out
    assert "arrow-up" not in out and "monero" not in out and out.endswith("lib()")
