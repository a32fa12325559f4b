"""Write the first cell of every notebook from one template: the book's helpers, installed first
where the notebook runs alone.

    python tools/first_cell.py           # rewrite cell 0 of notebooks/*.ipynb where it differs
    python tools/first_cell.py --check   # exit 1 if any notebook's first cell differs

Where a notebook runs decides what the cell does:

- the book's build, a Hugging Face Space, a local JupyterLab: the repository is there and
  `requirements.txt` installed helpers/ (editable), so `helpers` imports and nothing is installed;
- Colab: its launch button opens the notebook alone, so the cell installs the package from the
  book's repository (`repository.url` and `branch` in _config.yml) with the `colab` extra of
  pyproject.toml (what Colab's image may lack, at the book's pins; Colab's own CUDA torch stays).
  The wheel carries the replay sets (setup.py), so the notebook replays without the repository.

Then `helpers.use_book_style()` installs the book's tables and charts: importing helpers changes
nothing, and the cell prints nothing. The cell is tagged `remove-cell` (left out of the published
page) and is a Colab form (folded to its title). Only cell 0 is written (its id stays; a notebook
without the setup cell gets one in front): every other byte of the notebook file is left as it was.
"""
from __future__ import annotations

import argparse
import json
import sys
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
EXTRA = "colab"   # pyproject.toml's optional dependencies for Colab
TAGS = ["remove-cell"]

TEMPLATE = """\
#@title The book's helpers (Colab installs them first) {{ display-mode: "form" }}
import importlib.util
if importlib.util.find_spec("helpers") is None:   # Colab: this notebook alone, no repository
    %pip install -q "{requirement}"
import helpers; helpers.use_book_style()   # the book's tables and charts; importing changes nothing"""


def requirement(config_path: Path = ROOT / "_config.yml", pyproject: Path = ROOT / "pyproject.toml") -> str:
    """The pip requirement of the package (pyproject.toml's name) with its Colab extra, from the
    book's repository and branch (_config.yml)."""
    repository = yaml.safe_load(config_path.read_text())["repository"]
    package = tomllib.loads(pyproject.read_text())["project"]["name"]
    return f"{package}[{EXTRA}] @ git+{repository['url']}@{repository.get('branch', 'main')}"


def source() -> str:
    """The first cell's source, every notebook the same."""
    return TEMPLATE.format(requirement=requirement())


def lines(text: str) -> list[str]:
    """A cell's source as nbformat stores it: one string a line, each but the last ending in \\n."""
    return text.splitlines(keepends=True)


def first_cell_matches(nb: dict, text: str) -> bool:
    cell = nb["cells"][0]
    return (cell["cell_type"] == "code" and "".join(cell["source"]) == text
            and cell["metadata"].get("tags") == TAGS and not cell.get("outputs")
            and cell.get("execution_count") is None)


def first_cell_span(raw: str) -> tuple[int, int]:
    """Where cell 0's JSON object lies in a notebook file's text (start, end)."""
    start = raw.index("{", raw.index('"cells"'))
    _, end = json.JSONDecoder().raw_decode(raw, start)
    return start, end


def cell_json(cell: dict, indent: str = "  ") -> str:
    """A cell as nbformat writes it, one level inside "cells": one-space steps, sorted keys."""
    text = json.dumps(cell, indent=1, sort_keys=True, ensure_ascii=False)
    return text.replace("\n", "\n" + indent)


def is_setup_cell(cell: dict) -> bool:
    """The book's first cell, whatever its source: a code cell left out of the page."""
    return cell["cell_type"] == "code" and "remove-cell" in cell["metadata"].get("tags", [])


def write_first_cell(path: Path, text: str) -> bool:
    """Make cell 0 of the notebook at `path` the template's; True if the file changed. A setup
    cell there is rewritten, else (a new notebook) one is put in front. Only that cell's text is
    written: every other byte of the file stays as it was."""
    raw = path.read_text(encoding="utf-8")
    nb = json.loads(raw)
    if first_cell_matches(nb, text):
        return False
    first = nb["cells"][0] if nb["cells"] else None
    start, end = first_cell_span(raw) if first else (None, None)
    if first and is_setup_cell(first):
        cell = {**first, "execution_count": None, "outputs": [], "source": lines(text),
                "metadata": {**first["metadata"], "tags": TAGS}}
        path.write_text(raw[:start] + cell_json(cell) + raw[end:], encoding="utf-8")
        return True
    ids = {c.get("id") for c in nb["cells"]}
    cell = {"cell_type": "code", "execution_count": None, "metadata": {"tags": TAGS}, "outputs": [],
            "source": lines(text)}
    if nb.get("nbformat_minor", 0) >= 5 or ids - {None}:
        cell["id"] = next(i for i in ("setup-outside-repo", "setup-cell", "setup-0") if i not in ids)
    if first:
        path.write_text(raw[:start] + cell_json(cell) + ",\n  " + raw[start:], encoding="utf-8")
    else:
        nb["cells"] = [cell]
        path.write_text(json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    return True


def notebooks(folder: Path = NOTEBOOKS) -> list[Path]:
    return sorted(folder.glob("*.ipynb"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only report the notebooks whose first cell differs")
    args = parser.parse_args(argv)
    text = source()
    if args.check:
        stale = [p.name for p in notebooks() if not first_cell_matches(json.loads(p.read_text()), text)]
        for name in stale:
            print(f"{name}: first cell differs from tools/first_cell.py's template")
        return 1 if stale else 0
    changed = [p.name for p in notebooks() if write_first_cell(p, text)]
    print(f"first cell written in {len(changed)} notebook(s)" + (f": {', '.join(changed)}" if changed else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
