"""Importing helpers has no side effects: pandas' options, plotly's default template and renderer
and IPython's formatters are as they were, after `import helpers` and after importing every module
of the package. helpers.use_book_style() is what installs them (each notebook's first cell)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SNAPSHOT = r"""
import json, sys
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()      # an IPython shell, so that get_ipython() finds one
import pandas as pd, plotly.io as pio

def state():
    formatters = {mime: sorted(repr(t) for t in f.type_printers) + sorted(map(str, f.deferred_printers))
                  for mime, f in shell.display_formatter.formatters.items()}
    return {"pandas": {o: repr(pd.get_option(o)) for o in
                       ("display.max_colwidth", "display.max_columns", "display.width", "display.max_rows")},
            "plotly_template": repr(pio.templates.default), "plotly_renderer": repr(pio.renderers.default),
            "formatters": formatters}

before = state()
exec(sys.argv[1])
print(json.dumps({"before": before, "after": state()}))
"""

IMPORT_EVERYTHING = """
import importlib, pkgutil, helpers
for m in pkgutil.walk_packages(helpers.__path__, "helpers."):
    importlib.import_module(m.name)
for name in helpers.MODULES:
    getattr(helpers, name)
"""


def run(code: str) -> dict:
    done = subprocess.run([sys.executable, "-c", SNAPSHOT, code], capture_output=True, text=True,
                          cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_import_helpers_changes_nothing():
    result = run("import helpers")
    assert result["after"] == result["before"]


def test_importing_every_module_changes_nothing():
    result = run(IMPORT_EVERYTHING)
    assert result["after"] == result["before"]


def test_use_book_style_installs_the_look():
    # the check above is not vacuous: the one explicit call changes each thing it watches
    result = run("import helpers; helpers.use_book_style()")
    before, after = result["before"], result["after"]
    assert after["pandas"]["display.max_colwidth"] == "None" != before["pandas"]["display.max_colwidth"]
    assert after["plotly_template"] == repr("plotly+attention_profiled") != before["plotly_template"]
    assert after["plotly_renderer"] == repr("book") != before["plotly_renderer"]
    assert any("DataFrame" in t for t in after["formatters"]["text/html"])
    assert not any("DataFrame" in t for t in before["formatters"]["text/html"])
