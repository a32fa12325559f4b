"""The README's layout and API tables describe the code as it is: every module of a layer is
listed in that layer's row and every listed module exists; every public name of `helpers` is in
the API table and every helper the table names exists.

The tables are read from README.md and the code from the file tree and `helpers` itself, so
adding a module (or a public name) without saying what it holds fails here."""
import importlib
import re
from pathlib import Path

import pytest

import helpers

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
TICKS = re.compile(r"`([^`]+)`")


def table_rows(after: str) -> list[list[str]]:
    """The rows (cells split on |) of the first markdown table after the line starting `after`."""
    lines = README[README.index(after):].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start + 2:]:    # past the header and its |---| line
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def without_parentheses(text: str) -> str:
    """`modes` (`decide` → `Decision(mode, reason)`, …) -> `modes` : what a cell lists, without
    the functions it names in (possibly nested) parentheses."""
    while True:
        shorter = re.sub(r"\([^()]*\)", "", text)
        if shorter == text:
            return text
        text = shorter


def listed_modules() -> dict[str, set[str]]:
    """layer -> the modules the README's two layout tables name for it."""
    listed: dict[str, set[str]] = {}
    for layer_cell, modules_cell, _ in table_rows("| layer | modules | what it holds |"):
        layer = re.search(r"`helpers/(\w+)/`", layer_cell).group(1)
        # a name followed by its functions in parentheses: only the name is a module
        listed[layer] = {n.rstrip("/") for n in TICKS.findall(without_parentheses(modules_cell))}
    for layer_cell, module_cell, _ in table_rows("| layer | module | what it holds |"):
        listed.setdefault(layer_cell.strip("`"), set()).update(TICKS.findall(module_cell))
    return listed


def modules_in(layer: str) -> set[str]:
    folder = ROOT / "helpers" / layer
    return ({p.stem for p in folder.glob("*.py") if p.stem != "__init__"} |
            {p.name for p in folder.iterdir() if p.is_dir() and (p / "__init__.py").exists()})


LAYERS = ("core", "sources", "views", "occupancy", "chapters")


def test_the_layout_tables_name_every_layer():
    assert set(listed_modules()) == set(LAYERS)


@pytest.mark.parametrize("layer", LAYERS)
def test_every_module_of_a_layer_is_in_its_row_and_every_listed_one_exists(layer):
    listed = listed_modules()[layer]
    present = modules_in(layer)
    assert not present - listed, f"helpers/{layer}/ has modules the README does not describe: {present - listed}"
    # `js/` is a folder of JavaScript beside the Python, named in the row as such
    absent = {m for m in listed - present if not (ROOT / "helpers" / layer / m).is_dir()}
    assert not absent, f"the README lists modules helpers/{layer}/ does not have: {absent}"


NAMED = re.compile(r"`([^`]+)`(\s*\((?:[^()]|\([^()]*\))*\))?")


def api_entries() -> list[tuple[str, list[str]]]:
    """The API table's first column as (name, the names in parentheses after it) pairs:
    `tables` (`kernel_table`, `op_tree`) -> ("tables", ["kernel_table", "op_tree"])."""
    entries = []
    for cell, *_ in table_rows("| name | returns | used in |"):
        if cell.startswith("`window."):      # the JavaScript API, tested in Chromium
            continue
        for m in NAMED.finditer(cell):
            entries.append((m.group(1), TICKS.findall(m.group(2) or "")))
    return entries


def base(name: str) -> str:
    """`profile_stage(stage, shape)` -> profile_stage; `Profile.kernels()` -> Profile.kernels."""
    return re.match(r"\.?[\w.]+", name).group(0)


def test_every_public_name_of_helpers_is_in_the_api_table():
    documented = {base(name).split(".")[0] for name, _ in api_entries()}
    missing = sorted(set(helpers.__all__) - documented)
    assert not missing, f"public names the README's API table does not describe: {missing}"


def test_every_helper_the_api_table_names_exists():
    previous = None
    for name, inner in api_entries():
        path = base(name)
        # `.gpu_events()` after `Profile.kernels()`: another attribute of the same object
        owner = previous if path.startswith(".") else helpers
        target = owner
        for part in path.strip(".").split("."):
            assert hasattr(target, part), f"{name} (README's API table) does not exist"
            target = getattr(target, part)
        if not path.startswith("."):
            previous = getattr(helpers, path.split(".")[0])
        for member in inner:
            if member not in ("…", "..."):
                assert hasattr(target, base(member)), f"helpers.{path} has no {member} (README's API table)"
