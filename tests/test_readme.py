"""The README is a guide and the API page is the reference, both true to the code.

- README.md: short (what this is, the two commands, the layout, three recipes); every file, tool
  and name it points a newcomer to exists, and the recipes' facts are the registry's.
- book/api.md: every module of every layer and every public name of `helpers` is documented there
  by Sphinx's autodoc (from the docstrings), and each target it names imports; in the built book,
  the page carries each of them.

Adding a module or a public name without a line in book/api.md fails here."""
import importlib
import inspect
import re
from pathlib import Path

import pytest

import helpers

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
API = (ROOT / "book" / "api.md").read_text()
TICKS = re.compile(r"`([^`]+)`")
LAYERS = ("core", "sources", "views", "occupancy", "chapters")
# the feature slices: every other package of helpers/ (tests/test_layers.py), listed from the folder
SLICES = tuple(sorted(p.parent.name for p in (ROOT / "helpers").glob("*/__init__.py") if p.parent.name not in LAYERS))


# ------------------------------------------------------------------------------------ the guide

def section(title: str) -> str:
    start = README.index(f"\n## {title}")
    end = README.find("\n## ", start + 1)
    return README[start:end if end > 0 else None]


def test_the_readme_is_a_guide():
    lines = README.splitlines()
    assert len(lines) <= 130, f"{len(lines)} lines: a guide, the reference is book/api.md"
    assert max(map(len, lines)) <= 200, "a line a reader can read"
    for title in ("Two commands", "Layout", "Recipe: add a stage", "Recipe: add a GPU",
                  "Recipe: add a chapter"):
        assert f"\n## {title}" in README, title
    commands = re.findall(r"```bash\n(.+?)\n```", section("Two commands"), re.S)
    assert [c.split("&&")[-1].strip().split()[:2] for c in commands] == [["jupyter-book", "build"],
                                                                         ["python", "-m"]]


def named_files(text: str) -> set[str]:
    """The files a text names in backticks: a path, or a script named by its file name."""
    out = set()
    for tick in TICKS.findall(re.sub(r"```.*?```", "", text, flags=re.S)):
        if not tick.strip():
            continue
        token = tick.split()[0]
        if "<" in token or "*" in token:
            continue
        if re.search(r"\.(py|sh|yml|md|ipynb|json|csv)$", token) or (token.endswith("/") and "/" in token[:-1]):
            out.add(token)
    return out


def test_every_file_the_readme_names_exists():
    names = named_files(README)
    assert {"tools/record_all.py", "_toc.yml", "helpers/core/stages.py", "book/api.md"} <= names
    for name in names:
        candidates = [ROOT / name, ROOT / "tools" / name, ROOT / "notebooks" / "traces" / "h200" / name,
                      ROOT / "tests" / name]
        assert any(c.exists() for c in candidates), f"README names {name}, which is not in the repository"


def test_the_recipes_are_the_code():
    from helpers.core import config
    from helpers.core.replay_set import gpu_slug
    from helpers.core.stages import Stage, stages_where
    stage = section("Recipe: add a stage")
    facts = [t for t in TICKS.findall(stage) if re.fullmatch(r"[a-z_]+", t) and t not in ("lesson_claim",)]
    assert facts and all(f in Stage.__dataclass_fields__ for f in facts), facts
    assert "stages_where(has_training=True)" in stage and stages_where(has_training=True)
    gpu = section("Recipe: add a GPU")
    assert "ATTN_PROFILED_REPLAY_GPU" in gpu and "ATTN_PROFILED_REPLAY_GPU" in (ROOT / "helpers/core/config.py").read_text()
    assert "DEFAULT_GPU" in gpu and config.DEFAULT_GPU == "h200" and gpu_slug("NVIDIA H200") == config.DEFAULT_GPU
    for folder in ("ncu/", "own_model/", "experiments/", "training/", "ceilings.json"):
        assert f"`{folder}`" in gpu and (ROOT / "notebooks" / "traces" / config.DEFAULT_GPU / folder).exists()
    chapter = section("Recipe: add a chapter")
    # three files: the notebook, the toc line and the module; the module is found, not listed
    assert "_toc.yml" in chapter and "helpers/chapters/<name>.py" in chapter and "`MODULES`" not in chapter
    assert all(f"helpers.chapters.{p.stem}" in helpers.MODULES.values()
               for p in (ROOT / "helpers" / "chapters").glob("*.py") if p.stem != "__init__")
    # the front door the layout shows works as written
    code = re.search(r"```python\n(.+?)```", section("Layout"), re.S).group(1)
    for call in re.findall(r"\b(?:s|h200)\.([\w.]+)", code):
        target = helpers.Session
        for part in call.split("."):
            assert hasattr(target, part) or part in helpers.Session.__dataclass_fields__ or \
                part in ("decision", "reason"), call
            target = getattr(target, part, None) or type("T", (), {"reason": 1})


# --------------------------------------------------------------------------------- the reference

AUTO = re.compile(r"^\.\. (automodule|autoclass|autofunction|py:data):: ([\w.]+)", re.M)


AUTOMODULES = re.compile(r"^\.\. automodules:: ([\w.]+)", re.M)


def documented() -> dict[str, str]:
    """What the API page documents; `.. automodules:: pkg` (book/_ext/api_docs.py) stands for every
    module file of that package, listed here from the folder in plain code."""
    out = {name: kind for kind, name in AUTO.findall(API)}
    for package in AUTOMODULES.findall(API):
        for p in (ROOT.joinpath(*package.split("."))).glob("*.py"):
            if p.stem != "__init__":
                out[f"{package}.{p.stem}"] = "automodule"
    return out


def modules_in(layer: str) -> set[str]:
    out = set()
    for p in (ROOT / "helpers" / layer).rglob("*.py"):
        parts = list(p.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out.add(".".join(parts))
    return out


def test_the_slices_are_found():
    assert set(SLICES) >= {"counters", "smem_cliff", "training", "own_model", "breakdown"}


@pytest.mark.parametrize("layer", LAYERS + SLICES)
def test_every_module_is_on_the_api_page_and_every_listed_one_exists(layer):
    listed = {n for n, k in documented().items() if k == "automodule"
              and (n == f"helpers.{layer}" or n.startswith(f"helpers.{layer}."))}
    present = modules_in(layer)
    assert not present - listed, f"modules book/api.md does not document: {present - listed}"
    assert not listed - present, f"book/api.md documents modules that do not exist: {listed - present}"


def test_every_public_name_of_helpers_is_on_the_api_page():
    docs = documented()
    missing = []
    for name in helpers.__all__:
        if name in helpers.MODULES:     # a page namespace: its module is documented, and named
            target = helpers.MODULES[name]
            named = f"`helpers.{name}`" in API or target == f"helpers.chapters.{name}"  # a chapter's own name
            if docs.get(target) != "automodule" or not named:
                missing.append(name)
        elif f"helpers.{name}" not in docs:
            missing.append(name)
    assert not missing, f"public names book/api.md does not document: {missing}"


def test_every_target_of_the_api_page_exists():
    for name, kind in documented().items():
        if kind == "automodule":
            importlib.import_module(name)
            continue
        owner, attr = name.rsplit(".", 1)
        obj = getattr(importlib.import_module(owner), attr)
        assert kind != "autoclass" or inspect.isclass(obj), name
        assert kind != "autofunction" or callable(obj), name


def test_the_built_api_page_documents_every_name(book_build):
    page = (book_build / "html" / "book" / "api.html").read_text().replace("\u2019", "'")
    for name, kind in documented().items():
        anchor = f'id="module-{name}"' if kind == "automodule" else f'id="{name}"'
        assert anchor in page, f"{name} is not on the built API page"
    # generated from the docstrings: a docstring's first words are on the page
    first = helpers.Session.__doc__.split(".")[0].split(":")[0]
    assert first in page and "ReplaySet.configured" in page
